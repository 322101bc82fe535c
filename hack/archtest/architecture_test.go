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

// Package archtest checks that docs/architecture.md's rooms are the code's: every package of the
// operator is in a room, and every import of one of the module's packages runs down the list.
package archtest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/nsclaim/nsclaim-operator/"

// repoRoot is the repository's root, seen from this package's directory.
var repoRoot = filepath.Join("..", "..")

// room is a package path of the rooms table (a directory, with its trailing slash) and its floor, its
// row's place in the table (0 at the top).
type room struct {
	dir   string
	floor int
}

// roomCell is a backticked directory in a row's first cell.
var roomCell = regexp.MustCompile("`([a-z0-9/._-]+/)`")

// rooms reads the table under "## The rooms" of architecture.md: each row's first cell names one or
// more directories, all on the row's floor.
func rooms(doc string) ([]room, error) {
	_, table, ok := strings.Cut(doc, "## The rooms\n")
	if !ok {
		return nil, errors.New(`no "## The rooms" section`)
	}
	table, _, _ = strings.Cut(table, "\n## ")
	var out []room
	floor := 0
	for _, line := range strings.Split(table, "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 3 || !strings.Contains(cells[1], "`") {
			continue
		}
		for _, m := range roomCell.FindAllStringSubmatch(cells[1], -1) {
			out = append(out, room{dir: m[1], floor: floor})
		}
		floor++
	}
	if len(out) == 0 {
		return nil, errors.New("the rooms table names no package")
	}
	return out, nil
}

// floorOf returns the floor of package path pkg (relative to the module): that of the room whose
// directory holds it most closely. ok is false when no room holds it.
func floorOf(rs []room, pkg string) (floor int, ok bool) {
	best := -1
	for _, r := range rs {
		if strings.HasPrefix(pkg+"/", r.dir) && len(r.dir) > best {
			best, floor, ok = len(r.dir), r.floor, true
		}
	}
	return floor, ok
}

// pkg is what go list says of one package.
type pkg struct {
	ImportPath string
	Imports    []string
}

// outsideRooms says whether a package is not the operator's (the test suites and tools of test/ and
// hack/), so the rooms need not hold it.
func outsideRooms(path string) bool {
	return strings.HasPrefix(path, "test/") || strings.HasPrefix(path, "hack/")
}

// violations lists each package of pkgs in no room, and each import of one of the module's packages
// that runs up the list (to a room on a higher floor).
func violations(rs []room, pkgs []pkg) []string {
	var out []string
	for _, p := range pkgs {
		path := strings.TrimPrefix(p.ImportPath, module)
		if outsideRooms(path) {
			continue
		}
		floor, ok := floorOf(rs, path)
		if !ok {
			out = append(out, fmt.Sprintf("package %s is in no room of docs/architecture.md", path))
			continue
		}
		for _, imp := range p.Imports {
			if !strings.HasPrefix(imp, module) {
				continue
			}
			to := strings.TrimPrefix(imp, module)
			if f, ok := floorOf(rs, to); ok && f < floor {
				out = append(out, fmt.Sprintf("%s (floor %d) imports %s (floor %d), listed above it", path, floor, to, f))
			}
		}
	}
	slices.Sort(out)
	return out
}

// goList runs `go list -json ./...` in the repository and decodes its packages.
func goList(t *testing.T) []pkg {
	t.Helper()
	cmd := exec.Command("go", "list", "-json", "./...")
	cmd.Dir = repoRoot
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	data, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -json ./...: %v\n%s", err, stderr.String())
	}
	var pkgs []pkg
	dec := json.NewDecoder(bytes.NewReader(data))
	for {
		var p pkg
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("decoding go list's output: %v", err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}

// TestImportsRunDownTheRooms: docs/architecture.md says imports only run down its list of rooms; every
// package of the operator (not test/ nor hack/) is in a room, and none imports a package of a room
// listed above its own.
func TestImportsRunDownTheRooms(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join(repoRoot, "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	rs, err := rooms(string(doc))
	if err != nil {
		t.Fatal(err)
	}
	pkgs := goList(t)
	if len(pkgs) < 10 {
		t.Fatalf("go list found %d packages; expected the whole module", len(pkgs))
	}
	for _, v := range violations(rs, pkgs) {
		t.Error(v)
	}
}

// TestViolations: the check finds an import up the list and a package in no room, and lets an import
// down the list, within one room, and to a package outside the module pass.
func TestViolations(t *testing.T) {
	doc := "# x\n\n## The rooms\n\n| package | holds |\n| --- | --- |\n" +
		"| `cmd/` | wiring |\n| `internal/a/` | a |\n| `internal/b/`, `internal/c/` | b and c |\n\n## Next\n| `internal/z/` | not a room |\n"
	rs, err := rooms(doc)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 4 {
		t.Fatalf("rooms = %v, want cmd/, internal/a/, internal/b/ and internal/c/", rs)
	}
	got := violations(rs, []pkg{
		{ImportPath: module + "cmd", Imports: []string{module + "internal/a", "fmt"}},
		{ImportPath: module + "cmd/plugin", Imports: []string{module + "internal/c"}},
		{ImportPath: module + "internal/a", Imports: []string{module + "internal/b"}},
		{ImportPath: module + "internal/b", Imports: []string{module + "internal/c", module + "internal/a"}},
		{ImportPath: module + "internal/z"},
		{ImportPath: module + "test/e2e", Imports: []string{module + "cmd"}},
	})
	want := []string{
		"internal/b (floor 2) imports internal/a (floor 1), listed above it",
		"package internal/z is in no room of docs/architecture.md",
	}
	if !slices.Equal(got, want) {
		t.Errorf("violations = %q, want %q", got, want)
	}
}
