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

package metricsauth

import (
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"
)

func TestBearerToken(t *testing.T) {
	for _, tc := range []struct {
		header, want string
		ok           bool
	}{
		{header: "Bearer abc", want: "abc", ok: true},
		{header: "bearer abc", want: "abc", ok: true},
		{header: "BEARER  abc ", want: "abc", ok: true},
		{header: ""},
		{header: "Bearer"},
		{header: "Bearer "},
		{header: "Basic abc"},
		{header: "Bearerabc"},
		{header: "Bearer abc def"},
		{header: "Bearer abc\tdef"},
	} {
		got, ok := BearerToken(tc.header)
		if got != tc.want || ok != tc.ok {
			t.Errorf("BearerToken(%q) = %q, %v; want %q, %v", tc.header, got, ok, tc.want, tc.ok)
		}
	}
}

func TestTTLCache(t *testing.T) {
	now := time.Unix(0, 0)
	c := newTTLCache[bool](3, func() time.Time { return now })
	c.put("a", true, time.Minute)
	c.put("b", false, 30*time.Second)
	if v, ok := c.get("a"); !ok || !v {
		t.Fatalf("a = %v, %v; want true, true", v, ok)
	}
	if v, ok := c.get("b"); !ok || v {
		t.Fatalf("b = %v, %v; want false, true", v, ok)
	}
	if _, ok := c.get("missing"); ok {
		t.Fatal("a key never put was found")
	}

	now = now.Add(30 * time.Second)
	if _, ok := c.get("b"); ok {
		t.Fatal("b was found at its expiry")
	}
	if _, ok := c.get("a"); !ok {
		t.Fatal("a expired early")
	}

	// Full (a, b expired, c): the expired b goes, a and c stay.
	c.put("c", true, time.Minute)
	c.put("d", true, time.Minute)
	if len(c.entries) != 3 {
		t.Fatalf("%d entries after dropping the expired one, want 3", len(c.entries))
	}
	for _, k := range []string{"a", "c", "d"} {
		if _, ok := c.get(k); !ok {
			t.Fatalf("%s was dropped with the expired entries", k)
		}
	}
	// Full with nothing expired: everything goes, and the cache never holds more than its bound.
	for i := range 10 {
		c.put(fmt.Sprint("new", i), true, time.Minute)
		if len(c.entries) > 3 {
			t.Fatalf("%d entries, bound 3", len(c.entries))
		}
	}
	// Putting a key it holds replaces it in place.
	c.put("new9", false, time.Minute)
	if v, ok := c.get("new9"); !ok || v {
		t.Fatalf("new9 = %v, %v after replacing it; want false, true", v, ok)
	}
}

// TestTheManagerLinksNoAPIServerLibrary guards the reason this package exists: nothing the manager
// imports may bring k8s.io/apiserver (and with it CEL, gRPC and OpenTelemetry) back into its binary.
func TestTheManagerLinksNoAPIServerLibrary(t *testing.T) {
	out, err := exec.CommandContext(t.Context(), "go", "list", "-deps", "../../cmd").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps ../../cmd: %v\n%s", err, out)
	}
	for _, pkg := range strings.Fields(string(out)) {
		for _, heavy := range []string{"k8s.io/apiserver/", "github.com/google/cel-go/", "go.opentelemetry.io/", "google.golang.org/grpc"} {
			if strings.HasPrefix(pkg+"/", heavy) {
				t.Errorf("the manager links %s; see the package documentation of metricsauth", pkg)
			}
		}
	}
}
