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
	"reflect"
	"testing"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
)

func limitRange(ns, cpu string) *corev1.LimitRange {
	return &corev1.LimitRange{ObjectMeta: metav1.ObjectMeta{Name: "limits", Namespace: ns}, Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{
		Type: corev1.LimitTypeContainer, Default: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)},
	}}}}
}

func sliceData[T any](s []T) unsafe.Pointer { return unsafe.Pointer(unsafe.SliceData(s)) }

// TestCompactSpecSharesClassWideSpecs: children of two claims of one class share one copy of what the
// class repeats; a different spec is not shared; content is unchanged; transforming twice is the same.
func TestCompactSpecSharesClassWideSpecs(t *testing.T) {
	transform := compactForCache()
	run := func(objs ...runtime.Object) {
		t.Helper()
		for _, o := range objs {
			if _, err := transform(o); err != nil {
				t.Fatal(err)
			}
		}
	}
	a, b, other := limitRange("t1", "500m"), limitRange("t2", "500m"), limitRange("t3", "1")
	want := []*corev1.LimitRange{a.DeepCopy(), b.DeepCopy(), other.DeepCopy()}
	run(a, b, other)
	for i, got := range []*corev1.LimitRange{a, b, other} {
		if !equality.Semantic.DeepEqual(got, want[i]) {
			t.Fatalf("limit range %d changed:\n got %+v\nwant %+v", i, got, want[i])
		}
	}
	if sliceData(a.Spec.Limits) != sliceData(b.Spec.Limits) {
		t.Error("two equal limit ranges do not share their spec")
	}
	if sliceData(a.Spec.Limits) == sliceData(other.Spec.Limits) {
		t.Error("a different limit range shares the spec of another")
	}
	shared := sliceData(a.Spec.Limits)
	run(a)
	if sliceData(a.Spec.Limits) != shared {
		t.Error("transforming again changed the shared spec")
	}

	np := func(ns string) *networkingv1.NetworkPolicy {
		return &networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: ns}, Spec: networkingv1.NetworkPolicySpec{
			Ingress: []networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{}}}}}}}
	}
	n1, n2 := np("t1"), np("t2")
	run(n1, n2)
	if sliceData(n1.Spec.Ingress) != sliceData(n2.Spec.Ingress) {
		t.Error("two equal network policies do not share their spec")
	}

	quota := func(ns string) *corev1.ResourceQuota {
		hard := corev1.ResourceList{corev1.ResourcePods: resource.MustParse("20")}
		return &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "q", Namespace: ns}, Spec: corev1.ResourceQuotaSpec{Hard: hard},
			Status: corev1.ResourceQuotaStatus{Hard: hard.DeepCopy()}}
	}
	q1, q2 := quota("t1"), quota("t2")
	run(q1, q2)
	if mapIdentity(q1.Spec.Hard) != mapIdentity(q2.Spec.Hard) || mapIdentity(q1.Status.Hard) != mapIdentity(q2.Status.Hard) {
		t.Error("two equal quotas do not share spec.hard and status.hard")
	}
	if q1.Status.Hard.Pods().String() != "20" {
		t.Errorf("status.hard changed: %v", q1.Status.Hard)
	}
}

// TestCompactRules: rules that name no object are shared; a namespace watcher's, which name its
// namespace, are not put in the table (no other object has them), only their strings are interned.
func TestCompactRules(t *testing.T) {
	release := func() []rbacv1.PolicyRule {
		return []rbacv1.PolicyRule{{APIGroups: []string{fresh("")}, Resources: []string{fresh("secrets")}, Verbs: []string{fresh("get"), fresh("list")}}}
	}
	r1, r2 := compactRules("Role.rules", release()), compactRules("Role.rules", release())
	if sliceData(r1) != sliceData(r2) || !equality.Semantic.DeepEqual(r1, release()) {
		t.Errorf("equal rules not shared, or changed: %v", r1)
	}
	watcher := func(ns string) []rbacv1.PolicyRule {
		return []rbacv1.PolicyRule{{APIGroups: []string{fresh("")}, Resources: []string{fresh("namespaces")}, ResourceNames: []string{fresh(ns)}, Verbs: []string{fresh("get")}}}
	}
	before := sharedSpecs.len()
	w1, w2 := compactRules("ClusterRole.rules", watcher("t1")), compactRules("ClusterRole.rules", watcher("t2"))
	if sharedSpecs.len() != before {
		t.Error("rules naming an object were put in the shared table")
	}
	if !equality.Semantic.DeepEqual(w1, watcher("t1")) || !equality.Semantic.DeepEqual(w2, watcher("t2")) {
		t.Errorf("watcher rules changed: %v %v", w1, w2)
	}
	if !sameMemory(w1[0].Resources[0], w2[0].Resources[0]) || !sameMemory(w1[0].Verbs[0], w2[0].Verbs[0]) {
		t.Error("watcher rules' strings not interned")
	}
}

