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
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
)

// TestWakeLeavesAdminHoldAlone moves the injected clock, so it does not run in parallel. Issue 39:
// after a namespace fell asleep, a cluster admin (the suite's admin client) holds a Deployment at 0
// and a CronJob suspended while an incident is handled: the tenant's GitOps sync had restored them, and
// the admin scaled the Deployment back to 0 and suspended the CronJob again before the operator's
// resync. The requester's wake must leave both as the admin left them (it restored them before), and
// still restore everything that is as the sleep left it.
func TestWakeLeavesAdminHoldAlone(t *testing.T) {
	requireEnvtest(t)
	g := NewWithT(t)
	testClock.SetTime(time.Now())
	t.Cleanup(func() { testClock.SetTime(time.Now()) })

	class := newClass(t, withIdle(4*time.Hour, 0), withSleepAfter(30*time.Minute))
	claim := newClaim(t, newRequesterNamespace(t, nil), withClass(class.Name), withTTL(24*time.Hour))
	waitFor(t, claim, tenancyv1alpha1.ReadyCondition, metav1.ConditionTrue, tenancyv1alpha1.ProvisionedReason)
	idle := waitPhase(t, claim, tenancyv1alpha1.ClaimPhaseIdle)
	ns := idle.Status.Namespace

	held := newDeployment(g, ns, "held", 2)
	web := newDeployment(g, ns, "web", 2)
	db := newStatefulSet(g, ns, "db", 1)
	heldJob := newCronJob(g, ns, "held-job", false)
	report := newCronJob(g, ns, "report", false)

	testClock.SetTime(idle.Status.LastActivity.Add(31 * time.Minute))
	touch(t, claim)
	asleep := waitPhase(t, claim, tenancyv1alpha1.ClaimPhaseSleeping)
	g.Expect(asleep.Status.Sleep.Workloads).To(HaveLen(5))
	g.Eventually(func(g Gomega) {
		for _, w := range getClaim(g, claim).Status.Sleep.Workloads {
			g.Expect(w.Generation).To(Equal(int64(2)), "%s %s: the generation the sleep's own write left", w.Kind, w.Name)
		}
		g.Expect(replicasOf(g, held)).To(BeZero())
		g.Expect(suspendedOf(g, heldJob)).To(BeTrue())
	}).WithTimeout(10 * time.Second).Should(Succeed())

	// The tenant's GitOps sync restores held and resumes held-job; the admin, seconds later and before
	// the operator's resync, scales held back to 0 and suspends held-job: both end at the value the
	// sleep wrote, but not by the sleep's write.
	setReplicas(g, held, 2)
	setSuspend(g, heldJob, false)
	setReplicas(g, held, 0)
	setSuspend(g, heldJob, true)
	// A reconcile while asleep holds nothing (both are at 0 or suspended) and records nothing new.
	touch(t, claim)
	waitReconciled(t, "namespaceclaim", getClaim(g, claim))
	g.Expect(getClaim(g, claim).Status.Sleep.Reapplied).To(BeZero())

	testClock.SetTime(idle.Status.LastActivity.Add(2 * time.Hour))
	heartbeat(g, claim, idle.Status.LastActivity.Add(2*time.Hour).UTC().Format(time.RFC3339))
	g.Eventually(func(g Gomega) {
		g.Expect(getClaim(g, claim).Status.Sleep).To(BeNil())
	}).WithTimeout(20 * time.Second).Should(Succeed())
	// A normal wake: what the sleep left is restored.
	g.Expect(replicasOf(g, web)).To(Equal(int32(2)))
	g.Expect(replicasOf(g, db)).To(Equal(int32(1)))
	g.Expect(suspendedOf(g, report)).To(BeFalse())
	// The admin's hold is left alone.
	g.Expect(replicasOf(g, held)).To(BeZero(), "the wake scaled up a Deployment an admin held at 0 while asleep")
	g.Expect(suspendedOf(g, heldJob)).To(BeTrue(), "the wake resumed a CronJob an admin suspended while asleep")
	g.Eventually(func(g Gomega) {
		evs := &corev1.EventList{}
		g.Expect(k8s.List(ctx, evs, client.InNamespace(claim.Namespace))).To(Succeed())
		g.Expect(evs.Items).To(ContainElement(And(HaveField("Reason", tenancyv1alpha1.WokeReason), HaveField("InvolvedObject.UID", claim.UID),
			HaveField("Message", ContainSubstring("3 object(s) restored")),
			HaveField("Message", ContainSubstring("2 recorded object(s) were changed by someone else while asleep")))))
	}).WithTimeout(10 * time.Second).Should(Succeed())
}

// setReplicas writes d's spec.replicas as a client other than the operator would (read, change,
// update; again on a conflict).
func setReplicas(g Gomega, d *appsv1.Deployment, n int32) {
	g.Eventually(func() error {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(d), d); err != nil {
			return err
		}
		d.Spec.Replicas = ptr.To(n)
		return k8s.Update(ctx, d)
	}).WithTimeout(10 * time.Second).Should(Succeed())
}

// setSuspend writes c's spec.suspend the same way.
func setSuspend(g Gomega, c *batchv1.CronJob, suspend bool) {
	g.Eventually(func() error {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(c), c); err != nil {
			return err
		}
		c.Spec.Suspend = ptr.To(suspend)
		return k8s.Update(ctx, c)
	}).WithTimeout(10 * time.Second).Should(Succeed())
}
