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
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
)

// Finding 4: what was planted in a pooled namespace (a RoleBinding for a foreign subject), or a grant
// made ahead elsewhere to a pooled tenant by a namespace admin who can list namespaces, never reaches
// a claim: the namespace is discarded and the claim takes another one or the cold path, Ready.
func TestTamperedPooledNamespacesAreDiscarded(t *testing.T) {
	requireEnvtest(t)
	t.Parallel()
	g := NewWithT(t)
	class := newClass(t, withPrefix("tamper-"), withPool(2))
	pooled := waitPoolReady(t, class, 2)
	// Planted with whatever identity could write there (the operator's own token, stolen).
	planted := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "backdoor", Namespace: pooled[0].Name},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "admin"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "intruder", Namespace: "elsewhere"}}}
	g.Expect(k8s.Create(ctx, planted)).To(Succeed())
	// A grant made ahead, in a namespace of its own, to the other pooled namespace's tenant.
	other := newRequesterNamespace(t, nil)
	ahead := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "view-pooled", Namespace: other},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: tenancyv1alpha1.TenantServiceAccountName, Namespace: pooled[1].Name}}}
	g.Expect(k8s.Create(ctx, ahead)).To(Succeed())
	// The binding index learns of it from its informer.
	time.Sleep(time.Second)

	claim := newClaim(t, newRequesterNamespace(t, nil), withClass(class.Name))
	got := waitFor(t, claim, tenancyv1alpha1.ReadyCondition, metav1.ConditionTrue, tenancyv1alpha1.ProvisionedReason)
	g.Expect(got.Status.Namespace).NotTo(BeElementOf(pooled[0].Name, pooled[1].Name), "a tampered pooled namespace was handed out")
	for _, ns := range pooled {
		g.Eventually(func(g Gomega) { expectNamespaceDeleting(g, ns.Name) }).WithTimeout(20 * time.Second).Should(Succeed())
	}
	// Its tenant's ServiceAccount was made at the handout, and its RoleBindings are nsclaim's only.
	rbs := &rbacv1.RoleBindingList{}
	g.Expect(k8s.List(ctx, rbs, client.InNamespace(got.Status.Namespace))).To(Succeed())
	for _, rb := range rbs.Items {
		g.Expect(rb.Labels).To(HaveKeyWithValue(tenancyv1alpha1.ClaimUIDLabel, string(got.UID)))
	}
	sa := &corev1.ServiceAccount{}
	g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: got.Status.Namespace, Name: tenancyv1alpha1.TenantServiceAccountName}, sa)).To(Succeed())
}