// TestCompactClaimInternsWhatClaimsRepeat: two claims decoded apart share the strings every claim of a
// pipeline repeats after the transform, keep their messages their own, and read the same as before.
func TestCompactClaimInternsWhatClaimsRepeat(t *testing.T) {
	claim := func(name string) *tenancyv1alpha1.NamespaceClaim {
		return &tenancyv1alpha1.NamespaceClaim{
			ObjectMeta: metav1.ObjectMeta{Name: fresh(name), Namespace: fresh("ci"), Finalizers: []string{fresh(tenancyv1alpha1.ClaimFinalizer)}},
			Spec: tenancyv1alpha1.NamespaceClaimSpec{ClassName: fresh("ci"), Creator: &tenancyv1alpha1.ClaimCreator{
				Username: fresh("system:serviceaccount:ci:pipeline"), Groups: []string{fresh("system:serviceaccounts"), fresh("system:authenticated")}}},
			Status: tenancyv1alpha1.NamespaceClaimStatus{ClassName: fresh("ci"), Conditions: []metav1.Condition{{
				Type: fresh(tenancyv1alpha1.ReadyCondition), Status: metav1.ConditionStatus(fresh("True")), Reason: fresh(tenancyv1alpha1.ProvisionedReason),
				Message: fresh("Namespace " + name + " is ready")}}},
		}
	}
	a, b := claim("pr-1"), claim("pr-2")
	wantA := a.DeepCopy()
	creator := a.Spec.Creator
	transform := compactForCache()
	for _, c := range []*tenancyv1alpha1.NamespaceClaim{a, b} {
		if _, err := transform(c); err != nil {
			t.Fatal(err)
		}
	}
	if !equality.Semantic.DeepEqual(a, wantA) {
		t.Fatalf("content changed:\n got %+v\nwant %+v", a, wantA)
	}
	if creator.Username != wantA.Spec.Creator.Username || a.Spec.Creator == creator {
		t.Error("the creator was written in place instead of replaced")
	}
	ca, cb := a.Status.Conditions[0], b.Status.Conditions[0]
	for what, pair := range map[string][2]string{
		"spec.className": {a.Spec.ClassName, b.Spec.ClassName}, "status.className": {a.Status.ClassName, b.Status.ClassName},
		"creator": {a.Spec.Creator.Username, b.Spec.Creator.Username}, "group": {a.Spec.Creator.Groups[1], b.Spec.Creator.Groups[1]},
		"condition type": {ca.Type, cb.Type}, "condition reason": {ca.Reason, cb.Reason}, "condition status": {string(ca.Status), string(cb.Status)},
		"finalizer": {a.Finalizers[0], b.Finalizers[0]},
	} {
		if !sameMemory(pair[0], pair[1]) {
			t.Errorf("%s not shared", what)
		}
	}
}

// TestCompactClaimSharesEqualCreatorExtras: claims made with one credential share one creator.extra;
// another credential's is not shared with them; content is unchanged.
func TestCompactClaimSharesEqualCreatorExtras(t *testing.T) {
	claim := func(name, credential string) *tenancyv1alpha1.NamespaceClaim {
		return &tenancyv1alpha1.NamespaceClaim{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ci"},
			Spec: tenancyv1alpha1.NamespaceClaimSpec{ClassName: "ci", Creator: &tenancyv1alpha1.ClaimCreator{
				Username: "pipeline", Extra: map[string][]string{"authentication.kubernetes.io/credential-id": {credential}}}},
		}
	}
	a, b, other := claim("pr-1", "X509SHA256=aa"), claim("pr-2", "X509SHA256=aa"), claim("pr-3", "JTI=bb")
	want := []*tenancyv1alpha1.NamespaceClaim{a.DeepCopy(), b.DeepCopy(), other.DeepCopy()}
	transform := compactForCache()
	for i, c := range []*tenancyv1alpha1.NamespaceClaim{a, b, other} {
		if _, err := transform(c); err != nil {
			t.Fatal(err)
		}
		if !equality.Semantic.DeepEqual(c, want[i]) {
			t.Fatalf("claim %d changed:\n got %+v\nwant %+v", i, c, want[i])
		}
	}
	extra := func(c *tenancyv1alpha1.NamespaceClaim) unsafe.Pointer {
		return unsafe.Pointer(reflect.ValueOf(c.Spec.Creator.Extra).Pointer())
	}
	if extra(a) != extra(b) {
		t.Error("equal extras are not shared")
	}
	if extra(a) == extra(other) {
		t.Error("another credential's extra is shared with them")
	}
}
