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

package childapply

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
	"github.com/nsclaim/nsclaim-operator/internal/claimpolicy"
)

// TestRBACUpToDate: an RBAC child that grants exactly what it should, lacking only its digest (made by
// another client) or carrying another one (an upgrade), is not applied; any difference in what it
// grants, or in the labels and owners nsclaim sets, still is; other kinds are never spared.
func TestRBACUpToDate(t *testing.T) {
	owner := metav1.OwnerReference{APIVersion: "v1", Kind: "Namespace", Name: "t1", UID: "ns-uid"}
	labels := map[string]string{tenancyv1alpha1.ManagedByLabel: tenancyv1alpha1.ManagedByValue}
	crGVK := rbacv1.SchemeGroupVersion.WithKind("ClusterRole")
	crbGVK := rbacv1.SchemeGroupVersion.WithKind("ClusterRoleBinding")
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "nsclaim-namespace-t1", Labels: labels, OwnerReferences: []metav1.OwnerReference{owner}},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"namespaces"}, ResourceNames: []string{"t1"}, Verbs: []string{"get", "list", "watch"}}},
	}
	claimRole := role.DeepCopy()
	claimRole.Labels = map[string]string{tenancyv1alpha1.ManagedByLabel: tenancyv1alpha1.ManagedByValue, tenancyv1alpha1.ClaimUIDLabel: "u", tenancyv1alpha1.ClaimNamespaceLabel: "req"}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "nsclaim-namespace-t1", Labels: labels, OwnerReferences: []metav1.OwnerReference{owner}},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "nsclaim-namespace-t1"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "nsclaim-tenant", Namespace: "t1"}},
	}
	release := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: claimpolicy.ReleaseRoleName, Namespace: "t1", Labels: labels},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: claimpolicy.ReleaseClusterRoleName},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "nsclaim-tenant", Namespace: "t1"}},
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "nsclaim-tenant", Namespace: "t1", Labels: labels}, AutomountServiceAccountToken: ptr.To(false)}
	noDigest := func(o client.Object) { delete(o.GetAnnotations(), claimpolicy.AppliedAnnotation) }
	staleDigest := func(o client.Object) { o.GetAnnotations()[claimpolicy.AppliedAnnotation] = "000000000000000000000000" }

	// rbacGrantsEqual's answers where they differ from rbacUpToDate's: metadata apart, the same grants.
	sameGrants := map[string]bool{"pooled watcher without the claim's labels": true, "our label missing": true, "our owner missing": true}
	for name, tc := range map[string]struct {
		want    client.Object
		gvk     schema.GroupVersionKind
		current map[string]any
		spared  bool
	}{
		// A pooled namespace's watcher ClusterRole: the managed-by label only; the claim's labels go on
		// with an apply, which grants nothing new.
		"pooled watcher without the claim's labels": {claimRole, crGVK, observed(t, claimRole, crGVK, func(o client.Object) {
			noDigest(o)
			o.SetLabels(map[string]string{tenancyv1alpha1.ManagedByLabel: tenancyv1alpha1.ManagedByValue})
		}), false},
		"missing":                             {role, crGVK, nil, false},
		"role without a digest":               {role, crGVK, observed(t, role, crGVK, noDigest), true},
		"role with another digest":            {role, crGVK, observed(t, role, crGVK, staleDigest), true},
		"binding without a digest":            {binding, crbGVK, observed(t, binding, crbGVK, noDigest), true},
		"release binding with another digest": {release, rbGVK, observed(t, release, rbGVK, staleDigest), true},
		"someone else's label added too": {role, crGVK, observed(t, role, crGVK, func(o client.Object) {
			noDigest(o)
			o.GetLabels()["team"] = "x"
		}), true},
		"a rule more": {role, crGVK, observed(t, role, crGVK, func(o client.Object) {
			noDigest(o)
			r := o.(*rbacv1.ClusterRole)
			r.Rules = append(r.Rules, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get"}})
		}), false},
		// A field of a rule nsclaim no longer sets: covered, but not equal, so it goes with the apply.
		"a rule with a field more": {role, crGVK, observed(t, role, crGVK, func(o client.Object) {
			noDigest(o)
			o.(*rbacv1.ClusterRole).Rules[0].NonResourceURLs = []string{"/x"}
		}), false},
		"an aggregation rule": {role, crGVK, observed(t, role, crGVK, func(o client.Object) {
			noDigest(o)
			o.(*rbacv1.ClusterRole).AggregationRule = &rbacv1.AggregationRule{}
		}), false},
		"a subject more": {binding, crbGVK, observed(t, binding, crbGVK, func(o client.Object) {
			noDigest(o)
			b := o.(*rbacv1.ClusterRoleBinding)
			b.Subjects = append(b.Subjects, rbacv1.Subject{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: "system:authenticated"})
		}), false},
		"no subject": {binding, crbGVK, observed(t, binding, crbGVK, func(o client.Object) {
			noDigest(o)
			o.(*rbacv1.ClusterRoleBinding).Subjects = nil
		}), false},
		"our label missing": {binding, crbGVK, observed(t, binding, crbGVK, func(o client.Object) {
			noDigest(o)
			o.SetLabels(nil)
		}), false},
		"our owner missing": {role, crGVK, observed(t, role, crGVK, func(o client.Object) {
			noDigest(o)
			o.SetOwnerReferences(nil)
		}), false},
		"a ServiceAccount without a digest": {sa, saGVK, observed(t, sa, saGVK, noDigest), false},
	} {
		t.Run(name, func(t *testing.T) {
			desired := mustApplyConfiguration(t, tc.want, tc.gvk)
			if got := rbacUpToDate(tc.gvk.Kind, desired, tc.current); got != tc.spared {
				t.Errorf("rbacUpToDate = %v, want %v", got, tc.spared)
			}
			same, ok := sameGrants[name]
			if !ok {
				same = tc.spared
			}
			if got := rbacGrantsEqual(tc.gvk.Kind, desired, tc.current); got != same {
				t.Errorf("rbacGrantsEqual = %v, want %v", got, same)
			}
		})
	}
}

