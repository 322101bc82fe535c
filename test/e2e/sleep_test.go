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

// Sleep and wake (docs/lifecycle.md) on a whole cluster, with the RBAC the project ships: the pipeline
// (the shipped pipeline role) wakes with the plugin; the tenant (its handed token) and another tenant
// try to use sleep or wake to change what they could not change themselves.

import (
	"context"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
)

func sleepClass(t *testing.T, name string) string {
	t.Helper()
	c := &tenancyv1alpha1.NamespaceClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: tenancyv1alpha1.NamespaceClassSpec{
		ClusterRole: "edit", Naming: tenancyv1alpha1.NamingSpec{Prefix: name + "-"}, PodSecurity: tenancyv1alpha1.PodSecurityRestricted,
		Lifetime: tenancyv1alpha1.LifetimeSpec{IdleTTL: &metav1.Duration{Duration: 30 * time.Minute}, SleepAfter: &metav1.Duration{Duration: time.Minute}}}}
	NewWithT(t).Expect(admin.Create(ctx, c)).To(Succeed())
	t.Cleanup(func() { _ = admin.Delete(context.Background(), c) })
	return name
}

// restrictedDeployment is a Deployment of n replicas of restrictedPod's template.
func restrictedDeployment(ns, name string, n int32) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	p := restrictedPod(ns, name)
	return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: appsv1.DeploymentSpec{
		Replicas: ptr.To(n), Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: p.Spec}}}
}

