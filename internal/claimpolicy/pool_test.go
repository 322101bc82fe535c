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

package claimpolicy

import (
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
)

func poolClass() *tenancyv1alpha1.NamespaceClass {
	return &tenancyv1alpha1.NamespaceClass{
		ObjectMeta: metav1.ObjectMeta{Name: "ci", UID: "class-uid", Generation: 3},
		Spec: tenancyv1alpha1.NamespaceClassSpec{
			Naming:          tenancyv1alpha1.NamingSpec{Prefix: "ci-"},
			Pool:            tenancyv1alpha1.PoolSpec{Size: 2},
			NamespaceLabels: map[string]string{"team": "ci"},
			ResourceQuota:   &corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("5")}},
			LimitRange:      &corev1.LimitRangeSpec{},
			NetworkPolicy:   tenancyv1alpha1.NetworkPolicyDenyFromOtherNamespaces,
		},
	}
}

// TestBuildPooledIsAClaimsNamespaceBoundToNobody: a pooled namespace holds a claim's namespace minus
// what names a claim, and no RoleBinding (its watcher binding: TestBuildPooledWatcherBinding).
func TestBuildPooledIsAClaimsNamespaceBoundToNobody(t *testing.T) {
	class := poolClass()
	name := PoolNamespaceName(class.Spec.Naming.Prefix)
	if !strings.HasPrefix(name, "ci-") || len(name) != len("ci-")+poolSuffixLength {
		t.Fatalf("PoolNamespaceName = %q", name)
	}
	d := BuildPooled(name, class)
	claim := Build(name, Owner{Namespace: "req", Name: "c", UID: "u"}, class, nil)
	if len(d.RoleBindings) != 0 {
		t.Fatalf("a pooled namespace binds: %d RoleBindings", len(d.RoleBindings))
	}
	// Its watcher ClusterRole is made ahead, unbound, granting what a claim's grants.
	if d.NamespaceWatcher == nil || !reflect.DeepEqual(d.NamespaceWatcher.Rules, claim.NamespaceWatcher.Rules) || d.NamespaceWatcher.Name != claim.NamespaceWatcher.Name {
		t.Fatalf("a pooled namespace's watcher ClusterRole %+v, a claim's is %+v", d.NamespaceWatcher, claim.NamespaceWatcher)
	}
	if !IsPooled(d.Namespace) || !PoolCurrent(d.Namespace, class) {
		t.Fatalf("BuildPooled's namespace is not a current pooled one: %v", d.Namespace.Labels)
	}
	if _, ok := OwnerFromMarks(d.Namespace); ok {
		t.Fatalf("a pooled namespace names a claim: %v %v", d.Namespace.Labels, d.Namespace.Annotations)
	}
	for k, v := range claim.Namespace.Labels {
		if k == tenancyv1alpha1.ClaimUIDLabel || k == tenancyv1alpha1.ClaimNamespaceLabel {
			continue
		}
		if d.Namespace.Labels[k] != v {
			t.Errorf("label %s = %q, a claim's namespace has %q", k, d.Namespace.Labels[k], v)
		}
	}
	// The same objects as a claim's, with the same spec, and nothing that names a claim.
	if d.ResourceQuota == nil || d.LimitRange == nil || d.NetworkPolicy == nil {
		t.Fatalf("a pooled namespace lacks objects a claim's has: %+v", d)
	}
	// The tenant's ServiceAccount is made at the handout: no token can be minted for it ahead.
	if d.ServiceAccount != nil {
		t.Errorf("a pooled namespace holds the tenant ServiceAccount ahead of its handout")
	}
	for _, o := range []metav1.Object{d.ResourceQuota, d.LimitRange, d.NetworkPolicy, d.NamespaceWatcher} {
		if len(o.GetLabels()) != 1 || !IsManaged(o) {
			t.Errorf("%s carries %v, want only the managed-by label", o.GetName(), o.GetLabels())
		}
	}
	if d.ResourceQuota.Spec.Hard.Pods().Cmp(*claim.ResourceQuota.Spec.Hard.Pods()) != 0 {
		t.Errorf("the pooled quota differs from the class's")
	}
	class.Generation++
	if PoolCurrent(d.Namespace, class) {
		t.Errorf("a pooled namespace of an older generation counts as current")
	}
}

