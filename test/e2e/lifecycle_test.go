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

package e2e

// The idle lifecycle (docs/lifecycle.md) on a whole cluster, as a pipeline identity holding only the
// shipped pipeline role and as the tenant: a Pod Pending (the local cluster has no node, so every Pod
// stays Pending, which counts as activity by definition) stops the idle clock, a heartbeat restarts it,
// an idle namespace is deleted, and neither the requester nor the tenant can go past the class's bounds.

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
	"github.com/nsclaim/nsclaim-operator/internal/cli"
)

// idleClass creates a class whose namespaces idle out after idle, kept at most maxKeep.
func idleClass(t *testing.T, name string, idle, maxKeep time.Duration) string {
	t.Helper()
	c := &tenancyv1alpha1.NamespaceClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: tenancyv1alpha1.NamespaceClassSpec{
		ClusterRole: "edit", Naming: tenancyv1alpha1.NamingSpec{Prefix: name + "-"}, PodSecurity: tenancyv1alpha1.PodSecurityRestricted,
		Lifetime: tenancyv1alpha1.LifetimeSpec{IdleTTL: &metav1.Duration{Duration: idle}, MaxKeep: &metav1.Duration{Duration: maxKeep}}}}
	NewWithT(t).Expect(admin.Create(ctx, c)).To(Succeed())
	t.Cleanup(func() { _ = admin.Delete(context.Background(), c) })
	return name
}

// tenantClient is a client acting with the kubeconfig the operator handed out.
func tenantClient(g Gomega, kubeconfig string) client.Client {
	c, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	g.Expect(err).NotTo(HaveOccurred())
	cl, err := client.New(c, client.Options{Scheme: scheme})
	g.Expect(err).NotTo(HaveOccurred())
	return cl
}

// restrictedPod is a Pod the restricted Pod Security level admits.
func restrictedPod(ns, name string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: corev1.PodSpec{
		SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](65532),
			SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
		Containers: []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10", SecurityContext: &corev1.SecurityContext{
			AllowPrivilegeEscalation: ptr.To(false), Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}}}}}}
}

// TestLifecycleIdlePodsHeartbeatAndExpiry: a Pod keeps the namespace, a heartbeat restarts the idle
// clock, and a namespace left idle for its keep is deleted.
func TestLifecycleIdlePodsHeartbeatAndExpiry(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	class := idleClass(t, "e2e-idle", time.Minute, 2*time.Minute)
	ns, pipelineKC := pluginPipeline(t, "idle")
	tenantKC := t.TempDir() + "/ns.kubeconfig"

	r := runPlugin(t, pipelineKC, nil, "claim", "idle-1", "--class", class, "--keep", "90s", "--write-kubeconfig", tenantKC)
	g.Expect(r.code).To(Equal(0), r.String())
	claim := claimOf(g, ns, "idle-1")
	tenantNS := claim.Status.Namespace
	g.Eventually(func(g Gomega) {
		c := claimOf(g, ns, "idle-1")
		g.Expect(c.Status.Phase).To(Equal(tenancyv1alpha1.ClaimPhaseIdle))
		g.Expect(c.Status.IdleExpiresAt.Time).To(Equal(c.Status.LastActivity.Add(90 * time.Second)))
	}).WithTimeout(30 * time.Second).Should(Succeed())

	// The tenant starts a Pod; it stays Pending (no node): the idle clock stops.
	tenant := tenantClient(g, tenantKC)
	pod := restrictedPod(tenantNS, "work")
	g.Expect(tenant.Create(ctx, pod)).To(Succeed())
	g.Eventually(func(g Gomega) {
		c := claimOf(g, ns, "idle-1")
		g.Expect(c.Status.Phase).To(Equal(tenancyv1alpha1.ClaimPhaseActive))
		g.Expect(c.Status.IdleExpiresAt).To(BeNil())
	}).WithTimeout(30 * time.Second).Should(Succeed())
	out, err := kubectl(pipelineKC, "get", "nsc", "idle-1")
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Expect(out).To(And(ContainSubstring("PHASE"), ContainSubstring("Active")))

	// Past the keep, the namespace is still there: a Pod is active.
	g.Consistently(func(g Gomega) {
		g.Expect(claimOf(g, ns, "idle-1").Status.Phase).To(Equal(tenancyv1alpha1.ClaimPhaseActive))
	}).WithTimeout(100 * time.Second).WithPolling(5 * time.Second).Should(Succeed())

	// A heartbeat while active prints no idle expiry.
	r = runPlugin(t, pipelineKC, nil, "heartbeat", "idle-1")
	g.Expect(r.code).To(Equal(0), r.String())
	g.Expect(r.stdout).To(Equal("\n"))

	// The Pod goes: idle again, the clock starts when the operator sees it. On a cluster with a node
	// (kind) the Pod stays Terminating until the kubelet has stopped it, and its removal then is seen
	// too: the heartbeat below comes after it, so the clock it prints is the last.
	g.Expect(tenant.Delete(ctx, pod, client.GracePeriodSeconds(0))).To(Succeed())
	g.Eventually(gone(pod)).WithTimeout(60 * time.Second).WithPolling(time.Second).Should(BeTrue())
	g.Eventually(func(g Gomega) {
		g.Expect(claimOf(g, ns, "idle-1").Status.Phase).To(Equal(tenancyv1alpha1.ClaimPhaseIdle))
	}).WithTimeout(30 * time.Second).Should(Succeed())
	r = runPlugin(t, pipelineKC, nil, "heartbeat", "idle-1")
	g.Expect(r.code).To(Equal(0), r.String())
	beat := claimOf(g, ns, "idle-1")
	g.Expect(r.stdout).To(Equal(beat.Status.IdleExpiresAt.UTC().Format(time.RFC3339) + "\n"))
	g.Expect(beat.Status.IdleExpiresAt.Time).To(Equal(beat.Status.LastActivity.Add(90 * time.Second)))

	// Left idle, it is deleted at its idle expiry, and the claim stays, expired, saying why.
	g.Eventually(func(g Gomega) {
		c := claimOf(g, ns, "idle-1")
		e := meta.FindStatusCondition(c.Status.Conditions, tenancyv1alpha1.ExpiredCondition)
		g.Expect(e).NotTo(BeNil())
		g.Expect(e.Reason).To(Equal(tenancyv1alpha1.IdleExpiredReason))
		g.Expect(c.Status.Phase).To(Equal(tenancyv1alpha1.ClaimPhaseExpired))
	}).WithTimeout(3 * time.Minute).WithPolling(2 * time.Second).Should(Succeed())
	g.Eventually(gone(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: tenantNS}})).WithTimeout(90 * time.Second).WithPolling(time.Second).Should(BeTrue())
	r = runPlugin(t, pipelineKC, nil, "heartbeat", "idle-1")
	g.Expect(r.code).To(Equal(cli.ExitRefused), "an expired claim cannot be kept: %s", r)
}