func TestSleepAndWakeAsPipelineTenantAndAnotherTenant(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	class := sleepClass(t, "e2e-sleep")
	nsA, pipelineA := pluginPipeline(t, "sleep-a")
	nsB, pipelineB := pluginPipeline(t, "sleep-b")
	tenantAKC, tenantBKC := t.TempDir()+"/a.kubeconfig", t.TempDir()+"/b.kubeconfig"
	r := runPlugin(t, pipelineA, nil, "claim", "app", "--class", class, "--write-kubeconfig", tenantAKC)
	g.Expect(r.code).To(Equal(0), r.String())
	r = runPlugin(t, pipelineB, nil, "claim", "other", "--class", class, "--write-kubeconfig", tenantBKC)
	g.Expect(r.code).To(Equal(0), r.String())
	a := claimOf(g, nsA, "app")
	tenantA, tenantB := tenantClient(g, tenantAKC), tenantClient(g, tenantBKC)

	// The tenant runs an app and a CronJob; the Deployment's Pods (Pending: no node) are no activity
	// in a class that sleeps.
	web := restrictedDeployment(a.Status.Namespace, "web", 2)
	g.Expect(tenantA.Create(ctx, web)).To(Succeed())
	job := restrictedPod(a.Status.Namespace, "job")
	job.Spec.RestartPolicy = corev1.RestartPolicyNever
	nightly := &batchv1.CronJob{ObjectMeta: metav1.ObjectMeta{Name: "nightly", Namespace: a.Status.Namespace}, Spec: batchv1.CronJobSpec{
		Schedule: "0 3 * * *", JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: job.Spec}}}}}
	g.Expect(tenantA.Create(ctx, nightly)).To(Succeed())

	g.Eventually(func(g Gomega) {
		c := claimOf(g, nsA, "app")
		g.Expect(c.Status.Phase).To(Equal(tenancyv1alpha1.ClaimPhaseSleeping))
		g.Expect(tenantA.Get(ctx, client.ObjectKeyFromObject(web), web)).To(Succeed())
		g.Expect(*web.Spec.Replicas).To(BeZero())
		g.Expect(tenantA.Get(ctx, client.ObjectKeyFromObject(nightly), nightly)).To(Succeed())
		g.Expect(nightly.Spec.Suspend).To(Equal(ptr.To(true)))
	}).WithTimeout(3 * time.Minute).WithPolling(2 * time.Second).Should(Succeed())
	asleep := claimOf(g, nsA, "app")
	out, err := kubectl(pipelineA, "get", "nsc", "app")
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Expect(out).To(ContainSubstring("Sleeping"))

	// The tenant cannot wake it, nor rewrite the record (for example to restore 1000 replicas, or
	// objects of another namespace): the claim is not in its namespace.
	out, err = kubectl(tenantAKC, "-n", nsA, "annotate", "namespaceclaim", "app", tenancyv1alpha1.HeartbeatAnnotation+"="+time.Now().UTC().Format(time.RFC3339))
	expectForbidden(g, out, err, "the tenant waking its namespace")
	out, err = kubectl(tenantAKC, "-n", nsA, "patch", "namespaceclaim", "app", "--subresource=status", "--type=merge",
		"-p", `{"status":{"sleep":{"workloads":[{"kind":"Deployment","name":"web","uid":"x","replicas":1000}]}}}`)
	expectForbidden(g, out, err, "the tenant rewriting the sleep record")
	// Nor can the pipeline, which may patch its claim but not its status.
	out, err = kubectl(pipelineA, "patch", "namespaceclaim", "app", "--subresource=status", "--type=merge",
		"-p", `{"status":{"sleep":{"workloads":[{"kind":"Deployment","name":"web","uid":"x","replicas":1000}]}}}`)
	expectForbidden(g, out, err, "the pipeline rewriting the sleep record")
	// Another tenant cannot scale the sleeping app back up, nor wake it; another pipeline neither.
	out, err = kubectl(tenantBKC, "-n", a.Status.Namespace, "scale", "deployment", "web", "--replicas=2")
	expectForbidden(g, out, err, "another tenant scaling the app")
	g.Expect(apierrors.IsForbidden(tenantB.Get(ctx, client.ObjectKeyFromObject(a), &tenancyv1alpha1.NamespaceClaim{}))).To(BeTrue(), "another tenant reading the claim")
	out, err = kubectl(tenantBKC, "-n", nsA, "annotate", "namespaceclaim", "app", tenancyv1alpha1.HeartbeatAnnotation+"="+time.Now().UTC().Format(time.RFC3339))
	expectForbidden(g, out, err, "another tenant waking the namespace")
	out, err = kubectl(pipelineB, "-n", nsA, "annotate", "namespaceclaim", "app", tenancyv1alpha1.HeartbeatAnnotation+"="+time.Now().UTC().Format(time.RFC3339))
	expectForbidden(g, out, err, "another pipeline waking the namespace")
	g.Expect(claimOf(g, nsA, "app").Status.Sleep).To(Equal(asleep.Status.Sleep), "nothing changed the record")

	// While asleep the tenant replaces web under the same name (1 replica) and creates another
	// Deployment: the wake must scale neither.
	g.Expect(tenantA.Delete(ctx, web)).To(Succeed())
	g.Eventually(func() error { return tenantA.Get(ctx, client.ObjectKeyFromObject(web), &appsv1.Deployment{}) }).WithTimeout(30 * time.Second).ShouldNot(Succeed())
	web2 := restrictedDeployment(a.Status.Namespace, "web", 1)
	g.Expect(tenantA.Create(ctx, web2)).To(Succeed())
	extra := restrictedDeployment(a.Status.Namespace, "extra", 0)
	g.Expect(tenantA.Create(ctx, extra)).To(Succeed())

	// The pipeline wakes it with the plugin.
	r = runPlugin(t, pipelineA, nil, "wake", "app")
	g.Expect(r.code).To(Equal(0), r.String())
	woken := claimOf(g, nsA, "app")
	g.Expect(woken.Status.Sleep).To(BeNil())
	g.Expect(woken.Status.Phase).NotTo(Equal(tenancyv1alpha1.ClaimPhaseSleeping))
	g.Expect(tenantA.Get(ctx, client.ObjectKeyFromObject(web2), web2)).To(Succeed())
	g.Expect(*web2.Spec.Replicas).To(Equal(int32(1)), "the Deployment replaced under the recorded name must not get the recorded 2 replicas")
	g.Expect(tenantA.Get(ctx, client.ObjectKeyFromObject(extra), extra)).To(Succeed())
	g.Expect(*extra.Spec.Replicas).To(BeZero(), "a Deployment created while asleep is left alone")
	g.Expect(tenantA.Get(ctx, client.ObjectKeyFromObject(nightly), nightly)).To(Succeed())
	g.Expect(nightly.Spec.Suspend).To(Equal(ptr.To(false)), "the recorded CronJob (same UID) is resumed")
	// A wake never moves the hard TTL, and the idle clock restarts within the class's idle TTL.
	g.Expect(woken.Status.ExpiresAt.Time).To(Equal(a.Status.ExpiresAt.Time))
	g.Expect(woken.Status.IdleExpiresAt.Time).To(Equal(woken.Status.LastActivity.Add(30*time.Minute)), fmt.Sprintf("%+v", woken.Status))
	// Tenant B's namespace was never touched by A's wake.
	b := claimOf(g, nsB, "other")
	g.Expect(b.Status.Namespace).NotTo(Equal(a.Status.Namespace))
}
