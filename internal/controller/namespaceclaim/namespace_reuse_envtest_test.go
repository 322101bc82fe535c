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
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
	"github.com/nsclaim/nsclaim-operator/internal/claimpolicy"
)

// expectGrantsWaited checks a claim that took a namespace whose name was in use moments before: it
// reported the wait (NamespaceReady=False, Pending, naming the reuse) before it turned Ready, and
// every binding that names its tenant was made at least claimpolicy.NameReuseWindow (less a second of timestamp
// rounding) after the namespace.
func expectGrantsWaited(t *testing.T, claim *tenancyv1alpha1.NamespaceClaim) *tenancyv1alpha1.NamespaceClaim {
	t.Helper()
	g := NewWithT(t)
	g.Eventually(func(g Gomega) {
		c := meta.FindStatusCondition(getClaim(g, claim).Status.Conditions, tenancyv1alpha1.NamespaceReadyCondition)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Reason).To(Equal(tenancyv1alpha1.PendingReason))
		g.Expect(c.Message).To(ContainSubstring("in use moments ago"))
	}).WithTimeout(30 * time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())
	got := waitFor(t, claim, tenancyv1alpha1.ReadyCondition, metav1.ConditionTrue, tenancyv1alpha1.ProvisionedReason)
	ns := &corev1.Namespace{}
	g.Expect(k8s.Get(context.Background(), client.ObjectKey{Name: got.Status.Namespace}, ns)).To(Succeed())
	rbs := &rbacv1.RoleBindingList{}
	g.Expect(k8s.List(context.Background(), rbs, client.InNamespace(ns.Name), client.MatchingLabels{tenancyv1alpha1.ClaimUIDLabel: string(got.UID)})).To(Succeed())
	g.Expect(rbs.Items).NotTo(BeEmpty())
	for _, rb := range rbs.Items {
		gap := rb.CreationTimestamp.Sub(ns.CreationTimestamp.Time)
		g.Expect(gap).To(BeNumerically(">=", claimpolicy.NameReuseWindow-time.Second), "RoleBinding %s made %v after the reused namespace", rb.Name, gap)
	}
	return got
}

// deleteAndWaitGone deletes the claim and waits until its namespace is gone from the API server.
func deleteAndWaitGone(t *testing.T, claim *tenancyv1alpha1.NamespaceClaim, namespace string) {
	t.Helper()
	g := NewWithT(t)
	g.Expect(client.IgnoreNotFound(k8s.Delete(context.Background(), claim))).To(Succeed())
	g.Eventually(func() bool {
		return isNotFound(k8s.Get(context.Background(), client.ObjectKey{Name: namespace}, &corev1.Namespace{}))
	}).WithTimeout(60 * time.Second).WithPolling(50 * time.Millisecond).Should(BeTrue())
}

// TestReusedNameWaitsForItsGrants: a name given up a moment ago is taken again, by another requester
// (a claim with spec.namespaceName) and by a re-run of a ConfigMap request. The new namespace is made
// at once, but nothing names its tenant until the API server can no longer accept a token of the
// previous holder (see watchcache.NamespaceReuse), and the claim says why while it waits.
func TestReusedNameWaitsForItsGrants(t *testing.T) {
	requireEnvtest(t)
	t.Run("claim", func(t *testing.T) {
		t.Parallel()
		class := newClass(t, withPrefix("reuse-"))
		name := uniq("pr")
		first := newClaim(t, newRequesterNamespace(t, nil), withClass(class.Name), withNamespaceName(name))
		got := waitFor(t, first, tenancyv1alpha1.ReadyCondition, metav1.ConditionTrue, tenancyv1alpha1.ProvisionedReason)
		deleteAndWaitGone(t, first, got.Status.Namespace)
		second := newClaim(t, newRequesterNamespace(t, nil), withClass(class.Name), withNamespaceName(name))
		again := expectGrantsWaited(t, second)
		NewWithT(t).Expect(again.Status.Namespace).To(Equal(got.Status.Namespace))
	})
	t.Run("configmap request", func(t *testing.T) {
		t.Parallel()
		g := NewWithT(t)
		name := fmt.Sprintf("ci-branch-rerun-%d", nameSeq.Add(1))
		cm := newRequest(t, name, nil)
		claim := &tenancyv1alpha1.NamespaceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: requestsNamespace, Name: name}}
		waitFor(t, claim, tenancyv1alpha1.ReadyCondition, metav1.ConditionTrue, tenancyv1alpha1.ProvisionedReason)
		g.Expect(k8s.Delete(context.Background(), cm)).To(Succeed())
		g.Eventually(func() bool {
			return isNotFound(k8s.Get(context.Background(), client.ObjectKey{Name: name}, &corev1.Namespace{})) &&
				isNotFound(k8s.Get(context.Background(), client.ObjectKeyFromObject(claim), &tenancyv1alpha1.NamespaceClaim{}))
		}).WithTimeout(60 * time.Second).WithPolling(50 * time.Millisecond).Should(BeTrue())
		newRequest(t, name, nil)
		expectGrantsWaited(t, claim)
	})
}

// TestReusedNameWaitsForItsGrantsInRequesterMode: in credentials mode Requester no token exists, but
// the bindings may name the namespace's ServiceAccounts' group, which a previous holder's token also
// carries: the same wait applies.
func TestReusedNameWaitsForItsGrantsInRequesterMode(t *testing.T) {
	requireEnvtest(t)
	installStamp(t)
	class := newClass(t, withPrefix("keyless-reuse-"), requesterMode([]string{"ci:org/*"}, "ci:org"))
	name := uniq("pr")
	take := func() *tenancyv1alpha1.NamespaceClaim {
		ns := newRequesterNamespace(t, nil)
		user := uniq("ci:org/app")
		mayClaim(t, ns, user)
		pipeline := impersonating(t, user, []string{"ci:org"}, nil)
		c := &tenancyv1alpha1.NamespaceClaim{ObjectMeta: metav1.ObjectMeta{Name: uniq("claim"), Namespace: ns},
			Spec: tenancyv1alpha1.NamespaceClaimSpec{ClassName: class.Name, NamespaceName: name}}
		NewWithT(t).Eventually(func() error { return pipeline.Create(context.Background(), c.DeepCopy()) }).WithTimeout(10 * time.Second).Should(Succeed())
		return c
	}
	first := take()
	got := waitFor(t, first, tenancyv1alpha1.ReadyCondition, metav1.ConditionTrue, tenancyv1alpha1.ProvisionedReason)
	deleteAndWaitGone(t, first, got.Status.Namespace)
	expectGrantsWaited(t, take())
}
