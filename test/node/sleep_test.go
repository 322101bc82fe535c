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

package node

import (
	"context"
	"os"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
)

// TestSleepStopsPodsAndWakeRestoresThem: with real Pods and the operator as a Pod behind the shipped
// fence (docs/lifecycle.md), a namespace whose only Pods are a running Deployment's sleeps after the
// class's sleepAfter: the Deployment is scaled to 0 and its Pods go; a heartbeat wakes it: the recorded
// replica count comes back and the Pods run again.
func TestSleepStopsPodsAndWakeRestoresThem(t *testing.T) {
	c, _ := cluster(t)
	g := NewWithT(t)
	class := &tenancyv1alpha1.NamespaceClass{ObjectMeta: metav1.ObjectMeta{Name: "node-sleep"}, Spec: tenancyv1alpha1.NamespaceClassSpec{
		ClusterRole: "edit", Naming: tenancyv1alpha1.NamingSpec{Prefix: "sleep-"}, PodSecurity: tenancyv1alpha1.PodSecurityRestricted,
		Lifetime: tenancyv1alpha1.LifetimeSpec{IdleTTL: &metav1.Duration{Duration: 30 * time.Minute}, SleepAfter: &metav1.Duration{Duration: time.Minute}},
		ResourceQuota: &corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("3"),
			corev1.ResourceLimitsCPU: resource.MustParse("200m"), corev1.ResourceLimitsMemory: resource.MustParse("128Mi")}},
	}}
	if err := c.Create(ctx, class); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Delete(context.Background(), class) })
	ns, _ := newPipeline(t, c, "sleep")
	claim := &tenancyv1alpha1.NamespaceClaim{ObjectMeta: metav1.ObjectMeta{Name: "sleep", Namespace: ns}, Spec: tenancyv1alpha1.NamespaceClaimSpec{ClassName: class.Name}}
	g.Expect(c.Create(ctx, claim)).To(Succeed())
	t.Cleanup(func() { _ = c.Delete(context.Background(), claim) })
	g.Eventually(func(g Gomega) {
		g.Expect(c.Get(ctx, client.ObjectKeyFromObject(claim), claim)).To(Succeed())
		g.Expect(claim.Status.Phase).To(Equal(tenancyv1alpha1.ClaimPhaseIdle))
	}, time.Minute, time.Second).Should(Succeed())

	labels := map[string]string{"app": "web"}
	web := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: claim.Status.Namespace}, Spec: appsv1.DeploymentSpec{
		Replicas: ptr.To[int32](2), Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{
			AutomountServiceAccountToken: ptr.To(false),
			SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](65532),
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
			Containers: []corev1.Container{{Name: "web", Image: os.Getenv("NODE_WORKLOAD_IMAGE"), ImagePullPolicy: corev1.PullNever,
				Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("50m"), corev1.ResourceMemory: resource.MustParse("32Mi")}},
				SecurityContext: &corev1.SecurityContext{AllowPrivilegeEscalation: ptr.To(false), ReadOnlyRootFilesystem: ptr.To(true),
					Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}}}}}}}}
	g.Expect(c.Create(ctx, web)).To(Succeed())
	running := func(g Gomega) int {
		pods := &corev1.PodList{}
		g.Expect(c.List(ctx, pods, client.InNamespace(web.Namespace), client.MatchingLabels(labels))).To(Succeed())
		n := 0
		for _, p := range pods.Items {
			if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
				n++
			}
		}
		return n
	}
	g.Eventually(running, 2*time.Minute, time.Second).Should(Equal(2))

	// The Deployment's Pods are no activity in a class that sleeps: after sleepAfter it sleeps.
	g.Eventually(func(g Gomega) {
		g.Expect(c.Get(ctx, client.ObjectKeyFromObject(claim), claim)).To(Succeed())
		g.Expect(claim.Status.Phase).To(Equal(tenancyv1alpha1.ClaimPhaseSleeping))
	}, 3*time.Minute, 2*time.Second).Should(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(c.Get(ctx, client.ObjectKeyFromObject(web), web)).To(Succeed())
		g.Expect(*web.Spec.Replicas).To(BeZero())
		// Recorded with the generation the sleep's own write left (issue 39: a wake restores only that).
		g.Expect(c.Get(ctx, client.ObjectKeyFromObject(claim), claim)).To(Succeed())
		g.Expect(claim.Status.Sleep.Workloads).To(Equal([]tenancyv1alpha1.SleptWorkload{
			{Kind: tenancyv1alpha1.WorkloadDeployment, Name: "web", UID: string(web.UID), Replicas: ptr.To[int32](2), Generation: web.Generation}}))
		pods := &corev1.PodList{}
		g.Expect(c.List(ctx, pods, client.InNamespace(web.Namespace), client.MatchingLabels(labels))).To(Succeed())
		g.Expect(pods.Items).To(BeEmpty())
	}, 2*time.Minute, time.Second).Should(Succeed())

	// A heartbeat (what kubectl nsclaim wake sends) wakes it: 2 replicas, running again.
	patch := []byte(`{"metadata":{"annotations":{"` + tenancyv1alpha1.HeartbeatAnnotation + `":"` + time.Now().UTC().Format(time.RFC3339) + `"}}}`)
	g.Expect(c.Patch(ctx, claim, client.RawPatch(types.MergePatchType, patch))).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(c.Get(ctx, client.ObjectKeyFromObject(claim), claim)).To(Succeed())
		g.Expect(claim.Status.Sleep).To(BeNil())
		g.Expect(claim.Status.Phase).To(Equal(tenancyv1alpha1.ClaimPhaseIdle))
		g.Expect(c.Get(ctx, client.ObjectKeyFromObject(web), web)).To(Succeed())
		g.Expect(*web.Spec.Replicas).To(Equal(int32(2)))
	}, time.Minute, time.Second).Should(Succeed())
	g.Eventually(running, 2*time.Minute, time.Second).Should(Equal(2))
}
