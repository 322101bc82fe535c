package main

import (
	"archive/tar"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// index writes OUT, an OCI image layout tarball whose index.json names one multi-platform image index
// NAME (containerd's io.containerd.image.name and org.opencontainers.image.ref.name), made of the
// single images of the layout tarballs IN (hack/tools/imagebuild's output, one per architecture; the
// platform of each is read from its config).
//
//	registry index OUT NAME IN...
func index(args []string) error {
	if len(args) < 3 {
		usage()
	}
	out, ref, ins := args[0], args[1], args[2:]
	var idx v1.ImageIndex = mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, in := range ins {
		img, err := singleImage(in)
		if err != nil {
			return err
		}
		cf, err := img.ConfigFile()
		if err != nil {
			return err
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{
			Platform: &v1.Platform{OS: cf.OS, Architecture: cf.Architecture},
		}})
	}
	dir, err := os.MkdirTemp("", "registry-index-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	p, err := layout.Write(dir, mutate.IndexMediaType(empty.Index, types.OCIImageIndex))
	if err != nil {
		return err
	}
	if err := p.AppendIndex(idx, layout.WithAnnotations(map[string]string{
		"io.containerd.image.name":          ref,
		"org.opencontainers.image.ref.name": ref,
	})); err != nil {
		return err
	}
	if err := tarDir(dir, out+".tmp"); err != nil {
		return err
	}
	d, err := idx.Digest()
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "registry: %s holds %s (%s, %d platforms)\n", out, ref, d, len(ins))
	return os.Rename(out+".tmp", out)
}

// singleImage reads the one image of an OCI image layout tarball.
func singleImage(tarball string) (v1.Image, error) {
	dir, err := os.MkdirTemp("", "registry-image-")
	if err != nil {
		return nil, err
	}
	// The layout's blobs are read lazily; they stay until the process exits (a temporary directory).
	if err := untar(tarball, dir); err != nil {
		return nil, fmt.Errorf("reading %s: %w", tarball, err)
	}
	ii, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		return nil, err
	}
	m, err := ii.IndexManifest()
	if err != nil {
		return nil, err
	}
	if len(m.Manifests) != 1 || !m.Manifests[0].MediaType.IsImage() {
		return nil, fmt.Errorf("%s must hold exactly one image", tarball)
	}
	return ii.Image(m.Manifests[0].Digest)
}

// tarDir writes the regular files and directories under dir as a tarball, sorted, with a fixed time,
// so the same images give the same bytes.
func tarDir(dir, out string) error {
	var names []string
	if err := filepath.WalkDir(dir, func(p string, _ fs.DirEntry, err error) error {
		if err == nil && p != dir {
			names = append(names, p)
		}
		return err
	}); err != nil {
		return err
	}
	sort.Strings(names)
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }()
	tw := tar.NewWriter(f)
	for _, p := range names {
		fi, err := os.Stat(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		h := &tar.Header{Name: filepath.ToSlash(rel), Mode: 0o644, ModTime: time.Unix(0, 0), Typeflag: tar.TypeReg, Size: fi.Size()}
		if fi.IsDir() {
			h.Name, h.Mode, h.Typeflag, h.Size = h.Name+"/", 0o755, tar.TypeDir, 0
		}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if fi.IsDir() {
			continue
		}
		src, err := os.Open(p)
		if err != nil {
			return err
		}
		_, err = io.Copy(tw, src)
		_ = src.Close()
		if err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return f.Close()
}
