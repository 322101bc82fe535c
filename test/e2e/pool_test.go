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

package e2e

// The warm pool (docs/pool.md) against every identity but the operator's, with the RBAC the project
// ships: a pooled namespace is as closed as a fresh one, and a handed-out one is its claim's alone.

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
	"github.com/nsclaim/nsclaim-operator/test/invariants"
)

// waitPool waits until the class's pool reports n ready namespaces and returns their names, as the
// admin lists them.
func waitPool(t *testing.T, class *tenancyv1alpha1.NamespaceClass, n int32) []string {
	t.Helper()
	var names []string
	NewWithT(t).Eventually(func(g Gomega) {
		cur := &tenancyv1alpha1.NamespaceClass{}
		g.Expect(admin.Get(ctx, client.ObjectKeyFromObject(class), cur)).To(Succeed())
		g.Expect(cur.Status.Pool).NotTo(BeNil())
		g.Expect(cur.Status.Pool.Ready).To(Equal(n))
		list := &corev1.NamespaceList{}
		g.Expect(admin.List(ctx, list, client.MatchingLabels{tenancyv1alpha1.PoolLabel: class.Name})).To(Succeed())
		names = nil
		for _, ns := range list.Items {
			if ns.DeletionTimestamp.IsZero() {
				names = append(names, ns.Name)
			}
		}
		g.Expect(len(names)).To(BeNumerically(">=", int(n)))
	}).WithTimeout(2 * time.Minute).WithPolling(500 * time.Millisecond).Should(Succeed())
	return names
}

// expectShut asserts that c (another identity) can neither read namespace ns nor anything in it, nor
// mint a token for its tenant ServiceAccount, nor write in it: every answer is Forbidden.
func expectShut(g Gomega, who string, c client.Client, ns string) {
	forbidden := func(err error, what string) {
		g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "%s: %s in %s: want Forbidden, got %v", who, what, ns, err)
	}
	forbidden(c.Get(ctx, client.ObjectKey{Name: ns}, &corev1.Namespace{}), "get namespace")
	forbidden(c.Get(ctx, client.ObjectKey{Namespace: ns, Name: tenancyv1alpha1.TenantServiceAccountName}, &corev1.ServiceAccount{}), "get ServiceAccount")
	forbidden(c.List(ctx, &corev1.ServiceAccountList{}, client.InNamespace(ns)), "list ServiceAccounts")
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: tenancyv1alpha1.TenantServiceAccountName, Namespace: ns}}
	forbidden(c.SubResource("token").Create(ctx, sa, &authenticationv1.TokenRequest{}), "create serviceaccounts/token")
	forbidden(c.List(ctx, &corev1.SecretList{}, client.InNamespace(ns)), "list Secrets")
	forbidden(c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "anything"}, &corev1.Secret{}), "get Secret")
	forbidden(c.List(ctx, &rbacv1.RoleBindingList{}, client.InNamespace(ns)), "list RoleBindings")
	forbidden(c.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "probe", Namespace: ns}}), "create ConfigMap")
}

// expectHoldsNothing asserts through the API server that a pooled namespace holds no Secret and no
// RoleBinding, and that no namespace watcher ClusterRoleBinding names it (invariants.PooledHolds).
func expectHoldsNothing(g Gomega, ns string) {
	held, err := invariants.PooledHolds(ctx, admin, ns)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(held).To(BeEmpty())
}

