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
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
)

func withSleepAfter(d time.Duration) classOpt {
	return func(c *tenancyv1alpha1.NamespaceClass) { c.Spec.Lifetime.SleepAfter = &metav1.Duration{Duration: d} }
}

var sleepLabels = map[string]string{"app": "sleepy"}

func podTemplate() corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: sleepLabels}, Spec: corev1.PodSpec{
		Containers: []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10"}}}}
}

func newDeployment(g Gomega, ns, name string, replicas int32) *appsv1.Deployment {
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: appsv1.DeploymentSpec{
		Replicas: ptr.To(replicas), Selector: &metav1.LabelSelector{MatchLabels: sleepLabels}, Template: podTemplate()}}
	g.Expect(k8s.Create(context.Background(), d)).To(Succeed())
	return d
}

func newStatefulSet(g Gomega, ns, name string, replicas int32) *appsv1.StatefulSet {
	s := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: appsv1.StatefulSetSpec{
		Replicas: ptr.To(replicas), Selector: &metav1.LabelSelector{MatchLabels: sleepLabels}, Template: podTemplate()}}
	g.Expect(k8s.Create(context.Background(), s)).To(Succeed())
	return s
}

func newCronJob(g Gomega, ns, name string, suspend bool) *batchv1.CronJob {
	tpl := podTemplate()
	tpl.Spec.RestartPolicy = corev1.RestartPolicyNever
	c := &batchv1.CronJob{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: batchv1.CronJobSpec{
		Schedule: "0 3 * * *", Suspend: ptr.To(suspend), JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: tpl}}}}
	g.Expect(k8s.Create(context.Background(), c)).To(Succeed())
	return c
}

func replicasOf(g Gomega, obj client.Object) int32 {
	g.Expect(k8s.Get(context.Background(), client.ObjectKeyFromObject(obj), obj)).To(Succeed())
	switch o := obj.(type) {
	case *appsv1.Deployment:
		return *o.Spec.Replicas
	case *appsv1.StatefulSet:
		return *o.Spec.Replicas
	}
	panic("not scalable")
}

func suspendedOf(g Gomega, c *batchv1.CronJob) bool {
	g.Expect(k8s.Get(context.Background(), client.ObjectKeyFromObject(c), c)).To(Succeed())
	return c.Spec.Suspend != nil && *c.Spec.Suspend
}

func expectClaimEvent(t *testing.T, claim *tenancyv1alpha1.NamespaceClaim, reason string) {
	t.Helper()
	NewWithT(t).Eventually(func(g Gomega) {
		evs := &corev1.EventList{}
		g.Expect(k8s.List(ctx, evs, client.InNamespace(claim.Namespace))).To(Succeed())
		g.Expect(evs.Items).To(ContainElement(And(HaveField("Reason", reason), HaveField("InvolvedObject.UID", claim.UID))))
	}).WithTimeout(10 * time.Second).Should(Succeed())
}

