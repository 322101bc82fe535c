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

package namespaceclaim

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// statusWriters are the only functions that write a claim's status to the API server, by name, in the
// claim package and in the package its sleep phase calls (internal/lifecycle/sleeper): patchStatus, the
// one writer that both Reconcile and the deletion branch (reconcileDelete) go through after setStatus,
// and the one documented exception, the sleeper's record of a sleep (Sleeper.Sleep), written before
// anything is scaled down so no replica count is lost.
var statusWriters = []string{"patchStatus", "Sleep"}

// statusWriterSources are the files scanned: the claim package's, its phases' packages' (access, children,
// lifetime, sleep, ...), its pure status derivation's (internal/claimstatus) and the sleeper's.
var statusWriterSources = []string{"*.go", filepath.Join("*", "*.go"), filepath.Join("..", "..", "claimstatus", "*.go"), filepath.Join("..", "..", "lifecycle", "sleeper", "*.go")}

// The list of status writers is closed: a status write anywhere else in the package fails this test,
// and so does the loss of the one writer (the scan would then be looking at nothing).
func TestStatusIsWrittenOnlyByTheListedWriters(t *testing.T) {
	var files []string
	for _, pattern := range statusWriterSources {
		matched, err := filepath.Glob(pattern)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, matched...)
	}
	found := map[string]bool{}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(fset, name, src, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				if writesStatus(n) {
					found[fn.Name.Name] = true
					if !slices.Contains(statusWriters, fn.Name.Name) {
						t.Errorf("%s: %s writes a claim's status; only %v may (add it to the list only with a reason in its doc)",
							fset.Position(n.Pos()), fn.Name.Name, statusWriters)
					}
				}
				return true
			})
		}
	}
	for _, writer := range statusWriters {
		if !found[writer] {
			t.Errorf("%s writes no status: the list of writers names a function that is gone (the scan found %v)", writer, found)
		}
	}
}

// writesStatus reports a call X.Status().Patch(...) or X.Status().Update(...).
func writesStatus(n ast.Node) bool {
	call, ok := n.(*ast.CallExpr)
	if !ok {
		return false
	}
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok || (sel.Sel.Name != "Patch" && sel.Sel.Name != "Update") {
		return false
	}
	inner, ok := sel.X.(*ast.CallExpr)
	if !ok {
		return false
	}
	status, ok := inner.Fun.(*ast.SelectorExpr)
	return ok && status.Sel.Name == "Status"
}
