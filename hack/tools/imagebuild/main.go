// Command imagebuild assembles a single-layer OCI image from files on this machine and writes it as an
// OCI image layout tarball (oci-layout, index.json, blobs/) that `ctr images import` loads: no base
// image, no registry, no container engine.
//
//	imagebuild -o out.tar -name localhost/nsclaim/manager:v0.4.0 -entrypoint /manager \
//	    -user 65532:65532 -file /manager=tmp/manager [-file DEST=SRC ...] [-dir /tmp] [-env K=V ...]
//	    [-link /bin/sh=busybox ...] [-label K=V ...] [-arch arm64]
//
// -entrypoint may be left out for an image that only carries files (an operator bundle image).
// Files are written with mode 0755 (0644 with -file DEST=SRC:0644), owner 0:0 and a fixed time, so the
// same inputs give the same image digest.
package main

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

type list []string

func (l *list) String() string     { return strings.Join(*l, ",") }
func (l *list) Set(s string) error { *l = append(*l, s); return nil }

var epoch = time.Unix(0, 0).UTC()

func main() {
	var files, trees, dirs, links, labels, env, entrypoint, args list
	out := flag.String("o", "", "output OCI layout tarball")
	name := flag.String("name", "", "image reference (containerd's image name)")
	user := flag.String("user", "", "config User, e.g. 65532:65532")
	workdir := flag.String("workdir", "/", "config WorkingDir")
	arch := flag.String("arch", "amd64", "the image's architecture (linux/ARCH; the files must be built for it)")
	flag.Var(&files, "file", "DEST=SRC[:MODE] (octal mode, default 0755); repeatable")
	flag.Var(&trees, "tree", "DEST=SRCDIR: a directory tree (files 0644, directories 0755); repeatable")
	flag.Var(&dirs, "dir", "an empty directory (mode 1777 for /tmp, else 0755); repeatable")
	flag.Var(&links, "link", "DEST=TARGET: a symbolic link; repeatable")
	flag.Var(&labels, "label", "K=V: a config label; repeatable")
	flag.Var(&env, "env", "K=V; repeatable")
	flag.Var(&entrypoint, "entrypoint", "entrypoint element; repeatable")
	flag.Var(&args, "arg", "cmd element; repeatable")
	flag.Parse()
	if *out == "" || *name == "" {
		fmt.Fprintln(os.Stderr, "usage: imagebuild -o OUT -name REF [-entrypoint PATH] [-file DEST=SRC ...]")
		os.Exit(2)
	}
	for _, t := range trees {
		dest, src, ok := strings.Cut(t, "=")
		if !ok {
			fmt.Fprintf(os.Stderr, "imagebuild: -tree %q: want DEST=SRCDIR\n", t)
			os.Exit(2)
		}
		err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			rel, err := filepath.Rel(src, p)
			if err != nil {
				return err
			}
			target := path.Join(dest, filepath.ToSlash(rel))
			if d.IsDir() {
				dirs = append(dirs, target)
			} else if d.Type().IsRegular() {
				files = append(files, target+"="+p+":0644")
			}
			return nil
		})
		if err != nil {
			fmt.Fprintln(os.Stderr, "imagebuild:", err)
			os.Exit(1)
		}
	}
	img := imageSpec{arch: *arch, user: *user, workdir: *workdir, files: files, dirs: dirs, links: links, labels: labels,
		env: env, entrypoint: entrypoint, args: args}
	if err := run(*out, *name, img); err != nil {
		fmt.Fprintln(os.Stderr, "imagebuild:", err)
		os.Exit(1)
	}
}

// imageSpec is what the flags ask for.
type imageSpec struct {
	arch, user, workdir                               string
	files, dirs, links, labels, env, entrypoint, args list
}

