// Command untar unpacks a gzip-compressed tarball, as `tar xvzf FILE -C DIR` does: operator-sdk
// scorecard's init container runs its untar image with those arguments ("tar" first), and this
// project has no busybox image. Regular files and directories only; names may not leave DIR.
package main

import (
	"archive/tar"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

func main() {
	var file, dir string
	args := os.Args[1:]
	for i := 0; i < len(args); i++ {
		switch {
		case args[i] == "-C" && i+1 < len(args):
			dir = args[i+1]
			i++
		case strings.HasSuffix(args[i], ".tar.gz") || strings.HasSuffix(args[i], ".tgz"):
			file = args[i]
		}
	}
	if file == "" || dir == "" {
		fmt.Fprintln(os.Stderr, "usage: untar [tar xvzf] FILE.tar.gz -C DIR")
		os.Exit(2)
	}
	if err := untar(file, dir); err != nil {
		fmt.Fprintln(os.Stderr, "untar:", err)
		os.Exit(1)
	}
}

func untar(file, dir string) error {
	f, err := os.Open(file)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return err
	}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		dest := filepath.Join(dir, filepath.Clean("/"+h.Name))
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(dest, 0o755); err != nil {
				return err
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(dest), 0o755); err != nil {
				return err
			}
			out, err := os.OpenFile(dest, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
			if err != nil {
				return err
			}
			if _, err := io.Copy(out, tr); err != nil { //nolint:gosec // a bundle of a few MB
				_ = out.Close()
				return err
			}
			if err := out.Close(); err != nil {
				return err
			}
		default:
			continue
		}
		fmt.Println(h.Name)
	}
}
