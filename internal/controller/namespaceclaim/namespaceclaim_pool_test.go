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
	"context"
	"encoding/json"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
	"github.com/nsclaim/nsclaim-operator/internal/claimpolicy"
	"github.com/nsclaim/nsclaim-operator/test/invariants"
)

func withPool(n int32) classOpt {
	return func(c *tenancyv1alpha1.NamespaceClass) { c.Spec.Pool.Size = n }
}

// poolNamespaces lists, through the API server, the pooled namespaces of class that are not terminating.
func poolNamespaces(g Gomega, class *tenancyv1alpha1.NamespaceClass) []corev1.Namespace {
	list := &corev1.NamespaceList{}
	g.Expect(k8s.List(context.Background(), list, client.MatchingLabels{tenancyv1alpha1.PoolLabel: claimpolicy.Label(class.Name)})).To(Succeed())
	var out []corev1.Namespace
	for _, ns := range list.Items {
		if ns.DeletionTimestamp.IsZero() {
			out = append(out, ns)
		}
	}
	return out
}

// waitPoolReady waits until class's status.pool reports n ready and none creating, and returns the
// pooled namespaces.
func waitPoolReady(t *testing.T, class *tenancyv1alpha1.NamespaceClass, n int32) []corev1.Namespace {
	t.Helper()
	return waitPoolReadyWith(t, class, n, nil)
}

// waitPoolReadyWith is waitPoolReady that also waits until every pooled namespace satisfies each
// (a class change is seen by the pool's reconciler after the update returns: until then the old
// generation's namespaces are the ready ones).
func waitPoolReadyWith(t *testing.T, class *tenancyv1alpha1.NamespaceClass, n int32, each func(g Gomega, ns *corev1.Namespace)) []corev1.Namespace {
	t.Helper()
	var out []corev1.Namespace
	NewWithT(t).Eventually(func(g Gomega) {
		cur := &tenancyv1alpha1.NamespaceClass{}
		g.Expect(k8s.Get(context.Background(), client.ObjectKeyFromObject(class), cur)).To(Succeed())
		g.Expect(cur.Status.Pool).NotTo(BeNil())
		g.Expect(*cur.Status.Pool).To(Equal(tenancyv1alpha1.PoolStatus{Ready: n}))
		out = poolNamespaces(g, cur)
		g.Expect(out).To(HaveLen(int(n)))
		if each != nil {
			for i := range out {
				each(g, &out[i])
			}
		}
	}).WithTimeout(60 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())
	return out
}

// expectBoundToNobody asserts, through the API server, that a pooled namespace is as closed as a
// fresh one and holds no credentials: its objects are there, and no Secret, no RoleBinding and no
// namespace watcher binding.
func expectBoundToNobody(g Gomega, ns *corev1.Namespace) {
	ctx := context.Background()
	g.Expect(ns.Labels).NotTo(HaveKey(tenancyv1alpha1.ClaimUIDLabel))
	g.Expect(ns.Labels).NotTo(HaveKey(tenancyv1alpha1.ClaimNamespaceLabel))
	g.Expect(ns.Annotations).NotTo(HaveKey(tenancyv1alpha1.ClaimNameAnnotation))
	g.Expect(ns.Labels).To(HaveKeyWithValue("pod-security.kubernetes.io/enforce", "restricted"))
	// The tenant's ServiceAccount is made at the handout: no token can be minted for it ahead.
	g.Expect(isNotFound(k8s.Get(ctx, client.ObjectKey{Namespace: ns.Name, Name: tenancyv1alpha1.TenantServiceAccountName}, &corev1.ServiceAccount{}))).To(BeTrue())
	q := &corev1.ResourceQuota{}
	g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns.Name, Name: claimpolicy.ResourceQuotaName}, q)).To(Succeed())
	g.Expect(q.Status.Hard).NotTo(BeEmpty(), "kube-controller-manager computed the quota")
	g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns.Name, Name: claimpolicy.LimitRangeName}, &corev1.LimitRange{})).To(Succeed())
	g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns.Name, Name: "default"}, &corev1.ServiceAccount{})).To(Succeed())
	held, err := invariants.PooledHolds(ctx, k8s, ns.Name)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(held).To(BeEmpty(), "no Secret, no RoleBinding, no ClusterRoleBinding naming the pooled namespace")
	// Its watcher ClusterRole is made ahead, unbound: the managed-by label only, owned by the namespace,
	// granting what a claim's grants.
	role := &rbacv1.ClusterRole{}
	g.Expect(k8s.Get(ctx, client.ObjectKey{Name: claimpolicy.NamespaceWatcherName(ns.Name)}, role)).To(Succeed())
	g.Expect(role.Labels).To(Equal(map[string]string{tenancyv1alpha1.ManagedByLabel: tenancyv1alpha1.ManagedByValue}))
	g.Expect(role.OwnerReferences).To(ConsistOf(claimpolicy.NamespaceOwnerRef(ns)))
	g.Expect(role.Rules).To(Equal(claimpolicy.Build(ns.Name, claimpolicy.Owner{}, &tenancyv1alpha1.NamespaceClass{}, nil).NamespaceWatcher.Rules))
}

