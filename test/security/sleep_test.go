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

package security

import (
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Workloads for the sleep attacks: a Deployment, a StatefulSet and a CronJob in namespace ns.
func sleepWorkloads(ns string) (*appsv1.Deployment, *appsv1.StatefulSet, *batchv1.CronJob) {
	labels := map[string]string{"app": "victim"}
	tpl := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{
		Containers: []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10"}}}}
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns}, Spec: appsv1.DeploymentSpec{
		Replicas: ptr.To[int32](2), Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: tpl}}
	s := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: ns}, Spec: appsv1.StatefulSetSpec{
		Replicas: ptr.To[int32](1), Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: tpl}}
	jobTpl := *tpl.DeepCopy()
	jobTpl.Spec.RestartPolicy = corev1.RestartPolicyNever
	c := &batchv1.CronJob{ObjectMeta: metav1.ObjectMeta{Name: "nightly", Namespace: ns}, Spec: batchv1.CronJobSpec{
		Schedule: "0 3 * * *", Suspend: ptr.To(false), JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: jobTpl}}}}
	return d, s, c
}

// scaleToZero updates obj's scale subresource to 0 replicas with the client op, as the sleep phase does.
func scaleToZero(op client.Client, obj client.Object) error {
	scale := &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: obj.GetName(), Namespace: obj.GetNamespace()}, Spec: autoscalingv1.ScaleSpec{Replicas: 0}}
	return op.SubResource("scale").Update(ctx, obj.DeepCopyObject().(client.Object), client.WithSubResourceBody(scale))
}

// settled waits until kube-controller-manager has observed the Deployment d and its resourceVersion
// has stayed the same for a second.
func settled(t *testing.T, d *appsv1.Deployment) {
	t.Helper()
	g := NewWithT(t)
	last := ""
	g.Eventually(func(g Gomega) {
		cur := &appsv1.Deployment{}
		g.Expect(admin.Get(ctx, client.ObjectKeyFromObject(d), cur)).To(Succeed())
		g.Expect(cur.Status.ObservedGeneration).To(Equal(cur.Generation))
		rv := cur.ResourceVersion
		same := rv == last
		last = rv
		g.Expect(same).To(BeTrue(), "the Deployment was written within the last second")
	}).WithTimeout(30 * time.Second).WithPolling(time.Second).Should(Succeed())
}

