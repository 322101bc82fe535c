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

package watchcache

import (
	"fmt"
	"maps"
	"runtime"
	"testing"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
	"github.com/nsclaim/nsclaim-operator/internal/claimpolicy"
)

func TestSharedTable(t *testing.T) {
	tab := newSharedTable[string](4)
	a := tab.share("k", fresh("v"))
	// Entries are strong: a GC does not make the next equal value a copy of its own (unique.Make's
	// would).
	runtime.GC()
	runtime.GC()
	if b := tab.share("k", fresh("v")); !sameMemory(a, b) {
		t.Fatal("an equal value after a GC is not the stored one")
	}
	if c := tab.share("other", fresh("v")); sameMemory(a, c) {
		t.Fatal("a different key returned another key's value")
	}
}

func TestSharedTableStaysBounded(t *testing.T) {
	tab := newSharedTable[string](8)
	tab.share("first", fresh("first"))
	for i := range 1000 {
		tab.share(fmt.Sprint(i), fmt.Sprint(i))
		if tab.len() > 16 {
			t.Fatalf("after %d values the table holds %d entries, more than two generations of 8", i+1, tab.len())
		}
	}
	// "first" was forgotten long ago; it comes back as the value given, not lost.
	if got := tab.share("first", "again"); got != "again" {
		t.Fatalf("a forgotten key returned %q", got)
	}

	// A value used again while in the previous generation moves to the current one and stays shared.
	tab = newSharedTable[string](4)
	kept := tab.share("kept", fresh("kept"))
	for i := range 100 {
		tab.share(fmt.Sprint(i), fmt.Sprint(i))
		if got := tab.share("kept", fresh("kept")); !sameMemory(got, kept) {
			t.Fatalf("a value in use was forgotten after %d others", i+1)
		}
	}
}

func TestLabelsKey(t *testing.T) {
	cases := []struct {
		name  string
		a, b  map[string]string
		equal bool
	}{
		{"same content, any order", map[string]string{"a": "1", "b": "2"}, map[string]string{"b": "2", "a": "1"}, true},
		{"different value", map[string]string{"a": "1"}, map[string]string{"a": "2"}, false},
		{"one more key", map[string]string{"a": "1"}, map[string]string{"a": "1", "b": ""}, false},
		{"boundary moved between key and value", map[string]string{"ab": "c"}, map[string]string{"a": "bc"}, false},
		{"separators in content", map[string]string{"a": "1:b1:2"}, map[string]string{"a": "1", "b": "2"}, false},
		{"empty value against no key", map[string]string{"a": ""}, map[string]string{}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := labelsKey(c.a) == labelsKey(c.b); got != c.equal {
				t.Fatalf("labelsKey(%v) == labelsKey(%v) is %v, want %v", c.a, c.b, got, c.equal)
			}
		})
	}
}

// mapIdentity is the address of m's table: equal for two maps only if they are one map.
func mapIdentity[K comparable, V any](m map[K]V) unsafe.Pointer {
	return *(*unsafe.Pointer)(unsafe.Pointer(&m))
}

func TestCompactForCacheSharesLabelMaps(t *testing.T) {
	transform := compactForCache()
	labels := func() map[string]string {
		return map[string]string{
			fresh(tenancyv1alpha1.ManagedByLabel): fresh(tenancyv1alpha1.ManagedByValue),
			fresh(tenancyv1alpha1.ClaimUIDLabel):  fresh("6a0c3c36-75d4-4d4e-9f55-3c1d8a3b8c11"),
		}
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "tenant", Namespace: "t1", Labels: labels()}}
	rq := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "quota", Namespace: "t1", Labels: labels()}}
	original := rq.Labels
	for _, o := range []any{sa, rq} {
		if _, err := transform(o); err != nil {
			t.Fatal(err)
		}
	}
	if !maps.Equal(sa.Labels, labels()) || !maps.Equal(rq.Labels, labels()) {
		t.Fatalf("labels changed: %v, %v", sa.Labels, rq.Labels)
	}
	if mapIdentity(sa.Labels) != mapIdentity(rq.Labels) {
		t.Error("two objects with equal labels do not share one map")
	}
	if len(original) != 2 {
		t.Errorf("the object's own label map was written: %v", original)
	}

	// Transforming an object whose labels are already shared leaves the shared map as it is.
	shared := sa.Labels
	if _, err := transform(sa); err != nil {
		t.Fatal(err)
	}
	if mapIdentity(sa.Labels) != mapIdentity(shared) || !maps.Equal(shared, labels()) {
		t.Error("transforming again changed the shared map")
	}

	// A map holding the object's own name is no one else's: it is not put in the table.
	before := sharedLabels.len()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "t-own-name", Labels: map[string]string{"kubernetes.io/metadata.name": fresh("t-own-name")}}}
	if _, err := transform(ns); err != nil {
		t.Fatal(err)
	}
	if sharedLabels.len() != before {
		t.Error("a label map holding the object's name was shared")
	}
	if !sameMemory(ns.Labels["kubernetes.io/metadata.name"], ns.Name) {
		t.Error("the name label does not share the name's memory")
	}
}

// TestCompactAnnotations: a child's annotation map (its applied digest, the same for that child of every
// claim of a class) is shared whole; a map that names a claim (a namespace's, or a child's made before
// children lost the claim-name annotation) or holds the object's name is not put in the table, and its
// digest, unique then, is not interned.
func TestCompactAnnotations(t *testing.T) {
	child := func() map[string]string {
		return map[string]string{fresh(claimpolicy.AppliedAnnotation): fresh("5f0c1e8a9b7d6c4e3a2b1c0d")}
	}
	named := func(claim string) map[string]string {
		m := child()
		m[fresh(tenancyv1alpha1.ClaimNameAnnotation)] = fresh(claim)
		return m
	}
	a, b := compactAnnotations(child(), "nsclaim-quota"), compactAnnotations(child(), "nsclaim-limits")
	if !maps.Equal(a, child()) || mapIdentity(a) != mapIdentity(b) {
		t.Errorf("equal child annotations: %v %v, shared %v", a, b, mapIdentity(a) == mapIdentity(b))
	}
	before := sharedLabels.len()
	for _, tt := range []struct {
		name string
		in   func() map[string]string
	}{
		{"a namespace's (the claim's name)", func() map[string]string { return named("pr-1") }},
		{"a child made before children lost the claim's name", func() map[string]string { return named("pr-2") }},
		{"holding the object's name", func() map[string]string {
			return map[string]string{fresh("owner"): fresh("nsclaim-quota"), fresh(claimpolicy.AppliedAnnotation): fresh("00ff")}
		}},
	} {
		in := tt.in()
		x, y := compactAnnotations(in, "nsclaim-quota"), compactAnnotations(tt.in(), "nsclaim-quota")
		if !maps.Equal(x, tt.in()) || !maps.Equal(in, tt.in()) {
			t.Errorf("%s: content changed: %v (input now %v), want %v", tt.name, x, in, tt.in())
		}
		if mapIdentity(x) == mapIdentity(y) || sameMemory(x[claimpolicy.AppliedAnnotation], y[claimpolicy.AppliedAnnotation]) {
			t.Errorf("%s: shared or digest interned", tt.name)
		}
	}
	if sharedLabels.len() != before {
		t.Errorf("maps that are no other object's were put in the table: %d -> %d", before, sharedLabels.len())
	}
}