// TestBuildPooledWatcherBinding: a pooled namespace's only binding is the namespace watcher's, a
// claim's with the managed-by label alone, to the tenant ServiceAccount that the handout makes (mode
// Token); in mode Requester, whose binding names the creator, there is none.
func TestBuildPooledWatcherBinding(t *testing.T) {
	class := poolClass()
	name := PoolNamespaceName(class.Spec.Naming.Prefix)
	d := BuildPooled(name, class)
	claim := Build(name, Owner{Namespace: "req", Name: "c", UID: "u"}, class, nil)
	b := d.NamespaceWatcherBinding
	if b == nil || b.Name != claim.NamespaceWatcherBinding.Name || !reflect.DeepEqual(b.RoleRef, claim.NamespaceWatcherBinding.RoleRef) ||
		!reflect.DeepEqual(b.Subjects, claim.NamespaceWatcherBinding.Subjects) {
		t.Fatalf("a pooled namespace's watcher binding %+v, a claim's is %+v", b, claim.NamespaceWatcherBinding)
	}
	want := rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: tenancyv1alpha1.TenantServiceAccountName, Namespace: name}
	if len(b.Subjects) != 1 || b.Subjects[0] != want {
		t.Errorf("a pooled namespace's watcher binds %+v, want only %+v", b.Subjects, want)
	}
	if len(b.Labels) != 1 || !IsManaged(b) {
		t.Errorf("a pooled namespace's watcher binding carries %v, want only the managed-by label", b.Labels)
	}
	requester := poolClass()
	requester.Spec.Credentials.Mode = tenancyv1alpha1.CredentialsModeRequester
	if rb := BuildPooled(name, requester).NamespaceWatcherBinding; rb != nil {
		t.Errorf("a pooled namespace of a class in mode Requester binds %+v ahead of its creator", rb.Subjects)
	}
}

func TestMayUsePool(t *testing.T) {
	class := poolClass()
	requester := poolClass()
	requester.Spec.Credentials.Mode = tenancyv1alpha1.CredentialsModeRequester
	off := poolClass()
	off.Spec.Pool.Size = 0
	named := &tenancyv1alpha1.NamespaceClaim{Spec: tenancyv1alpha1.NamespaceClaimSpec{NamespaceName: "x"}}
	plain := &tenancyv1alpha1.NamespaceClaim{}
	for _, tc := range []struct {
		name    string
		claim   *tenancyv1alpha1.NamespaceClaim
		class   *tenancyv1alpha1.NamespaceClass
		request bool
		want    bool
	}{
		{"a claim without a name, a class with a pool", plain, class, false, true},
		{"a claim that names its namespace", named, class, false, false},
		{"a request of the ConfigMap protocol", plain, class, true, false},
		{"a class without a pool", plain, off, false, false},
		{"a class of credentials mode Requester", plain, requester, false, false},
	} {
		if got := MayUsePool(tc.claim, tc.class, tc.request); got != tc.want {
			t.Errorf("%s: MayUsePool = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestHandoutPatchMarksTheClaimAndDropsThePool(t *testing.T) {
	p := HandoutPatch(Owner{Namespace: "req", Name: "c", UID: "u"}, "u1.rec", "42")
	md := p["metadata"].(map[string]any)
	if md["resourceVersion"] != "42" {
		t.Errorf("resourceVersion = %v, want the one read (optimistic lock)", md["resourceVersion"])
	}
	labels := md["labels"].(map[string]any)
	for _, k := range []string{tenancyv1alpha1.PoolLabel, tenancyv1alpha1.PoolClassUIDLabel, tenancyv1alpha1.PoolGenerationLabel} {
		if v, ok := labels[k]; !ok || v != nil {
			t.Errorf("label %s is not removed: %v", k, v)
		}
	}
	if labels[tenancyv1alpha1.ClaimUIDLabel] != "u" || labels[tenancyv1alpha1.ClaimNamespaceLabel] != "req" {
		t.Errorf("claim labels = %v", labels)
	}
	if md["annotations"].(map[string]any)[tenancyv1alpha1.ClaimNameAnnotation] != "c" {
		t.Errorf("claim-name annotation missing")
	}
	if md["annotations"].(map[string]any)[tenancyv1alpha1.OwnershipAnnotation] != "u1.rec" {
		t.Errorf("the claim's ownership record is not written with its marks")
	}
}
