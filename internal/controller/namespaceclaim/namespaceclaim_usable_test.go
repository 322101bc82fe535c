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
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
	"github.com/nsclaim/nsclaim-operator/internal/claimpolicy"
	"github.com/nsclaim/nsclaim-operator/internal/kube"
)

func TestUnusablePollRequeues(t *testing.T) {
	now := time.Now()
	s := &claimScope{claim: &tenancyv1alpha1.NamespaceClaim{}, now: now, renewAt: now.Add(time.Hour)}
	if got := s.requeueAfter(); got != time.Hour {
		t.Fatalf("requeueAfter = %s, want the renewal in 1h", got)
	}
	s.unusable, s.unusablePoll = "waiting for the default ServiceAccount", true
	if got := s.requeueAfter(); got != usablePoll {
		t.Fatalf("requeueAfter = %s, want %s while the default ServiceAccount is polled for", got, usablePoll)
	}
}

// With kube-controller-manager stopped, nothing computes a quota's status or creates a namespace's
// `default` ServiceAccount: a claim whose class has a quota waits for the quota, one whose class has
// none waits for the ServiceAccount, neither gets credentials. Once kube-controller-manager runs again
// both become Ready, and at that moment the quota's status matches its spec and the ServiceAccount
// exists. A new claim reports the wait only once it has lasted pendingQuiet.
func TestNotReadyUntilNamespaceIsUsable(t *testing.T) {
	requireEnvtest(t)
	g := NewWithT(t)
	stopControllerManager()
	t.Cleanup(func() {
		if controllerManager == nil {
			if err := startControllerManager(); err != nil {
				t.Error(err)
			}
		}
	})

	withQuota := newClass(t, fullClass())
	without := newClass(t)
	req := newRequesterNamespace(t, nil)
	quotaClaim := newClaim(t, req, withClass(withQuota.Name))
	plainClaim := newClaim(t, req, withClass(without.Name))

	// A new claim waits quietly: its reconcile ran (its namespace exists) and wrote no status.
	for _, c := range []*tenancyv1alpha1.NamespaceClaim{quotaClaim, plainClaim} {
		g.Eventually(func(g Gomega) {
			nss := &corev1.NamespaceList{}
			g.Expect(k8s.List(ctx, nss, client.MatchingLabels{tenancyv1alpha1.ClaimUIDLabel: string(getClaim(g, c).UID)})).To(Succeed())
			g.Expect(nss.Items).To(HaveLen(1))
		}).WithTimeout(30 * time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())
	}
	g.Consistently(func(g Gomega) {
		for _, c := range []*tenancyv1alpha1.NamespaceClaim{quotaClaim, plainClaim} {
			g.Expect(meta.FindStatusCondition(getClaim(g, c).Status.Conditions, tenancyv1alpha1.ReadyCondition)).To(BeNil(), "status written during the quiet wait")
		}
	}).WithTimeout(2 * time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())
	// Once the wait has lasted pendingQuiet on the operator's clock, the next reconcile reports it.
	quietOver := testClock.Now().Add(pendingQuiet)
	testClock.SetTime(quietOver)
	t.Cleanup(func() { testClock.SetTime(time.Now()) })
	touch(t, quotaClaim)
	touch(t, plainClaim)

	got := waitFor(t, quotaClaim, tenancyv1alpha1.ReadyCondition, metav1.ConditionFalse, tenancyv1alpha1.PendingReason)
	ready := meta.FindStatusCondition(got.Status.Conditions, tenancyv1alpha1.ReadyCondition)
	g.Expect(ready.Message).To(ContainSubstring("ResourceQuota " + claimpolicy.ResourceQuotaName))
	g.Expect(meta.FindStatusCondition(got.Status.Conditions, tenancyv1alpha1.NamespaceReadyCondition).Reason).To(Equal(tenancyv1alpha1.PendingReason))
	g.Expect(meta.FindStatusCondition(got.Status.Conditions, tenancyv1alpha1.CredentialsReadyCondition)).To(BeNil(), "no credentials while not usable")
	quota := &corev1.ResourceQuota{}
	g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: got.Status.Namespace, Name: claimpolicy.ResourceQuotaName}, quota)).To(Succeed())
	g.Expect(quota.Status.Hard).To(BeEmpty(), "nothing computed the quota's status")

	got = waitFor(t, plainClaim, tenancyv1alpha1.ReadyCondition, metav1.ConditionFalse, tenancyv1alpha1.PendingReason)
	ready = meta.FindStatusCondition(got.Status.Conditions, tenancyv1alpha1.ReadyCondition)
	g.Expect(ready.Message).To(ContainSubstring("ServiceAccount default"))
	g.Expect(meta.FindStatusCondition(got.Status.Conditions, tenancyv1alpha1.CredentialsReadyCondition)).To(BeNil(), "no credentials while not usable")

	g.Expect(startControllerManager()).To(Succeed())
	for _, c := range []*tenancyv1alpha1.NamespaceClaim{quotaClaim, plainClaim} {
		got := waitFor(t, c, tenancyv1alpha1.ReadyCondition, metav1.ConditionTrue, tenancyv1alpha1.ProvisionedReason)
		g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: got.Status.Namespace, Name: kube.DefaultServiceAccount}, &corev1.ServiceAccount{})).To(Succeed())
	}
	got = getClaim(g, quotaClaim)
	g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: got.Status.Namespace, Name: claimpolicy.ResourceQuotaName}, quota)).To(Succeed())
	g.Expect(claimpolicy.QuotaPending(quota, quota)).To(BeEmpty(), "status.hard matches spec.hard once Ready")
}
