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
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
)

func withIdle(idle, maxKeep time.Duration) classOpt {
	return func(c *tenancyv1alpha1.NamespaceClass) {
		c.Spec.Lifetime.IdleTTL = &metav1.Duration{Duration: idle}
		if maxKeep > 0 {
			c.Spec.Lifetime.MaxKeep = &metav1.Duration{Duration: maxKeep}
		}
	}
}

func withKeep(d time.Duration) claimOpt {
	return func(c *tenancyv1alpha1.NamespaceClaim) { c.Spec.Keep = &metav1.Duration{Duration: d} }
}

// newPod creates a Pod in ns. No scheduler runs in envtest, so it stays Pending: active, by definition.
func newPod(g Gomega, ns string) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: uniq("pod"), Namespace: ns}, Spec: corev1.PodSpec{
		Containers: []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10"}}}}
	g.Eventually(func() error { return k8s.Create(context.Background(), p) }).WithTimeout(20 * time.Second).Should(Succeed())
	return p
}

// heartbeat sets the claim's heartbeat annotation to at, as the requester's `kubectl nsclaim heartbeat` does.
func heartbeat(g Gomega, c *tenancyv1alpha1.NamespaceClaim, at string) {
	cur := getClaim(g, c)
	patch := client.MergeFrom(cur.DeepCopy())
	if cur.Annotations == nil {
		cur.Annotations = map[string]string{}
	}
	cur.Annotations[tenancyv1alpha1.HeartbeatAnnotation] = at
	g.Expect(k8s.Patch(context.Background(), cur, patch)).To(Succeed())
}

// waitPhase waits until the claim shows phase p, and returns it.
func waitPhase(t *testing.T, c *tenancyv1alpha1.NamespaceClaim, p tenancyv1alpha1.ClaimPhase) *tenancyv1alpha1.NamespaceClaim {
	t.Helper()
	var got *tenancyv1alpha1.NamespaceClaim
	NewWithT(t).Eventually(func(g Gomega) {
		got = getClaim(g, c)
		g.Expect(got.Status.Phase).To(Equal(p))
	}).WithTimeout(30 * time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())
	return got
}

// TestIdleTTLPodsAndHeartbeat moves the injected clock, so it does not run in parallel.
func TestIdleTTLPodsAndHeartbeat(t *testing.T) {
	requireEnvtest(t)
	g := NewWithT(t)
	start := time.Now()
	testClock.SetTime(start)
	t.Cleanup(func() { testClock.SetTime(time.Now()) })

	class := newClass(t, withIdle(time.Hour, 0))
	claim := newClaim(t, newRequesterNamespace(t, nil), withClass(class.Name), withTTL(24*time.Hour))
	waitFor(t, claim, tenancyv1alpha1.ReadyCondition, metav1.ConditionTrue, tenancyv1alpha1.ProvisionedReason)

	// Ready and nothing runs: Idle, the idle clock runs from the first observation.
	idle := waitPhase(t, claim, tenancyv1alpha1.ClaimPhaseIdle)
	ns := idle.Status.Namespace
	g.Expect(idle.Status.LastActivity).NotTo(BeNil())
	g.Expect(idle.Status.IdleExpiresAt.Time).To(Equal(idle.Status.LastActivity.Add(time.Hour)))
	g.Expect(idle.Status.PodsActive).To(BeFalse())

	// A Pod (Pending: no scheduler here) stops the clock.
	pod := newPod(g, ns)
	active := waitPhase(t, claim, tenancyv1alpha1.ClaimPhaseActive)
	g.Expect(active.Status.PodsActive).To(BeTrue())
	g.Expect(active.Status.IdleExpiresAt).To(BeNil())

	// Two hours later, past the idle TTL, the claim lives on: a Pod is active.
	testClock.SetTime(start.Add(2 * time.Hour))
	touch(t, claim)
	waitReconciled(t, "namespaceclaim", getClaim(g, claim))
	g.Expect(getClaim(g, claim).Status.Phase).To(Equal(tenancyv1alpha1.ClaimPhaseActive))
	g.Expect(meta.IsStatusConditionTrue(getClaim(g, claim).Status.Conditions, tenancyv1alpha1.ReadyCondition)).To(BeTrue())

	// The last Pod ends: the clock starts when the operator sees it.
	g.Expect(k8s.Delete(ctx, pod, client.GracePeriodSeconds(0))).To(Succeed())
	idle = waitPhase(t, claim, tenancyv1alpha1.ClaimPhaseIdle)
	g.Expect(idle.Status.LastActivity.Time).To(BeTemporally("~", start.Add(2*time.Hour), 30*time.Second))
	g.Expect(idle.Status.IdleExpiresAt.Time).To(Equal(idle.Status.LastActivity.Add(time.Hour)))

	// A heartbeat dated in the future buys nothing: it is ignored.
	testClock.SetTime(start.Add(150 * time.Minute))
	heartbeat(g, claim, start.Add(1000*time.Hour).UTC().Format(time.RFC3339))
	waitReconciled(t, "namespaceclaim", getClaim(g, claim))
	g.Expect(getClaim(g, claim).Status.LastActivity.Time).To(Equal(idle.Status.LastActivity.Time))

	// A heartbeat dated now (the clock of the pipeline may run a little ahead) restarts the idle clock.
	heartbeat(g, claim, start.Add(150*time.Minute+30*time.Second).UTC().Format(time.RFC3339))
	g.Eventually(func(g Gomega) {
		c := getClaim(g, claim)
		g.Expect(c.Status.LastActivity.Time).To(BeTemporally("~", start.Add(150*time.Minute), 30*time.Second))
		g.Expect(c.Status.IdleExpiresAt.Time).To(Equal(c.Status.LastActivity.Add(time.Hour)))
	}).WithTimeout(20 * time.Second).Should(Succeed())
	beat := getClaim(g, claim)

	// Just before the idle TTL ends, nothing happens.
	testClock.SetTime(beat.Status.IdleExpiresAt.Add(-time.Minute))
	touch(t, claim)
	waitReconciled(t, "namespaceclaim", getClaim(g, claim))
	g.Expect(getClaim(g, claim).Status.Phase).To(Equal(tenancyv1alpha1.ClaimPhaseIdle))

	// Once it has ended, the namespace is deleted; the claim says why.
	testClock.SetTime(beat.Status.IdleExpiresAt.Add(time.Minute))
	touch(t, claim)
	expired := waitFor(t, claim, tenancyv1alpha1.ExpiredCondition, metav1.ConditionTrue, tenancyv1alpha1.IdleExpiredReason)
	g.Expect(expired.Status.Phase).To(Equal(tenancyv1alpha1.ClaimPhaseExpired))
	g.Expect(meta.FindStatusCondition(expired.Status.Conditions, tenancyv1alpha1.ReadyCondition).Reason).To(Equal(tenancyv1alpha1.ExpiredReason))
	g.Expect(meta.FindStatusCondition(expired.Status.Conditions, tenancyv1alpha1.ExpiredCondition).Message).To(ContainSubstring("idle"))
	g.Eventually(func(g Gomega) { expectNamespaceDeleting(g, ns) }).WithTimeout(20 * time.Second).Should(Succeed())
	g.Eventually(func(g Gomega) {
		evs := &corev1.EventList{}
		g.Expect(k8s.List(ctx, evs, client.InNamespace(claim.Namespace))).To(Succeed())
		g.Expect(evs.Items).To(ContainElement(And(HaveField("Reason", tenancyv1alpha1.IdleExpiredReason), HaveField("InvolvedObject.UID", claim.UID))))
	}).WithTimeout(10 * time.Second).Should(Succeed())
}

