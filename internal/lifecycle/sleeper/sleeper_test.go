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

package sleeper

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
	"github.com/nsclaim/nsclaim-operator/internal/testenv"
)

// replicas reads the scale of Deployment name in ns from the API server.
func replicas(ctx context.Context, g Gomega, c client.Client, ns, name string) int32 {
	scale := &autoscalingv1.Scale{}
	g.Expect(c.SubResource("scale").Get(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}, scale)).To(Succeed())
	return scale.Spec.Replicas
}

// suspended reads spec.suspend of CronJob name in ns from the API server.
func suspended(ctx context.Context, g Gomega, c client.Client, ns, name string) bool {
	cj := &batchv1.CronJob{}
	g.Expect(c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, cj)).To(Succeed())
	return ptr.Deref(cj.Spec.Suspend, false)
}

// TestSleepHoldWake runs a sleep, a hold and a wake against a real API server: the sleep is recorded in
// the claim's status on the server before the Deployment is scaled to 0 and the CronJob suspended, a
// hold scales down what was scaled up again, and a wake restores the recorded replicas and resumes the
// CronJob.
func TestSleepHoldWake(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	cfg := testenv.Start(t, &envtest.Environment{CRDDirectoryPaths: []string{filepath.Join("..", "..", "..", "config", "crd", "bases")}, ErrorIfCRDPathMissing: true})
	scheme := runtime.NewScheme()
	g.Expect(clientgoscheme.AddToScheme(scheme)).To(Succeed())
	g.Expect(tenancyv1alpha1.AddToScheme(scheme)).To(Succeed())
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	g.Expect(err).NotTo(HaveOccurred())

	const ns = "team-sleepy"
	g.Expect(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	labels := map[string]string{"app": "web"}
	pod := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
	g.Expect(c.Create(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](2), Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: pod}})).To(Succeed())
	job := batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
		RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}}}
	g.Expect(c.Create(ctx, &batchv1.CronJob{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "nightly"},
		Spec: batchv1.CronJobSpec{Schedule: "0 3 * * *", JobTemplate: job}})).To(Succeed())
	claim := &tenancyv1alpha1.NamespaceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "sleepy"}}
	g.Expect(c.Create(ctx, claim)).To(Succeed())

	s := Sleeper{Client: c, APIReader: c}
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	record, slept, err := s.Sleep(ctx, claim, ns, now)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(slept).To(BeTrue())
	g.Expect(record).To(HaveLen(2))
	onServer := &tenancyv1alpha1.NamespaceClaim{}
	g.Expect(c.Get(ctx, client.ObjectKeyFromObject(claim), onServer)).To(Succeed())
	g.Expect(onServer.Status.Sleep).NotTo(BeNil(), "the sleep is recorded on the server by Sleep itself")
	g.Expect(onServer.Status.Sleep.Since.Time).To(BeTemporally("==", now))
	g.Expect(onServer.Status.Sleep.Workloads).To(HaveLen(2))
	g.Expect(replicas(ctx, g, c, ns, "web")).To(BeZero())
	g.Expect(suspended(ctx, g, c, ns, "nightly")).To(BeTrue())

	// Something scales the Deployment up again: a hold scales it down, and only it.
	scale := &autoscalingv1.Scale{}
	g.Expect(c.SubResource("scale").Get(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}}, scale)).To(Succeed())
	scale.Spec.Replicas = 3
	g.Expect(c.SubResource("scale").Update(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}}, client.WithSubResourceBody(scale))).To(Succeed())
	held, n, err := s.Hold(ctx, ns, claim.Status.Sleep.Workloads)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(n).To(Equal(1))
	g.Expect(replicas(ctx, g, c, ns, "web")).To(BeZero())

	woken, err := s.Wake(ctx, ns, held)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(woken).To(Equal(Woken{Restored: 2}))
	g.Expect(replicas(ctx, g, c, ns, "web")).To(Equal(int32(2)))
	g.Expect(suspended(ctx, g, c, ns, "nightly")).To(BeFalse())
}
