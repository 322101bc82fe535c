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
	"strings"
	"testing"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
	"github.com/nsclaim/nsclaim-operator/internal/claimpolicy"
)

// fresh returns a copy of s in its own memory, as protobuf decoding gives each object.
func fresh(s string) string { return strings.Clone(s) }

func quotaForCache(name string) *corev1.ResourceQuota {
	hard := corev1.ResourceList{corev1.ResourcePods: resource.MustParse("20")}
	return &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{
			Name: fresh(name), Namespace: fresh("t"),
			Labels: map[string]string{
				fresh(tenancyv1alpha1.ManagedByLabel): fresh(tenancyv1alpha1.ManagedByValue),
				fresh(tenancyv1alpha1.ClaimUIDLabel):  fresh("4e92241a-b8f7-4a20-b12c-81fd1dc892b0"),
				fresh("kubernetes.io/metadata.name"):  fresh(name),
			},
			Annotations:     map[string]string{fresh(claimpolicy.AppliedAnnotation): fresh("cabcc599063ad8a03bd67bad"), fresh("other"): fresh("x")},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: fresh("v1"), Kind: fresh("Namespace"), Name: fresh("t"), UID: types.UID(fresh("u"))}},
			ManagedFields:   []metav1.ManagedFieldsEntry{{Manager: "nsclaim"}},
		},
		Spec:   corev1.ResourceQuotaSpec{Hard: hard},
		Status: corev1.ResourceQuotaStatus{Hard: hard.DeepCopy(), Used: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("3")}},
	}
}

func sameMemory(a, b string) bool { return unsafe.StringData(a) == unsafe.StringData(b) }

func TestCompactForCache(t *testing.T) {
	transform := compactForCache()
	a, b := quotaForCache("nsclaim-quota"), quotaForCache("nsclaim-quota")
	want := a.DeepCopy()
	want.ManagedFields, want.Status.Used = nil, nil
	for _, o := range []*corev1.ResourceQuota{a, b} {
		if _, err := transform(o); err != nil {
			t.Fatal(err)
		}
	}
	if !equality.Semantic.DeepEqual(a, want) {
		t.Fatalf("content changed:\n got %+v\nwant %+v", a, want)
	}
	if a.Status.Hard == nil {
		t.Error("status.hard dropped; the usable check reads it")
	}
	for k, v := range a.Labels {
		var bk string
		for k2 := range b.Labels {
			if k2 == k {
				bk = k2
			}
		}
		if !sameMemory(k, bk) {
			t.Errorf("label key %q not shared between objects", k)
		}
		if k == "kubernetes.io/metadata.name" {
			if !sameMemory(v, a.Name) {
				t.Errorf("label value equal to the name does not share the name's memory")
			}
		} else if !sameMemory(v, b.Labels[k]) {
			t.Errorf("label %q: value not shared between objects", k)
		}
	}
	// A child's annotations name no claim: the same child of every claim of a class has the same ones.
	if mapIdentity(a.Annotations) != mapIdentity(b.Annotations) || !sameMemory(a.Annotations[claimpolicy.AppliedAnnotation], b.Annotations[claimpolicy.AppliedAnnotation]) {
		t.Error("equal annotations of two children not shared")
	}
	if !sameMemory(a.OwnerReferences[0].Kind, b.OwnerReferences[0].Kind) || !sameMemory(string(a.OwnerReferences[0].UID), string(b.OwnerReferences[0].UID)) {
		t.Error("owner reference kind or UID not shared")
	}
	if !sameMemory(a.Namespace, b.Namespace) {
		t.Error("namespace not shared")
	}
	// Other kinds keep their status; objects that are not API objects pass through.
	ns := &corev1.Namespace{Status: corev1.NamespaceStatus{Phase: corev1.NamespaceTerminating}}
	if out, err := transform(ns); err != nil || out.(*corev1.Namespace).Status.Phase != corev1.NamespaceTerminating {
		t.Errorf("namespace status changed: %v %v", out, err)
	}
	if out, err := transform("not an object"); err != nil || out != "not an object" {
		t.Errorf("non-object: %v %v", out, err)
	}
}

// TestStripBinding: the binding cache keeps of a binding (nsclaim made none of them) its name, its
// managed-by and bootstrapping labels, roleRef and subjects, and nothing else.
func TestStripBinding(t *testing.T) {
	in := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "b", Namespace: "n", UID: "u1", ResourceVersion: "7", Labels: map[string]string{
			tenancyv1alpha1.ManagedByLabel: "helm", bootstrappingLabel: bootstrappingValue, "a": "b"},
			Annotations: map[string]string{"x": "y"}, ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "m"}}},
		RoleRef:  rbacv1.RoleRef{Kind: "ClusterRole", Name: "edit"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, Name: "x"}},
	}
	out, err := stripBinding(in)
	if err != nil {
		t.Fatal(err)
	}
	got := out.(*rbacv1.RoleBinding)
	want := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "b", Namespace: "n", UID: "u1", ResourceVersion: "7",
		Labels: map[string]string{tenancyv1alpha1.ManagedByLabel: "helm", bootstrappingLabel: bootstrappingValue}}, RoleRef: in.RoleRef, Subjects: in.Subjects}
	if !equality.Semantic.DeepEqual(got, want) {
		t.Fatalf("stripped:\n got %+v\nwant %+v", got, want)
	}
	foreign := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "f", Labels: map[string]string{"a": "b"}}, Subjects: in.Subjects}
	out, _ = stripBinding(foreign)
	if crb := out.(*rbacv1.ClusterRoleBinding); crb.Labels != nil || len(crb.Subjects) != 1 {
		t.Fatalf("a foreign binding: labels %v, subjects %v", crb.Labels, crb.Subjects)
	}
}