func TestPoolFillsAndHandsOut(t *testing.T) {
	requireEnvtest(t)
	t.Parallel()
	g := NewWithT(t)
	class := newClass(t, withPrefix("pl-"), fullClass(), withPool(2))
	pooled := waitPoolReady(t, class, 2)
	names := map[string]bool{}
	for i := range pooled {
		expectBoundToNobody(g, &pooled[i])
		g.Expect(pooled[i].Name).To(HavePrefix("pl-"))
		names[pooled[i].Name] = true
	}

	req := newRequesterNamespace(t, nil)
	claim := newClaim(t, req, withClass(class.Name))
	got := waitFor(t, claim, tenancyv1alpha1.ReadyCondition, metav1.ConditionTrue, tenancyv1alpha1.ProvisionedReason)
	g.Expect(names).To(HaveKey(got.Status.Namespace), "the claim got a pooled namespace")
	c := meta.FindStatusCondition(got.Status.Conditions, tenancyv1alpha1.PooledCondition)
	g.Expect(c).NotTo(BeNil())
	g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
	g.Expect(c.Reason).To(Equal(tenancyv1alpha1.PoolHitReason))

	ns := &corev1.Namespace{}
	g.Expect(k8s.Get(ctx, client.ObjectKey{Name: got.Status.Namespace}, ns)).To(Succeed())
	g.Expect(claimpolicy.CarriesMarksOf(ns, claimpolicy.OwnerOf(got))).To(BeTrue())
	g.Expect(claimpolicy.IsPooled(ns)).To(BeFalse())
	g.Expect(ns.Labels).NotTo(HaveKey(tenancyv1alpha1.PoolLabel))
	// The handed-out namespace is a claim's like any: its tenant is bound at Ready, and the children the
	// pool made gain the claim's marks after the handout (pooledMarksDelay).
	g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns.Name, Name: claimpolicy.TenantRoleBindingName}, &rbacv1.RoleBinding{})).To(Succeed())
	g.Eventually(func(g Gomega) {
		for _, o := range []client.Object{
			&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: tenancyv1alpha1.TenantServiceAccountName}},
			&corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: claimpolicy.ResourceQuotaName}},
			&corev1.LimitRange{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: claimpolicy.LimitRangeName}},
		} {
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(o), o)).To(Succeed())
			g.Expect(claimpolicy.MarkedFor(o, claimpolicy.OwnerOf(got))).To(BeTrue(), "%T %s", o, o.GetName())
		}
	}).WithTimeout(30 * time.Second).WithPolling(250 * time.Millisecond).Should(Succeed())
	// Marking them was no repair: the claim was Ready once, with one token.
	after := &tenancyv1alpha1.NamespaceClaim{}
	g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(claim), after)).To(Succeed())
	g.Expect(after.Status.TokenExpiresAt).To(Equal(got.Status.TokenExpiresAt))
	// The tenant may watch its namespace at Ready: the binding is there, to the ClusterRole the pool made.
	crb := &rbacv1.ClusterRoleBinding{}
	g.Expect(k8s.Get(ctx, client.ObjectKey{Name: claimpolicy.NamespaceWatcherName(ns.Name)}, crb)).To(Succeed())
	g.Expect(claimpolicy.MarkedFor(crb, claimpolicy.OwnerOf(got))).To(BeTrue())
	g.Expect(crb.Subjects).To(HaveLen(1))
	g.Expect(crb.Subjects[0].Namespace).To(Equal(ns.Name))
	// The ClusterRole gains the claim's labels after the handout, and nothing else changes in it.
	g.Eventually(func(g Gomega) {
		role := &rbacv1.ClusterRole{}
		g.Expect(k8s.Get(ctx, client.ObjectKey{Name: claimpolicy.NamespaceWatcherName(ns.Name)}, role)).To(Succeed())
		g.Expect(claimpolicy.MarkedFor(role, claimpolicy.OwnerOf(got))).To(BeTrue())
		g.Expect(role.Rules).To(HaveLen(1))
		g.Expect(role.Rules[0].ResourceNames).To(Equal([]string{ns.Name}))
	}).WithTimeout(30 * time.Second).Should(Succeed())

	// The pool refills to its size, without the handed-out namespace.
	refilled := waitPoolReady(t, class, 2)
	for i := range refilled {
		g.Expect(refilled[i].Name).NotTo(Equal(ns.Name))
	}
}