func TestClaimMarksOnly(t *testing.T) {
	saGVK := corev1.SchemeGroupVersion.WithKind("ServiceAccount")
	marks := map[string]string{tenancyv1alpha1.ManagedByLabel: tenancyv1alpha1.ManagedByValue,
		tenancyv1alpha1.ClaimUIDLabel: "u", tenancyv1alpha1.ClaimNamespaceLabel: "req"}
	want := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "nsclaim-tenant", Namespace: "t1", Labels: marks}, AutomountServiceAccountToken: ptr.To(false)}
	pooled := func(o client.Object) {
		delete(o.GetAnnotations(), claimpolicy.AppliedAnnotation)
		o.SetLabels(map[string]string{tenancyv1alpha1.ManagedByLabel: tenancyv1alpha1.ManagedByValue})
	}
	for name, tc := range map[string]struct {
		current map[string]any
		want    bool
	}{
		"missing":                       {nil, false},
		"as the pool made it":           {observed(t, want, saGVK, pooled), true},
		"marked for this claim already": {observed(t, want, saGVK, func(o client.Object) { delete(o.GetAnnotations(), claimpolicy.AppliedAnnotation) }), true},
		"marked for another claim": {observed(t, want, saGVK, func(o client.Object) {
			pooled(o)
			o.GetLabels()[tenancyv1alpha1.ClaimUIDLabel] = "other"
		}), false},
		"another spec": {observed(t, want, saGVK, func(o client.Object) {
			pooled(o)
			o.(*corev1.ServiceAccount).AutomountServiceAccountToken = ptr.To(true)
		}), false},
		"without the managed-by label": {observed(t, want, saGVK, func(o client.Object) {
			pooled(o)
			o.SetLabels(nil)
		}), false},
	} {
		t.Run(name, func(t *testing.T) {
			if got := claimMarksOnly(mustApplyConfiguration(t, want, saGVK), tc.current); got != tc.want {
				t.Errorf("claimMarksOnly = %v, want %v", got, tc.want)
			}
		})
	}
}