func layerTar(files, dirs, links list) ([]byte, error) {
	type entry struct {
		dest, src, link string
		mode            int64
		dir             bool
	}
	var entries []entry
	seenDir := map[string]bool{}
	addParents := func(p string) {
		for d := path.Dir(p); d != "/" && d != "."; d = path.Dir(d) {
			if !seenDir[d] {
				seenDir[d] = true
				entries = append(entries, entry{dest: d, mode: 0o755, dir: true})
			}
		}
	}
	for _, d := range dirs {
		d = path.Clean("/" + d)
		addParents(d)
		mode := int64(0o755)
		if d == "/tmp" {
			mode = 0o1777
		}
		if !seenDir[d] {
			seenDir[d] = true
			entries = append(entries, entry{dest: d, mode: mode, dir: true})
		}
	}
	for _, f := range files {
		dest, src, ok := strings.Cut(f, "=")
		if !ok {
			return nil, fmt.Errorf("-file %q: want DEST=SRC[:MODE]", f)
		}
		mode := int64(0o755)
		if i := strings.LastIndex(src, ":"); i > 0 {
			m, err := strconv.ParseInt(src[i+1:], 8, 32)
			if err != nil {
				return nil, fmt.Errorf("-file %q: mode: %w", f, err)
			}
			src, mode = src[:i], m
		}
		dest = path.Clean("/" + dest)
		addParents(dest)
		entries = append(entries, entry{dest: dest, src: src, mode: mode})
	}
	for _, l := range links {
		dest, target, ok := strings.Cut(l, "=")
		if !ok || target == "" {
			return nil, fmt.Errorf("-link %q: want DEST=TARGET", l)
		}
		dest = path.Clean("/" + dest)
		addParents(dest)
		entries = append(entries, entry{dest: dest, link: target, mode: 0o777})
	}
	sort.SliceStable(entries, func(i, j int) bool { return entries[i].dest < entries[j].dest })
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := &tar.Header{Name: strings.TrimPrefix(e.dest, "/"), Mode: e.mode, ModTime: epoch, Format: tar.FormatPAX}
		if e.dir {
			h.Typeflag, h.Name = tar.TypeDir, h.Name+"/"
			if err := tw.WriteHeader(h); err != nil {
				return nil, err
			}
			continue
		}
		if e.link != "" {
			h.Typeflag, h.Linkname = tar.TypeSymlink, e.link
			if err := tw.WriteHeader(h); err != nil {
				return nil, err
			}
			continue
		}
		data, err := os.ReadFile(e.src)
		if err != nil {
			return nil, err
		}
		h.Typeflag, h.Size = tar.TypeReg, int64(len(data))
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func run(out, name string, spec imageSpec) error {
	data, err := layerTar(spec.files, spec.dirs, spec.links)
	if err != nil {
		return err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(data)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return err
	}
	img, err := mutate.Append(mutate.MediaType(empty.Image, types.OCIManifestSchema1),
		mutate.Addendum{Layer: layer, MediaType: types.OCILayer, History: v1.History{Created: v1.Time{Time: epoch}, CreatedBy: "nsclaim hack/tools/imagebuild"}})
	if err != nil {
		return err
	}
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	cf, err := img.ConfigFile()
	if err != nil {
		return err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture, cf.Created = "linux", spec.arch, v1.Time{Time: epoch}
	cf.Config.Entrypoint, cf.Config.Cmd, cf.Config.User, cf.Config.WorkingDir = spec.entrypoint, spec.args, spec.user, spec.workdir
	cf.Config.Env = append([]string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}, spec.env...)
	for _, l := range spec.labels {
		k, v, ok := strings.Cut(l, "=")
		if !ok || k == "" {
			return fmt.Errorf("-label %q: want K=V", l)
		}
		if cf.Config.Labels == nil {
			cf.Config.Labels = map[string]string{}
		}
		cf.Config.Labels[k] = v
	}
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		return err
	}
	return writeLayout(out, name, spec.arch, img)
}

// writeLayout writes img as an OCI image layout tarball whose index names it twice: containerd's
// io.containerd.image.name and the OCI ref.name annotation.
func writeLayout(out, name, arch string, img v1.Image) error {
	manifest, err := img.RawManifest()
	if err != nil {
		return err
	}
	digest, err := img.Digest()
	if err != nil {
		return err
	}
	config, err := img.RawConfigFile()
	if err != nil {
		return err
	}
	cfgName, err := img.ConfigName()
	if err != nil {
		return err
	}
	layers, err := img.Layers()
	if err != nil {
		return err
	}
	index := map[string]any{
		"schemaVersion": 2,
		"mediaType":     types.OCIImageIndex,
		"manifests": []map[string]any{{
			"mediaType": types.OCIManifestSchema1,
			"digest":    digest.String(),
			"size":      len(manifest),
			"platform":  map[string]string{"os": "linux", "architecture": arch},
			"annotations": map[string]string{
				"io.containerd.image.name":          name,
				"org.opencontainers.image.ref.name": name,
			},
		}},
	}
	indexJSON, err := json.Marshal(index)
	if err != nil {
		return err
	}
	f, err := os.Create(out + ".tmp")
	if err != nil {
		return err
	}
	defer f.Close()
	tw := tar.NewWriter(f)
	put := func(name string, data []byte) error {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(data)), ModTime: epoch, Typeflag: tar.TypeReg}); err != nil {
			return err
		}
		_, err := tw.Write(data)
		return err
	}
	blob := func(h v1.Hash) string { return "blobs/" + h.Algorithm + "/" + h.Hex }
	for _, d := range []string{"blobs/", "blobs/sha256/"} {
		if err := tw.WriteHeader(&tar.Header{Name: d, Mode: 0o755, ModTime: epoch, Typeflag: tar.TypeDir}); err != nil {
			return err
		}
	}
	if err := put("oci-layout", []byte(`{"imageLayoutVersion":"1.0.0"}`)); err != nil {
		return err
	}
	if err := put("index.json", indexJSON); err != nil {
		return err
	}
	if err := put(blob(digest), manifest); err != nil {
		return err
	}
	if err := put(blob(cfgName), config); err != nil {
		return err
	}
	for _, l := range layers {
		h, err := l.Digest()
		if err != nil {
			return err
		}
		rc, err := l.Compressed()
		if err != nil {
			return err
		}
		data, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			return err
		}
		if err := put(blob(h), data); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(out+".tmp", out)
}
