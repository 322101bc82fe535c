/*
Copyright 2026 The nsclaim Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package node

import (
	"archive/tar"
	"bufio"
	"compress/gzip"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

// ociTarball reads an OCI image layout tarball (hack/images.sh) into a map of file name -> content.
func ociTarball(t *testing.T, path string) map[string][]byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	files := map[string][]byte{}
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return files
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			b, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			files[h.Name] = b
		}
	}
}

type descriptor struct {
	MediaType string `json:"mediaType"`
	Digest    string `json:"digest"`
}

func blob(files map[string][]byte, d descriptor) []byte {
	return files["blobs/"+strings.Replace(d.Digest, ":", "/", 1)]
}

// dockerfileDirectives returns the last ENTRYPOINT (exec form) and USER of the Dockerfile.
func dockerfileDirectives(t *testing.T, path string) (entrypoint []string, user string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case strings.HasPrefix(line, "ENTRYPOINT "):
			entrypoint = nil
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "ENTRYPOINT ")), &entrypoint); err != nil {
				t.Fatalf("ENTRYPOINT is not in exec form: %s", line)
			}
		case strings.HasPrefix(line, "USER "):
			user = strings.TrimSpace(strings.TrimPrefix(line, "USER "))
		}
	}
	return entrypoint, user
}

// TestManagerImageMatchesDockerfile: the manager image hack/images.sh assembles (NODE_MANAGER_IMAGE_TAR)
// has the Dockerfile's ENTRYPOINT and USER and nothing in it but the manager binary.
func TestManagerImageMatchesDockerfile(t *testing.T) {
	tarball := os.Getenv("NODE_MANAGER_IMAGE_TAR")
	if tarball == "" {
		if os.Getenv("NSCLAIM_REQUIRE_NODE") == "1" {
			t.Fatal("NODE_MANAGER_IMAGE_TAR is not set (NSCLAIM_REQUIRE_NODE=1)")
		}
		t.Skip("NODE_MANAGER_IMAGE_TAR is not set: hack/images.sh DIR manager builds it")
	}
	g := NewWithT(t)
	_, self, _, _ := runtime.Caller(0)
	entrypoint, user := dockerfileDirectives(t, filepath.Join(filepath.Dir(self), "..", "..", "Dockerfile"))
	g.Expect(entrypoint).To(Equal([]string{"/manager"}))
	g.Expect(user).To(Equal("65532:65532"))

	files := ociTarball(t, tarball)
	var index struct{ Manifests []descriptor }
	g.Expect(json.Unmarshal(files["index.json"], &index)).To(Succeed())
	g.Expect(index.Manifests).To(HaveLen(1))
	var manifest struct {
		Config descriptor
		Layers []descriptor
	}
	g.Expect(json.Unmarshal(blob(files, index.Manifests[0]), &manifest)).To(Succeed())
	var config struct {
		OS, Architecture string
		Config           struct {
			Entrypoint, Cmd []string
			User            string
		}
	}
	g.Expect(json.Unmarshal(blob(files, manifest.Config), &config)).To(Succeed())
	g.Expect(config.Config.Entrypoint).To(Equal(entrypoint), "ENTRYPOINT as in the Dockerfile")
	g.Expect(config.Config.Cmd).To(BeEmpty())
	g.Expect(config.Config.User).To(Equal(user), "USER as in the Dockerfile")
	g.Expect(config.OS + "/" + config.Architecture).To(Equal("linux/amd64"))

	var names []string
	for _, l := range manifest.Layers {
		zr, err := gzip.NewReader(strings.NewReader(string(blob(files, l))))
		g.Expect(err).NotTo(HaveOccurred())
		tr := tar.NewReader(zr)
		for {
			h, err := tr.Next()
			if err == io.EOF {
				break
			}
			g.Expect(err).NotTo(HaveOccurred())
			names = append(names, h.Name)
			if h.Name == "manager" {
				g.Expect(h.Mode & 0o111).NotTo(BeZero())
				head := make([]byte, 4)
				_, err := io.ReadFull(tr, head)
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(string(head)).To(Equal("\x7fELF"))
			}
		}
	}
	g.Expect(names).To(Equal([]string{"manager"}), "nothing in the image but the manager binary")
}