func TestPoolEmptyFallsBackToTheColdPath(t *testing.T) {
	requireEnvtest(t)
	t.Parallel()
	g := NewWithT(t)
	class := newClass(t, withPrefix("pe-"), fullClass(), withPool(1))
	waitPoolReady(t, class, 1)
	req := newRequesterNamespace(t, nil)
	// More claims at once than the pool holds: the pool's new namespaces are not usable before
	// kube-controller-manager has made them so, and the claims do not wait for them.
	claims := make([]*tenancyv1alpha1.NamespaceClaim, 0, 6)
	for range 6 {
		claims = append(claims, newClaim(t, req, withClass(class.Name)))
	}
	reasons := map[string]int{}
	seen := map[string]bool{}
	for _, claim := range claims {
		got := waitFor(t, claim, tenancyv1alpha1.ReadyCondition, metav1.ConditionTrue, tenancyv1alpha1.ProvisionedReason)
		g.Expect(seen).NotTo(HaveKey(got.Status.Namespace), "two claims share a namespace")
		seen[got.Status.Namespace] = true
		c := meta.FindStatusCondition(got.Status.Conditions, tenancyv1alpha1.PooledCondition)
		g.Expect(c).NotTo(BeNil(), "claim %s has no Pooled condition", got.Name)
		reasons[c.Reason]++
		if c.Reason == tenancyv1alpha1.PoolEmptyReason {
			g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
			// The cold path's name: derived from the claim, not drawn by the pool.
			ns := &corev1.Namespace{}
			g.Expect(k8s.Get(ctx, client.ObjectKey{Name: got.Status.Namespace}, ns)).To(Succeed())
			g.Expect(ns.Annotations).NotTo(HaveKey(tenancyv1alpha1.PooledAnnotation))
		}
	}
	g.Expect(reasons[tenancyv1alpha1.PoolEmptyReason]).To(BeNumerically(">", 0), "reasons: %v", reasons)
	g.Expect(reasons[tenancyv1alpha1.PoolHitReason]).To(BeNumerically(">", 0), "reasons: %v", reasons)
}

func TestPoolDrainsOnClassChangeAndShrinks(t *testing.T) {
	requireEnvtest(t)
	t.Parallel()
	g := NewWithT(t)
	class := newClass(t, withPrefix("pd-"), fullClass(), withPool(3))
	before := waitPoolReady(t, class, 3)

	// A class change drains the pool: namespaces of the old generation are deleted, new ones made.
	g.Eventually(func() error {
		cur := &tenancyv1alpha1.NamespaceClass{}
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(class), cur); err != nil {
			return err
		}
		cur.Spec.NamespaceLabels = map[string]string{"team": "changed"}
		return k8s.Update(ctx, cur)
	}).Should(Succeed())
	// The pool reports the old generation as ready until its reconciler sees the change, so wait
	// for the new generation; its namespaces carry the new labels.
	waitPoolReadyWith(t, class, 3, func(g Gomega, ns *corev1.Namespace) {
		g.Expect(ns.Labels).To(HaveKeyWithValue("team", "changed"))
	})
	for i := range before {
		expectNamespaceDeleting(g, before[i].Name)
	}

	// A smaller size deletes the surplus.
	g.Eventually(func() error {
		cur := &tenancyv1alpha1.NamespaceClass{}
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(class), cur); err != nil {
			return err
		}
		cur.Spec.Pool.Size = 1
		return k8s.Update(ctx, cur)
	}).Should(Succeed())
	waitPoolReady(t, class, 1)

	// A deleted class takes its pool with it.
	left := poolNamespaces(g, class)
	g.Expect(k8s.Delete(ctx, class)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(poolNamespaces(g, class)).To(BeEmpty())
	}).WithTimeout(30 * time.Second).Should(Succeed())
	for i := range left {
		expectNamespaceDeleting(g, left[i].Name)
	}
}