// TestHardTTLWinsOverActivity moves the injected clock, so it does not run in parallel.
func TestHardTTLWinsOverActivity(t *testing.T) {
	requireEnvtest(t)
	g := NewWithT(t)
	start := time.Now()
	testClock.SetTime(start)
	t.Cleanup(func() { testClock.SetTime(time.Now()) })

	class := newClass(t, withIdle(time.Hour, 0))
	claim := newClaim(t, newRequesterNamespace(t, nil), withClass(class.Name), withTTL(30*time.Minute))
	got := waitFor(t, claim, tenancyv1alpha1.ReadyCondition, metav1.ConditionTrue, tenancyv1alpha1.ProvisionedReason)
	newPod(g, got.Status.Namespace)
	waitPhase(t, claim, tenancyv1alpha1.ClaimPhaseActive)
	heartbeat(g, claim, start.Add(25*time.Minute).UTC().Format(time.RFC3339))

	testClock.SetTime(got.CreationTimestamp.Add(31 * time.Minute))
	touch(t, claim)
	expired := waitFor(t, claim, tenancyv1alpha1.ExpiredCondition, metav1.ConditionTrue, tenancyv1alpha1.ExpiredReason)
	g.Expect(expired.Status.PodsActive).To(BeFalse())
	g.Expect(expired.Status.IdleExpiresAt).To(BeNil())
	g.Eventually(func(g Gomega) { expectNamespaceDeleting(g, got.Status.Namespace) }).WithTimeout(20 * time.Second).Should(Succeed())
}

func TestKeepIsBoundedByTheClass(t *testing.T) {
	requireEnvtest(t)
	t.Parallel()
	g := NewWithT(t)
	class := newClass(t, withIdle(time.Hour, 4*time.Hour))
	claim := newClaim(t, newRequesterNamespace(t, nil), withClass(class.Name), withKeep(5*time.Hour))

	refused := waitFor(t, claim, tenancyv1alpha1.ReadyCondition, metav1.ConditionFalse, tenancyv1alpha1.KeepExceedsMaximumReason)
	msg := meta.FindStatusCondition(refused.Status.Conditions, tenancyv1alpha1.ReadyCondition).Message
	g.Expect(msg).To(And(ContainSubstring("spec.keep 5h0m0s"), ContainSubstring("lifetime.maxKeep")))
	g.Expect(refused.Status.Namespace).To(BeEmpty())
	g.Expect(refused.Status.Phase).To(Equal(tenancyv1alpha1.ClaimPhaseRefused))

	// Within the bound, the keep replaces the class's idle TTL.
	cur := getClaim(g, claim)
	patch := client.MergeFrom(cur.DeepCopy())
	cur.Spec.Keep = &metav1.Duration{Duration: 3 * time.Hour}
	g.Expect(k8s.Patch(ctx, cur, patch)).To(Succeed())
	waitFor(t, claim, tenancyv1alpha1.ReadyCondition, metav1.ConditionTrue, tenancyv1alpha1.ProvisionedReason)
	kept := waitPhase(t, claim, tenancyv1alpha1.ClaimPhaseIdle)
	g.Expect(kept.Status.IdleExpiresAt.Time).To(Equal(kept.Status.LastActivity.Add(3 * time.Hour)))
}
