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
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
)

// TestRunningPodKeepsTheNamespaceAndIdleOneGoes: with real Pods (docs/lifecycle.md), a Pod Running on
// the node keeps a namespace past its class's idle TTL; once it is gone, the namespace idles out.
func TestRunningPodKeepsTheNamespaceAndIdleOneGoes(t *testing.T) {
	c, _ := cluster(t)
	g := NewWithT(t)
	class := &tenancyv1alpha1.NamespaceClass{ObjectMeta: metav1.ObjectMeta{Name: "node-idle"}, Spec: tenancyv1alpha1.NamespaceClassSpec{
		ClusterRole: "edit", Naming: tenancyv1alpha1.NamingSpec{Prefix: "idle-"}, PodSecurity: tenancyv1alpha1.PodSecurityRestricted,
		Lifetime: tenancyv1alpha1.LifetimeSpec{IdleTTL: &metav1.Duration{Duration: time.Minute}},
		ResourceQuota: &corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("2"),
			corev1.ResourceLimitsCPU: resource.MustParse("100m"), corev1.ResourceLimitsMemory: resource.MustParse("64Mi")}},
	}}
	if err := c.Create(ctx, class); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Delete(context.Background(), class) })
	ns, _ := newPipeline(t, c, "idle")
	claim := &tenancyv1alpha1.NamespaceClaim{ObjectMeta: metav1.ObjectMeta{Name: "idle", Namespace: ns}, Spec: tenancyv1alpha1.NamespaceClaimSpec{ClassName: class.Name}}
	g.Expect(c.Create(ctx, claim)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(c.Get(ctx, client.ObjectKeyFromObject(claim), claim)).To(Succeed())
		g.Expect(claim.Status.Phase).To(Equal(tenancyv1alpha1.ClaimPhaseIdle))
	}, time.Minute, time.Second).Should(Succeed())

	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: claim.Status.Namespace}, Spec: corev1.PodSpec{
		AutomountServiceAccountToken: ptr.To(false),
		SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](65532),
			SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
		Containers: []corev1.Container{{Name: "web", Image: os.Getenv("NODE_WORKLOAD_IMAGE"), ImagePullPolicy: corev1.PullNever,
			Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("50m"), corev1.ResourceMemory: resource.MustParse("32Mi")}},
			SecurityContext: &corev1.SecurityContext{AllowPrivilegeEscalation: ptr.To(false), ReadOnlyRootFilesystem: ptr.To(true),
				Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}}}}}}
	g.Expect(c.Create(ctx, pod)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(c.Get(ctx, client.ObjectKeyFromObject(pod), pod)).To(Succeed())
		g.Expect(pod.Status.Phase).To(Equal(corev1.PodRunning))
		g.Expect(c.Get(ctx, client.ObjectKeyFromObject(claim), claim)).To(Succeed())
		g.Expect(claim.Status.Phase).To(Equal(tenancyv1alpha1.ClaimPhaseActive))
	}, 2*time.Minute, time.Second).Should(Succeed())

	// Past the idle TTL the Running Pod keeps the namespace.
	g.Consistently(func(g Gomega) {
		g.Expect(c.Get(ctx, client.ObjectKeyFromObject(claim), claim)).To(Succeed())
		g.Expect(claim.Status.Phase).To(Equal(tenancyv1alpha1.ClaimPhaseActive))
		g.Expect(meta.IsStatusConditionTrue(claim.Status.Conditions, tenancyv1alpha1.ReadyCondition)).To(BeTrue())
	}, 75*time.Second, 5*time.Second).Should(Succeed())

	// Without it, the namespace idles out.
	g.Expect(c.Delete(ctx, pod)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(c.Get(ctx, client.ObjectKeyFromObject(claim), claim)).To(Succeed())
		e := meta.FindStatusCondition(claim.Status.Conditions, tenancyv1alpha1.ExpiredCondition)
		g.Expect(e).NotTo(BeNil())
		g.Expect(e.Reason).To(Equal(tenancyv1alpha1.IdleExpiredReason))
	}, 3*time.Minute, 2*time.Second).Should(Succeed())
	g.Eventually(func() bool {
		return apierrors.IsNotFound(c.Get(ctx, client.ObjectKey{Name: claim.Status.Namespace}, &corev1.Namespace{}))
	}, 3*time.Minute, time.Second).Should(BeTrue())
	g.Expect(c.Delete(ctx, claim)).To(Succeed())
}