// TestSleepAndWake moves the injected clock, so it does not run in parallel. Through a real API server
// (no Deployment controller runs here: the objects' replica counts are what the test reads): an idle
// namespace sleeps after sleepAfter, a GitOps-style scale-up is held down, Pods do not wake it, and a
// heartbeat restores exactly the recorded objects, by UID.
func TestSleepAndWake(t *testing.T) {
	requireEnvtest(t)
	g := NewWithT(t)
	start := time.Now()
	testClock.SetTime(start)
	t.Cleanup(func() { testClock.SetTime(time.Now()) })

	class := newClass(t, withIdle(4*time.Hour, 0), withSleepAfter(30*time.Minute))
	claim := newClaim(t, newRequesterNamespace(t, nil), withClass(class.Name), withTTL(24*time.Hour))
	waitFor(t, claim, tenancyv1alpha1.ReadyCondition, metav1.ConditionTrue, tenancyv1alpha1.ProvisionedReason)
	idle := waitPhase(t, claim, tenancyv1alpha1.ClaimPhaseIdle)
	ns := idle.Status.Namespace

	web := newDeployment(g, ns, "web", 3)
	off := newDeployment(g, ns, "off", 0)
	db := newStatefulSet(g, ns, "db", 2)
	nightly := newCronJob(g, ns, "nightly", false)
	paused := newCronJob(g, ns, "paused", true)

	// A running Deployment's Pod (here: a Pod its ReplicaSet controls; no ReplicaSet controller runs) is
	// no activity in a class that sleeps: it is what the sleep stops.
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "web-5d8f7c9b6", Namespace: ns}, Spec: appsv1.ReplicaSetSpec{
		Replicas: ptr.To[int32](1), Selector: &metav1.LabelSelector{MatchLabels: sleepLabels}, Template: podTemplate()}}
	g.Expect(k8s.Create(ctx, rs)).To(Succeed())
	owned := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-5d8f7c9b6-abcde", Namespace: ns, Labels: sleepLabels,
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rs.Name, UID: rs.UID, Controller: ptr.To(true)}}},
		Spec: podTemplate().Spec}
	g.Eventually(func() error { return k8s.Create(ctx, owned) }).WithTimeout(20 * time.Second).Should(Succeed())
	touch(t, claim)
	waitReconciled(t, "namespaceclaim", getClaim(g, claim))
	g.Expect(getClaim(g, claim).Status.PodsActive).To(BeFalse())
	g.Expect(getClaim(g, claim).Status.Phase).To(Equal(tenancyv1alpha1.ClaimPhaseIdle))

	// Just before sleepAfter: awake.
	testClock.SetTime(idle.Status.LastActivity.Add(29 * time.Minute))
	touch(t, claim)
	waitReconciled(t, "namespaceclaim", getClaim(g, claim))
	g.Expect(getClaim(g, claim).Status.Phase).To(Equal(tenancyv1alpha1.ClaimPhaseIdle))
	g.Expect(replicasOf(g, web)).To(Equal(int32(3)))

	// Past it: asleep; what ran is recorded by UID and scaled down or suspended, the rest untouched.
	testClock.SetTime(idle.Status.LastActivity.Add(31 * time.Minute))
	touch(t, claim)
	asleep := waitPhase(t, claim, tenancyv1alpha1.ClaimPhaseSleeping)
	g.Expect(asleep.Status.Sleep).NotTo(BeNil())
	// Each with the generation the sleep's own write left (created at 1, one spec change: 2).
	g.Expect(asleep.Status.Sleep.Workloads).To(Equal([]tenancyv1alpha1.SleptWorkload{
		{Kind: tenancyv1alpha1.WorkloadCronJob, Name: "nightly", UID: string(nightly.UID), Generation: 2},
		{Kind: tenancyv1alpha1.WorkloadDeployment, Name: "web", UID: string(web.UID), Replicas: ptr.To[int32](3), Generation: 2},
		{Kind: tenancyv1alpha1.WorkloadStatefulSet, Name: "db", UID: string(db.UID), Replicas: ptr.To[int32](2), Generation: 2},
	}))
	g.Expect(meta.IsStatusConditionTrue(asleep.Status.Conditions, tenancyv1alpha1.ReadyCondition)).To(BeTrue())
	g.Eventually(func(g Gomega) {
		g.Expect(replicasOf(g, web)).To(BeZero())
		g.Expect(replicasOf(g, db)).To(BeZero())
		g.Expect(suspendedOf(g, nightly)).To(BeTrue())
	}).WithTimeout(10 * time.Second).Should(Succeed())
	g.Expect(replicasOf(g, off)).To(BeZero())
	g.Expect(suspendedOf(g, paused)).To(BeTrue())
	expectClaimEvent(t, claim, tenancyv1alpha1.SleptReason)

	// A GitOps controller restores web's replicas: the next resync scales it down again, counts it, and
	// records the generation its own write left (the wake below restores web: the hold's write is the
	// operator's own, like the sleep's).
	web.Spec.Replicas = ptr.To[int32](3)
	g.Expect(k8s.Update(ctx, web)).To(Succeed())
	touch(t, claim)
	g.Eventually(func(g Gomega) {
		g.Expect(replicasOf(g, web)).To(BeZero())
		g.Expect(getClaim(g, claim).Status.Sleep.Reapplied).To(Equal(int32(1)))
	}).WithTimeout(10 * time.Second).Should(Succeed())
	expectClaimEvent(t, claim, tenancyv1alpha1.SleepReappliedReason)

	// A Pod started while asleep is no activity: the namespace sleeps on.
	newPod(g, ns)
	touch(t, claim)
	waitReconciled(t, "namespaceclaim", getClaim(g, claim))
	g.Expect(getClaim(g, claim).Status.Phase).To(Equal(tenancyv1alpha1.ClaimPhaseSleeping))
	g.Expect(getClaim(g, claim).Status.PodsActive).To(BeFalse())

	// While asleep, db is replaced under the same name (another UID, 0 replicas) and a Deployment is
	// created: a wake leaves both alone.
	g.Expect(k8s.Delete(ctx, db)).To(Succeed())
	g.Eventually(func() error { return k8s.Get(ctx, client.ObjectKeyFromObject(db), &appsv1.StatefulSet{}) }).WithTimeout(10 * time.Second).ShouldNot(Succeed())
	db2 := newStatefulSet(g, ns, "db", 0)
	later := newDeployment(g, ns, "later", 2)

	// A heartbeat from before the sleep wakes nothing; one sent now does.
	heartbeat(g, claim, idle.Status.LastActivity.Add(time.Minute).UTC().Format(time.RFC3339))
	waitReconciled(t, "namespaceclaim", getClaim(g, claim))
	g.Expect(getClaim(g, claim).Status.Phase).To(Equal(tenancyv1alpha1.ClaimPhaseSleeping))
	testClock.SetTime(idle.Status.LastActivity.Add(2 * time.Hour))
	heartbeat(g, claim, idle.Status.LastActivity.Add(2*time.Hour).UTC().Format(time.RFC3339))
	g.Eventually(func(g Gomega) {
		c := getClaim(g, claim)
		g.Expect(c.Status.Sleep).To(BeNil())
		g.Expect(c.Status.Phase).To(Or(Equal(tenancyv1alpha1.ClaimPhaseIdle), Equal(tenancyv1alpha1.ClaimPhaseActive)))
	}).WithTimeout(20 * time.Second).Should(Succeed())
	g.Expect(replicasOf(g, web)).To(Equal(int32(3)))
	g.Expect(suspendedOf(g, nightly)).To(BeFalse())
	g.Expect(replicasOf(g, db2)).To(BeZero(), "a StatefulSet replaced under the recorded name must not be scaled")
	g.Expect(replicasOf(g, later)).To(Equal(int32(2)))
	g.Expect(replicasOf(g, off)).To(BeZero())
	g.Expect(suspendedOf(g, paused)).To(BeTrue())
	expectClaimEvent(t, claim, tenancyv1alpha1.WokeReason)

	// Awake, the bare Pod started while asleep is work again: Active, and no sleep while it runs.
	active := waitPhase(t, claim, tenancyv1alpha1.ClaimPhaseActive)
	testClock.SetTime(active.Status.LastActivity.Add(3 * time.Hour))
	touch(t, claim)
	waitReconciled(t, "namespaceclaim", getClaim(g, claim))
	g.Expect(getClaim(g, claim).Status.Phase).To(Equal(tenancyv1alpha1.ClaimPhaseActive))
	g.Expect(replicasOf(g, web)).To(Equal(int32(3)))
}

type gate struct {
	checked bool
	problem string
}

func (g gate) FenceProblem() (bool, string) { return g.checked, g.problem }

type currentGate struct {
	gate
	current bool
}

func (g currentGate) FenceIsCurrent() bool { return g.current }

// TestFenceCoversSleep: sleep and wake write only under this release's fence (or with the fence not
// required at all); the previous release's fence, accepted during an upgrade, does not cover them.
func TestFenceCoversSleep(t *testing.T) {
	for _, tc := range []struct {
		name string
		gate FenceGate
		want bool
	}{
		{name: "fence not required", want: true},
		{name: "not checked yet", gate: gate{}, want: false},
		{name: "broken", gate: gate{checked: true, problem: "missing"}, want: false},
		{name: "intact (gate without release)", gate: gate{checked: true}, want: true},
		{name: "the previous release's fence", gate: currentGate{gate: gate{checked: true}, current: false}, want: false},
		{name: "this release's fence", gate: currentGate{gate: gate{checked: true}, current: true}, want: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &NamespaceClaimReconciler{Fence: tc.gate}
			if got := r.fenceCoversSleep(); got != tc.want {
				t.Errorf("fenceCoversSleep = %t, want %t", got, tc.want)
			}
		})
	}
}