// TestLifecycleBoundsForRequesterAndTenant: the requester cannot keep beyond the class nor buy idle time
// with a heartbeat dated ahead, and the tenant cannot send heartbeats at all (the claim is not in its
// namespace).
func TestLifecycleBoundsForRequesterAndTenant(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	class := idleClass(t, "e2e-bounds", 10*time.Minute, 20*time.Minute)
	ns, pipelineKC := pluginPipeline(t, "bounds")

	r := runPlugin(t, pipelineKC, nil, "claim", "too-long", "--class", class, "--keep", "21m")
	g.Expect(r.code).To(Equal(cli.ExitRefused), r.String())
	g.Expect(r.stderr).To(And(ContainSubstring(tenancyv1alpha1.KeepExceedsMaximumReason), ContainSubstring("spec.keep"), ContainSubstring("lifetime.maxKeep")))
	g.Expect(claimOf(g, ns, "too-long").Status.Namespace).To(BeEmpty())

	tenantKC := t.TempDir() + "/ns.kubeconfig"
	r = runPlugin(t, pipelineKC, nil, "claim", "kept", "--class", class, "--keep", "20m", "--write-kubeconfig", tenantKC)
	g.Expect(r.code).To(Equal(0), r.String())
	var first *tenancyv1alpha1.NamespaceClaim
	g.Eventually(func(g Gomega) {
		first = claimOf(g, ns, "kept")
		g.Expect(first.Status.IdleExpiresAt).NotTo(BeNil())
	}).WithTimeout(30 * time.Second).Should(Succeed())

	// The tenant cannot touch the claim, heartbeat or keep.
	out, err := kubectl(tenantKC, "-n", ns, "annotate", "namespaceclaim", "kept", tenancyv1alpha1.HeartbeatAnnotation+"=2099-01-01T00:00:00Z")
	expectForbidden(g, out, err, "the tenant sending a heartbeat")
	out, err = kubectl(tenantKC, "-n", ns, "patch", "namespaceclaim", "kept", "--type=merge", "-p", `{"spec":{"keep":"8760h"}}`)
	expectForbidden(g, out, err, "the tenant raising keep")

	// The requester may raise keep only within the class; beyond it, the claim is refused and keeps its namespace.
	out, err = kubectl(pipelineKC, "patch", "namespaceclaim", "kept", "--type=merge", "-p", `{"spec":{"keep":"8760h"}}`)
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Eventually(func(g Gomega) {
		c := claimOf(g, ns, "kept")
		rc := meta.FindStatusCondition(c.Status.Conditions, tenancyv1alpha1.ReadyCondition)
		g.Expect(rc.Reason).To(Equal(tenancyv1alpha1.KeepExceedsMaximumReason))
		g.Expect(c.Status.IdleExpiresAt.Time).To(Equal(c.Status.LastActivity.Add(10*time.Minute)), "the class's idleTTL applies, not the refused keep")
	}).WithTimeout(30 * time.Second).Should(Succeed())
	out, err = kubectl(pipelineKC, "patch", "namespaceclaim", "kept", "--type=merge", "-p", `{"spec":{"keep":"20m"}}`)
	g.Expect(err).NotTo(HaveOccurred(), out)

	// A heartbeat dated years ahead buys nothing: the idle expiry stays within keep of now.
	out, err = kubectl(pipelineKC, "annotate", "--overwrite", "namespaceclaim", "kept", tenancyv1alpha1.HeartbeatAnnotation+"=2099-01-01T00:00:00Z")
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Eventually(func(g Gomega) {
		c := claimOf(g, ns, "kept")
		g.Expect(meta.IsStatusConditionTrue(c.Status.Conditions, tenancyv1alpha1.ReadyCondition)).To(BeTrue())
		g.Expect(c.Status.IdleExpiresAt.Time).To(Equal(c.Status.LastActivity.Add(20 * time.Minute)))
	}).WithTimeout(30 * time.Second).Should(Succeed())
	g.Expect(claimOf(g, ns, "kept").Status.IdleExpiresAt.Time).To(BeTemporally("<=", time.Now().Add(21*time.Minute)))
	// Nor does it move the hard TTL.
	g.Expect(claimOf(g, ns, "kept").Status.ExpiresAt.Time).To(Equal(first.Status.ExpiresAt.Time))
}