func TestInterruptedHandoutIsFoundAgain(t *testing.T) {
	requireEnvtest(t)
	t.Parallel()
	g := NewWithT(t)
	class := newClass(t, withPrefix("pi-"), fullClass(), withPool(2), withSelector(map[string]string{"pool-test": "admitted"}))
	pooled := waitPoolReady(t, class, 2)
	// The claim is refused at first (its namespace is not admitted), so it takes nothing from the pool.
	req := newRequesterNamespace(t, nil)
	claim := newClaim(t, req, withClass(class.Name))
	waitFor(t, claim, tenancyv1alpha1.ReadyCondition, metav1.ConditionFalse, tenancyv1alpha1.ClassNotAllowedReason)
	claim = getClaim(g, claim)

	// A handout that stopped after its label patch, before the claim's status recorded it (the
	// operator crashed): the namespace carries the claim's marks, the claim names no namespace.
	target := pooled[0]
	body, err := json.Marshal(claimpolicy.HandoutPatch(claimpolicy.OwnerOf(claim), ownershipKey.ForUID(target.Name, string(target.UID), subject(claimpolicy.OwnerOf(claim))), target.ResourceVersion))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(k8s.Patch(ctx, &target, client.RawPatch(types.MergePatchType, body))).To(Succeed())

	// Admitted now, the claim finds that namespace again: no second one, none left to nobody.
	requester := &corev1.Namespace{}
	g.Expect(k8s.Get(ctx, client.ObjectKey{Name: req}, requester)).To(Succeed())
	requester.Labels = map[string]string{"pool-test": "admitted"}
	g.Expect(k8s.Update(ctx, requester)).To(Succeed())
	touch(t, claim)
	got := waitFor(t, claim, tenancyv1alpha1.ReadyCondition, metav1.ConditionTrue, tenancyv1alpha1.ProvisionedReason)
	g.Expect(got.Status.Namespace).To(Equal(target.Name))
	held := &corev1.NamespaceList{}
	g.Expect(k8s.List(ctx, held, client.MatchingLabels{tenancyv1alpha1.ClaimUIDLabel: string(claim.UID)})).To(Succeed())
	g.Expect(held.Items).To(HaveLen(1))
}

func TestClaimNamingAPooledNamespaceIsRefused(t *testing.T) {
	requireEnvtest(t)
	t.Parallel()
	g := NewWithT(t)
	class := newClass(t, withPrefix("pn-"), fullClass(), withPool(1))
	pooled := waitPoolReady(t, class, 1)
	target := pooled[0]
	req := newRequesterNamespace(t, nil)
	// spec.namespaceName is prefixed by the class: this names the pooled namespace exactly.
	claim := newClaim(t, req, withClass(class.Name), withNamespaceName(target.Name[len("pn-"):]))
	got := waitFor(t, claim, tenancyv1alpha1.ReadyCondition, metav1.ConditionFalse, tenancyv1alpha1.NamespaceConflictReason)
	g.Expect(meta.FindStatusCondition(got.Status.Conditions, tenancyv1alpha1.PooledCondition)).To(BeNil())
	ns := &corev1.Namespace{}
	g.Expect(k8s.Get(ctx, client.ObjectKey{Name: target.Name}, ns)).To(Succeed())
	g.Expect(claimpolicy.IsPooled(ns)).To(BeTrue(), "the pooled namespace was left alone: %v", ns.Labels)
	expectBoundToNobody(g, ns)
}