// TestSleepAttacksAsTheOperator: the rights sleep gives the operator's token (the scale subresource of
// Deployments and StatefulSets, patch of CronJobs) reach only namespaces nsclaim created, and there only
// replicas and spec.suspend. With the fence every one is denied and changes nothing. Without it (the
// fence-deleted run: install.yaml's RBAC alone, which is also all the RBAC the operator has under the
// previous release's fence, a fence that grants nothing) RBAC denies every one: the sleep rights are not
// in install.yaml but come with this release's fence.yaml (issue 39: upgrades never open rights).
func TestSleepAttacksAsTheOperator(t *testing.T) {
	// Without this release's fence the sleep rights are not granted at all.
	withoutFence := mode != "installed"
	victim := "victim-sleep-" + mode
	ensure(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: victim}})
	vd, vs, vc := sleepWorkloads(victim)
	for _, o := range []client.Object{vd, vs, vc} {
		ensure(t, o)
	}
	owned := ownedNamespace(t).Name
	od, _, oc := sleepWorkloads(owned)
	for _, o := range []client.Object{od, oc} {
		ensure(t, o)
	}
	// kube-controller-manager writes the fresh Deployment's status once (observedGeneration, conditions):
	// an attempt judged by the resourceVersion must not race that write.
	settled(t, vd)
	rawPatch := func(op client.Client, obj client.Object, patch string) error {
		return op.Patch(ctx, obj.DeepCopyObject().(client.Object), client.RawPatch(types.MergePatchType, []byte(patch)))
	}
	runAttacks(t, operator, []attack{{
		name:       "scale a Deployment in a foreign namespace to 0",
		rbacDenies: withoutFence,
		do:         func(op client.Client) (string, error) { return "", scaleToZero(op, vd) },
		kept:       []client.Object{vd},
	}, {
		name:       "scale a StatefulSet in a foreign namespace to 0",
		rbacDenies: withoutFence,
		do:         func(op client.Client) (string, error) { return "", scaleToZero(op, vs) },
		kept:       []client.Object{vs},
	}, {
		name:       "suspend a CronJob in a foreign namespace",
		rbacDenies: withoutFence,
		do:         func(op client.Client) (string, error) { return "", rawPatch(op, vc, `{"spec":{"suspend":true}}`) },
		kept:       []client.Object{vc},
	}, {
		name:       "change the job template of a CronJob in a foreign namespace",
		rbacDenies: withoutFence,
		do: func(op client.Client) (string, error) {
			return "", rawPatch(op, vc, `{"spec":{"jobTemplate":{"spec":{"template":{"spec":{"containers":[{"name":"c","image":"registry.k8s.io/pause:3.9"}]}}}}}}`)
		},
		kept: []client.Object{vc},
	}, {
		name:       "change the schedule of a CronJob in an owned namespace",
		rbacDenies: withoutFence,
		do: func(op client.Client) (string, error) {
			return "", rawPatch(op, oc, `{"spec":{"schedule":"* * * * *"}}`)
		},
		kept: []client.Object{oc},
	}, {
		name:       "change the job template of a CronJob in an owned namespace",
		rbacDenies: withoutFence,
		do: func(op client.Client) (string, error) {
			return "", rawPatch(op, oc, `{"spec":{"jobTemplate":{"spec":{"template":{"spec":{"containers":[{"name":"c","image":"registry.k8s.io/pause:3.9"}]}}}}}}`)
		},
		kept: []client.Object{oc},
	}, {
		name:       "change the image of a Deployment in an owned namespace",
		rbacDenies: true,
		do: func(op client.Client) (string, error) {
			return "", rawPatch(op, od, `{"spec":{"template":{"spec":{"containers":[{"name":"c","image":"registry.k8s.io/pause:3.9"}]}}}}`)
		},
		kept: []client.Object{od},
	}, {
		name:       "delete a Deployment in an owned namespace",
		rbacDenies: true,
		do:         func(op client.Client) (string, error) { return "", op.Delete(ctx, od.DeepCopy()) },
		kept:       []client.Object{od},
	}, {
		name:       "create a CronJob in an owned namespace",
		rbacDenies: true,
		do: func(op client.Client) (string, error) {
			_, _, c := sleepWorkloads(owned)
			c.Name = "pwn-" + mode
			return "", op.Create(ctx, c)
		},
		absent: []client.Object{&batchv1.CronJob{ObjectMeta: metav1.ObjectMeta{Name: "pwn-" + mode, Namespace: owned}}},
	}})
}

// TestFenceAllowsSleep: what the sleep phase writes passes the fence in a namespace nsclaim created:
// the scale subresource of a Deployment, and spec.suspend of a CronJob. Without the fence (deleted with
// the sleep role it carries) RBAC refuses both, even there.
func TestFenceAllowsSleep(t *testing.T) {
	g := NewWithT(t)
	owned := ownedNamespace(t).Name
	d, _, c := sleepWorkloads(owned)
	ensure(t, d)
	ensure(t, c)
	if mode != "installed" {
		g.Expect(apierrors.IsForbidden(scaleToZero(operator, d))).To(BeTrue(), "scale without the fence's sleep role")
		g.Expect(apierrors.IsForbidden(operator.Patch(ctx, c.DeepCopy(), client.RawPatch(types.MergePatchType, []byte(`{"spec":{"suspend":true}}`))))).
			To(BeTrue(), "suspend without the fence's sleep role")
		return
	}
	g.Expect(scaleToZero(operator, d)).To(Succeed())
	g.Expect(admin.Get(ctx, client.ObjectKeyFromObject(d), d)).To(Succeed())
	g.Expect(*d.Spec.Replicas).To(BeZero())
	g.Expect(operator.Patch(ctx, c.DeepCopy(), client.RawPatch(types.MergePatchType, []byte(`{"spec":{"suspend":true}}`)))).To(Succeed())
	g.Expect(admin.Get(ctx, client.ObjectKeyFromObject(c), c)).To(Succeed())
	g.Expect(*c.Spec.Suspend).To(BeTrue(), fmt.Sprintf("CronJob %s/%s", c.Namespace, c.Name))
}
