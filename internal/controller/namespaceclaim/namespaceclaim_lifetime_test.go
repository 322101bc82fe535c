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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
	"github.com/nsclaim/nsclaim-operator/internal/credentials"
)

// TestRestartRenewalExtensionAndExpiry moves the injected clock, so it does not run in parallel with
// other tests (Go runs it before every parallel test) and puts the clock back when done.
func TestRestartRenewalExtensionAndExpiry(t *testing.T) {
	requireEnvtest(t)
	g := NewWithT(t)
	start := time.Now()
	testClock.SetTime(start)
	t.Cleanup(func() { testClock.SetTime(time.Now()) })

	class := newClass(t, func(c *tenancyv1alpha1.NamespaceClass) {
		c.Spec.Credentials.TokenTTL = &metav1.Duration{Duration: time.Hour}
		c.Spec.Credentials.RenewBefore = &metav1.Duration{Duration: 20 * time.Minute}
	})
	claim := newClaim(t, newRequesterNamespace(t, nil), withClass(class.Name), withTTL(2*time.Hour))
	got := waitFor(t, claim, tenancyv1alpha1.ReadyCondition, metav1.ConditionTrue, tenancyv1alpha1.ProvisionedReason)
	key := client.ObjectKey{Namespace: claim.Namespace, Name: got.Status.CredentialsSecretName}
	first := &corev1.Secret{}
	g.Expect(k8s.Get(ctx, key, first)).To(Succeed())

	// A restart issues no token while the current one is valid, and writes nothing.
	stopManager()
	startManager()
	touch(t, claim)
	touched := getClaim(g, claim)
	waitReconciled(t, "namespaceclaim", touched)
	g.Consistently(func(g Gomega) {
		s := &corev1.Secret{}
		g.Expect(k8s.Get(ctx, key, s)).To(Succeed())
		g.Expect(s.ResourceVersion).To(Equal(first.ResourceVersion))
		g.Expect(getClaim(g, claim).ResourceVersion).To(Equal(touched.ResourceVersion))
	}).WithTimeout(3 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())

	// Past the renewal point a new token is issued.
	testClock.SetTime(start.Add(45 * time.Minute))
	touch(t, claim)
	g.Eventually(func(g Gomega) {
		s := &corev1.Secret{}
		g.Expect(k8s.Get(ctx, key, s)).To(Succeed())
		g.Expect(s.Data[credentials.TokenKey]).NotTo(Equal(first.Data[credentials.TokenKey]))
	}).WithTimeout(20 * time.Second).Should(Succeed())

	// Raising the TTL before expiry extends the claim.
	cur := getClaim(g, claim)
	patch := client.MergeFrom(cur.DeepCopy())
	cur.Spec.TTL = &metav1.Duration{Duration: 3 * time.Hour}
	g.Expect(k8s.Patch(ctx, cur, patch)).To(Succeed())
	g.Eventually(func(g Gomega) {
		c := getClaim(g, claim)
		g.Expect(c.Status.ExpiresAt.Time).To(BeTemporally("~", c.CreationTimestamp.Add(3*time.Hour), time.Second))
	}).WithTimeout(20 * time.Second).Should(Succeed())

	// At the TTL the namespace is deleted, and the claim stays, expired.
	testClock.SetTime(got.CreationTimestamp.Add(3*time.Hour + time.Minute))
	touch(t, claim)
	expired := waitFor(t, claim, tenancyv1alpha1.ReadyCondition, metav1.ConditionFalse, tenancyv1alpha1.ExpiredReason)
	g.Expect(expired.Status.Conditions).To(ContainElement(And(HaveField("Type", tenancyv1alpha1.ExpiredCondition), HaveField("Status", metav1.ConditionTrue))))
	expectNamespaceDeleting(g, got.Status.Namespace)
	g.Eventually(func(g Gomega) {
		evs := &corev1.EventList{}
		g.Expect(k8s.List(ctx, evs, client.InNamespace(claim.Namespace))).To(Succeed())
		g.Expect(evs.Items).To(ContainElement(And(HaveField("Reason", "Expired"), HaveField("InvolvedObject.UID", claim.UID))))
	}).WithTimeout(10 * time.Second).Should(Succeed())
	// Expiry is for good: going back in time does not bring the namespace back.
	testClock.SetTime(start)
	touch(t, claim)
	waitReconciled(t, "namespaceclaim", getClaim(g, claim))
	g.Consistently(func(g Gomega) {
		c := getClaim(g, claim)
		g.Expect(c.Status.Conditions).To(ContainElement(And(HaveField("Type", tenancyv1alpha1.ReadyCondition), HaveField("Reason", tenancyv1alpha1.ExpiredReason))))
	}).WithTimeout(2 * time.Second).Should(Succeed())
}

func TestDeletedSecretIsRestoredByThePeriodicCheck(t *testing.T) {
	requireEnvtest(t)
	// Not parallel: it moves the shared clock.
	g := NewWithT(t)
	start := time.Now()
	testClock.SetTime(start)
	t.Cleanup(func() { testClock.SetTime(time.Now()) })
	class := newClass(t, func(c *tenancyv1alpha1.NamespaceClass) {
		c.Spec.Credentials.TokenTTL = &metav1.Duration{Duration: 10 * time.Hour}
		c.Spec.Credentials.RenewBefore = &metav1.Duration{Duration: time.Hour}
	})
	claim := newClaim(t, newRequesterNamespace(t, nil), withClass(class.Name), withTTL(24*time.Hour))
	got := waitFor(t, claim, tenancyv1alpha1.ReadyCondition, metav1.ConditionTrue, tenancyv1alpha1.ProvisionedReason)
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: claim.Namespace, Name: got.Status.CredentialsSecretName}}
	g.Expect(k8s.Delete(ctx, sec)).To(Succeed())

	// No watch reports a deleted Secret (the operator cannot read Secrets); in steady state the
	// record is trusted until the periodic check is due (the suite checks every hour).
	touch(t, claim)
	waitReconciled(t, "namespaceclaim", getClaim(g, claim))
	g.Consistently(func() bool {
		return isNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(sec), &corev1.Secret{}))
	}).WithTimeout(2 * time.Second).Should(BeTrue())

	testClock.SetTime(start.Add(61 * time.Minute))
	touch(t, claim)
	g.Eventually(func(g Gomega) {
		s := &corev1.Secret{}
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(sec), s)).To(Succeed())
		g.Expect(s.Data).To(HaveKey(credentials.TokenKey))
	}).WithTimeout(20 * time.Second).Should(Succeed())
	waitFor(t, claim, tenancyv1alpha1.ReadyCondition, metav1.ConditionTrue, tenancyv1alpha1.ProvisionedReason)
}
