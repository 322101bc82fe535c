// Command registry is the local node's image registry (hack/local-node.sh starts and stops it), and
// the client that pushes the images hack/images.sh writes into it.
//
//	registry serve -addr 10.245.0.1:16500 -dir DIR [-tls-cert CRT -tls-key KEY]
//	registry push TARBALL REF
//	registry index OUT NAME IN...   (index.go: a multi-platform image from single-platform tarballs)
//
// serve runs go-containerregistry's registry (pkg/registry: the distribution API, manifests in
// memory, blobs on disk under DIR) over plain HTTP. With -tls-cert and -tls-key it also answers TLS on
// the same port: a connection whose first byte is a TLS handshake record gets TLS, any other plain
// HTTP. containerd pulls over plain HTTP (its hosts.toml says so); TLS is there for clients that have
// no plain-HTTP switch (operator-sdk v1.42.2 reads an index image's labels over HTTPS only).
//
// push reads an OCI image layout tarball (hack/tools/imagebuild's output: one image in index.json, or
// index's: one multi-platform image index) and writes that image or index to REF over plain HTTP, as
// `crane push --insecure` does.
package main

import (
	"archive/tar"
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"strings"
	"syscall"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	var err error
	switch os.Args[1] {
	case "serve":
		err = serve(os.Args[2:])
	case "push":
		err = push(os.Args[2:])
	case "index":
		err = index(os.Args[2:])
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "registry:", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: registry serve -addr HOST:PORT -dir DIR [-tls-cert CRT -tls-key KEY] | registry push TARBALL REF | registry index OUT NAME IN...")
	os.Exit(2)
}

func serve(args []string) error {
	fs := flag.NewFlagSet("serve", flag.ExitOnError)
	addr := fs.String("addr", "127.0.0.1:5000", "address to listen on")
	dir := fs.String("dir", "", "directory for blobs (required)")
	certFile := fs.String("tls-cert", "", "serving certificate: TLS on the same port as plain HTTP")
	keyFile := fs.String("tls-key", "", "key of -tls-cert")
	_ = fs.Parse(args)
	if *dir == "" || (*certFile == "") != (*keyFile == "") {
		usage()
	}
	if err := os.MkdirAll(*dir, 0o700); err != nil {
		return err
	}
	var tlsConfig *tls.Config
	if *certFile != "" {
		cert, err := tls.LoadX509KeyPair(*certFile, *keyFile)
		if err != nil {
			return err
		}
		tlsConfig = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	}
	// Uploads are buffered in memory until their blob is written to disk; collect them early.
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(64 << 20)
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	logger := log.New(os.Stderr, "", log.LstdFlags)
	srv := &http.Server{
		Handler:           registry.New(registry.WithBlobHandler(registry.NewDiskBlobHandler(*dir)), registry.Logger(logger)),
		ReadHeaderTimeout: 30 * time.Second,
		ErrorLog:          logger,
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	logger.Printf("serving on %s (plain HTTP%s), blobs in %s", ln.Addr(), map[bool]string{true: " and TLS", false: ""}[tlsConfig != nil], *dir)
	if err := srv.Serve(&sniffListener{Listener: ln, tls: tlsConfig}); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// sniffListener hands out TLS connections for clients that start with a TLS handshake record (0x16)
// and plain ones otherwise, when it has a TLS configuration.
type sniffListener struct {
	net.Listener
	tls *tls.Config
}

func (l *sniffListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil || l.tls == nil {
		return c, err
	}
	return &sniffConn{Conn: c, tls: l.tls}, nil
}

// sniffConn decides on its first Read (in the server's goroutine for the connection, so a slow
// client holds up no other) whether it speaks TLS.
type sniffConn struct {
	net.Conn
	tls     *tls.Config
	decided bool
	r       io.Reader
}

func (c *sniffConn) Read(p []byte) (int, error) {
	if !c.decided {
		c.decided = true
		br := bufio.NewReader(c.Conn)
		first, err := br.Peek(1)
		if err != nil {
			return 0, err
		}
		plain := &bufferedConn{Conn: c.Conn, r: br}
		if first[0] == 0x16 {
			c.r = tls.Server(plain, c.tls)
		} else {
			c.r = br
		}
	}
	return c.r.Read(p)
}

func (c *sniffConn) Write(p []byte) (int, error) {
	if tc, ok := c.r.(*tls.Conn); ok {
		return tc.Write(p)
	}
	return c.Conn.Write(p)
}

func (c *sniffConn) Close() error {
	if tc, ok := c.r.(*tls.Conn); ok {
		return tc.Close()
	}
	return c.Conn.Close()
}

// bufferedConn is a connection whose reads go through r (holding the peeked byte).
type bufferedConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *bufferedConn) Read(p []byte) (int, error) { return c.r.Read(p) }

func push(args []string) error {
	if len(args) != 2 {
		usage()
	}
	tarball, ref := args[0], args[1]
	dir, err := os.MkdirTemp("", "registry-push-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	if err := untar(tarball, dir); err != nil {
		return fmt.Errorf("reading %s: %w", tarball, err)
	}
	index, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		return err
	}
	manifest, err := index.IndexManifest()
	if err != nil {
		return err
	}
	if len(manifest.Manifests) != 1 {
		return fmt.Errorf("%s holds %d images, want 1", tarball, len(manifest.Manifests))
	}
	tag, err := name.ParseReference(ref, name.Insecure)
	if err != nil {
		return err
	}
	if manifest.Manifests[0].MediaType.IsIndex() {
		ii, err := index.ImageIndex(manifest.Manifests[0].Digest)
		if err != nil {
			return err
		}
		if err := remote.WriteIndex(tag, ii); err != nil {
			return fmt.Errorf("pushing %s: %w", ref, err)
		}
		fmt.Fprintf(os.Stderr, "registry: pushed %s (index %s)\n", ref, manifest.Manifests[0].Digest)
		return nil
	}
	img, err := index.Image(manifest.Manifests[0].Digest)
	if err != nil {
		return err
	}
	if err := remote.Write(tag, img); err != nil {
		return fmt.Errorf("pushing %s: %w", ref, err)
	}
	digest, err := img.Digest()
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "registry: pushed %s (%s)\n", ref, digest)
	return nil
}

// untar extracts the regular files of an OCI layout tarball into dir.
func untar(file, dir string) error {
	f, err := os.Open(file)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		target := filepath.Join(dir, filepath.FromSlash(h.Name))
		if !strings.HasPrefix(target, filepath.Clean(dir)+string(os.PathSeparator)) {
			return fmt.Errorf("entry %q leaves the layout", h.Name)
		}
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(target, 0o755); err != nil {
				return err
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
				return err
			}
			out, err := os.Create(target)
			if err != nil {
				return err
			}
			if _, err := io.Copy(out, tr); err != nil { //nolint:gosec // our own tarballs, of bounded size
				_ = out.Close()
				return err
			}
			if err := out.Close(); err != nil {
				return err
			}
		}
	}
}