// TestPooledNamespaceIsClosedToEveryone: a requester, a pipeline and another claim's tenant try to
// read a pooled namespace, mint a token for its tenant, read its Secrets, write in it, or claim it by
// name; all are refused, and it holds nothing to take. A claim of the class then gets a pooled
// namespace and is Ready from it; the other identities are still shut out of it.
func TestPooledNamespaceIsClosedToEveryone(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	name := fmt.Sprintf("pool-%d", time.Now().UnixNano()%100000)
	class := newClass(t, name, tenancyv1alpha1.NamespaceClassSpec{
		ClusterRole: "edit", Naming: tenancyv1alpha1.NamingSpec{Prefix: name + "-"},
		NetworkPolicy: tenancyv1alpha1.NetworkPolicyDenyFromOtherNamespaces, PodSecurity: tenancyv1alpha1.PodSecurityRestricted,
		ResourceQuota: &corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("10")}},
		Pool:          tenancyv1alpha1.PoolSpec{Size: 2},
	})
	requester, other := newRequester(t, "pool-req"), newPipeline(t, "pool-other")
	otherTenant, _ := claimAndWait(t, other, "elsewhere", nil)
	identities := map[string]client.Client{"requester": requester.client, "pipeline": other.client, "another tenant": tenantClient(g, otherTenant)}

	pooled := waitPool(t, class, 2)
	for _, ns := range pooled {
		expectHoldsNothing(g, ns)
		for who, c := range identities {
			expectShut(g, who, c, ns)
		}
	}

	// Naming a pooled namespace does not get it: it exists and is no claim's.
	squat := createClaim(t, requester, &tenancyv1alpha1.NamespaceClaim{ObjectMeta: metav1.ObjectMeta{Name: "squat"},
		Spec: tenancyv1alpha1.NamespaceClaimSpec{ClassName: class.Name, NamespaceName: strings.TrimPrefix(pooled[0], name+"-")}})
	waitReason(t, squat, tenancyv1alpha1.NamespaceConflictReason)
	ns := &corev1.Namespace{}
	g.Expect(admin.Get(ctx, client.ObjectKey{Name: pooled[0]}, ns)).To(Succeed())
	g.Expect(ns.Labels).To(HaveKeyWithValue(tenancyv1alpha1.PoolLabel, class.Name))
	g.Expect(ns.Labels).NotTo(HaveKey(tenancyv1alpha1.ClaimUIDLabel))

	// A claim that does not fix its name is handed one, and is Ready from it.
	claim := createClaim(t, requester, &tenancyv1alpha1.NamespaceClaim{ObjectMeta: metav1.ObjectMeta{Name: "warm"},
		Spec: tenancyv1alpha1.NamespaceClaimSpec{ClassName: class.Name}})
	waitReason(t, claim, tenancyv1alpha1.ProvisionedReason)
	pooledCond := meta.FindStatusCondition(claim.Status.Conditions, tenancyv1alpha1.PooledCondition)
	g.Expect(pooledCond).NotTo(BeNil())
	g.Expect(pooledCond.Reason).To(Equal(tenancyv1alpha1.PoolHitReason), pooledCond.Message)
	g.Expect(pooled).To(ContainElement(claim.Status.Namespace))
	sec := &corev1.Secret{}
	g.Expect(requester.client.Get(ctx, client.ObjectKey{Namespace: requester.ns, Name: claim.Status.CredentialsSecretName}, sec)).To(Succeed())
	tenant := tenantClient(g, writeKubeconfigBytes(t, sec.Data["kubeconfig"]))
	g.Expect(tenant.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "mine", Namespace: claim.Status.Namespace}})).To(Succeed())
	// The other pipeline and its tenant stay shut out of the handed-out namespace.
	expectShut(g, "pipeline", other.client, claim.Status.Namespace)
	expectShut(g, "another tenant", identities["another tenant"], claim.Status.Namespace)
	// The pool refills, and what it holds still holds nothing.
	for _, ns := range waitPool(t, class, 2) {
		if ns != claim.Status.Namespace {
			expectHoldsNothing(g, ns)
		}
	}
}

// writeKubeconfigBytes writes a kubeconfig handed out by the operator to a file and returns its path.
func writeKubeconfigBytes(t *testing.T, kubeconfig []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "tenant.kubeconfig")
	NewWithT(t).Expect(os.WriteFile(path, kubeconfig, 0o600)).To(Succeed())
	return path
}