func TestOwnNamespaceBinding(t *testing.T) {
	managed := map[string]string{tenancyv1alpha1.ManagedByLabel: tenancyv1alpha1.ManagedByValue}
	sa := func(ns, name string) rbacv1.Subject {
		return rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: name}
	}
	cases := []struct {
		name     string
		labels   map[string]string
		ns       string
		subjects []rbacv1.Subject
		want     bool
	}{
		{"nsclaim's tenant binding", managed, "t1", []rbacv1.Subject{sa("t1", "tenant")}, true},
		{"with all of nsclaim's ownership labels", map[string]string{tenancyv1alpha1.ManagedByLabel: tenancyv1alpha1.ManagedByValue, tenancyv1alpha1.ClaimUIDLabel: "u", tenancyv1alpha1.ClaimNamespaceLabel: "r"}, "t1", []rbacv1.Subject{sa("t1", "tenant")}, true},
		{"managed by someone else", map[string]string{tenancyv1alpha1.ManagedByLabel: "helm"}, "t1", []rbacv1.Subject{sa("t1", "tenant")}, false},
		{"several ServiceAccounts of the namespace", managed, "t1", []rbacv1.Subject{sa("t1", "tenant"), sa("t1", "release")}, true},
		{"not made by nsclaim", map[string]string{"a": "b"}, "t1", []rbacv1.Subject{sa("t1", "tenant")}, false},
		{"no labels", nil, "t1", []rbacv1.Subject{sa("t1", "tenant")}, false},
		{"a bootstrap binding that says managed", map[string]string{tenancyv1alpha1.ManagedByLabel: tenancyv1alpha1.ManagedByValue, bootstrappingLabel: "true"}, "t1", []rbacv1.Subject{sa("t1", "tenant")}, false},
		{"a ServiceAccount of another namespace", managed, "t1", []rbacv1.Subject{sa("t1", "tenant"), sa("t2", "tenant")}, false},
		{"a user (requester mode)", managed, "t1", []rbacv1.Subject{{Kind: rbacv1.UserKind, Name: "system:serviceaccount:t1:tenant"}}, false},
		{"the namespace's group", managed, "t1", []rbacv1.Subject{{Kind: rbacv1.GroupKind, Name: "system:serviceaccounts:t1"}}, false},
		{"every ServiceAccount", managed, "t1", []rbacv1.Subject{{Kind: rbacv1.GroupKind, Name: "system:serviceaccounts"}}, false},
		{"no subjects", managed, "t1", nil, false},
		{"cluster-scoped, no namespace", managed, "", []rbacv1.Subject{sa("", "tenant")}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := ownNamespaceBinding(c.labels, c.ns, c.subjects); got != c.want {
				t.Fatalf("ownNamespaceBinding = %v, want %v", got, c.want)
			}
		})
	}
}

// TestBindingKeysLeaveOwnNamespaceBindingsOut: nsclaim's bindings of a namespace's own ServiceAccounts,
// and its namespace watchers, get no index key; every binding a lookup can return gets one per subject.
func TestBindingKeysLeaveOwnNamespaceBindingsOut(t *testing.T) {
	managed := func() map[string]string {
		return map[string]string{tenancyv1alpha1.ManagedByLabel: tenancyv1alpha1.ManagedByValue, tenancyv1alpha1.ClaimUIDLabel: "u"}
	}
	tenant := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: "t1", Name: "tenant"}}
	edit := rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "edit"}
	cases := []struct {
		name    string
		in      client.Object
		indexed bool
	}{
		{"nsclaim's tenant RoleBinding in its namespace", &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "nsclaim-tenant", Namespace: "t1", Labels: managed()}, RoleRef: edit, Subjects: tenant}, false},
		{"nsclaim's namespace watcher", &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: tenancyv1alpha1.NamespaceWatcherPrefix + "t1", Labels: managed()}, RoleRef: edit, Subjects: tenant}, false},
		{"a watcher name for another namespace", &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: tenancyv1alpha1.NamespaceWatcherPrefix + "t2", Labels: managed()}, RoleRef: edit, Subjects: tenant}, true},
		{"a managed ClusterRoleBinding of another name", &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "nsclaim-other", Labels: managed()}, RoleRef: edit, Subjects: tenant}, true},
		{"a RoleBinding in another namespace for the tenant", &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "ahead", Namespace: "team-b", Labels: managed()}, RoleRef: edit, Subjects: tenant}, true},
		{"an unlabelled RoleBinding in the namespace", &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "own", Namespace: "t1"}, RoleRef: edit, Subjects: tenant}, true},
		{"a managed RoleBinding of the namespace's group", &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "g", Namespace: "t1", Labels: managed()}, RoleRef: edit,
			Subjects: []rbacv1.Subject{{Kind: rbacv1.GroupKind, Name: "system:serviceaccounts:t1"}}}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			keys := bindingKeys(c.in)
			if got := len(keys) > 0; got != c.indexed {
				t.Fatalf("indexed = %v, want %v (keys %v)", got, c.indexed, keys)
			}
			if c.indexed && len(keys) != len(bindingSubjects(c.in)) {
				t.Fatalf("index keys %v, want one per subject of %v", keys, bindingSubjects(c.in))
			}
		})
	}
}
