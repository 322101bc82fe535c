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

package watchcache

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/nsclaim/nsclaim-operator/internal/kube"
	"github.com/nsclaim/nsclaim-operator/internal/testenv"
)

// activePodsEnv starts a control plane of its own (kube-apiserver and etcd) for one test and returns a
// client of it. Nothing runs kube-controller-manager here, so newNamespace makes the `default`
// ServiceAccount the Pods' admission asks for.
func activePodsEnv(t *testing.T) (*rest.Config, client.Client) {
	t.Helper()
	cfg := testenv.Start(t, &envtest.Environment{})
	scheme := k8sruntime.NewScheme()
	NewWithT(t).Expect(clientgoscheme.AddToScheme(scheme)).To(Succeed())
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	return cfg, c
}

// newNamespace creates a namespace with its `default` ServiceAccount.
func newNamespace(t *testing.T, c client.Client) string {
	t.Helper()
	g := NewWithT(t)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "pods-"}}
	g.Expect(c.Create(context.Background(), ns)).To(Succeed())
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: kube.DefaultServiceAccount, Namespace: ns.Name}}
	g.Expect(c.Create(context.Background(), sa)).To(Succeed())
	return ns.Name
}

// activePodsCache starts an ActivePods cache of its own and waits for it to sync.
func activePodsCache(t *testing.T, cfg *rest.Config, c client.Client) *ActivePods {
	t.Helper()
	p, err := NewActivePods(cfg, c.Scheme())
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	cctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() { _ = p.Start(cctx) }()
	NewWithT(t).Expect(p.cache.WaitForCacheSync(cctx)).To(BeTrue())
	return p
}

// podIn is a Pod in ns, with the labels a Deployment's Pod carries (no owner reference: the garbage
// collector would delete a Pod whose owner does not exist).
func podIn(ns, name string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns,
		Labels:      map[string]string{"app": "web", "pod-template-hash": "5d8f7c9b6"},
		Annotations: map[string]string{"kubectl.kubernetes.io/restartedAt": "2026-11-26T10:00:00Z"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10"}}}}
}

func createPod(g Gomega, k8s client.Client, p *corev1.Pod) {
	g.Expect(k8s.Create(context.Background(), p)).To(Succeed())
}

func TestActivePodsCountsPendingAndRunningOnly(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	g := NewWithT(t)
	cfg, k8s := activePodsEnv(t)
	ns := newNamespace(t, k8s)
	pods := activePodsCache(t, cfg, k8s)
	a, b := podIn(ns, "a"), podIn(ns, "b")
	createPod(g, k8s, a)
	createPod(g, k8s, b)
	count := func() int {
		n, err := pods.Count(ctx, ns)
		g.Expect(err).NotTo(HaveOccurred())
		return n
	}
	g.Eventually(count).WithTimeout(10 * time.Second).Should(Equal(2))

	// Running counts; Succeeded and Failed leave the cache (the watch reports them as deleted).
	a.Status.Phase = corev1.PodRunning
	g.Expect(k8s.Status().Update(ctx, a)).To(Succeed())
	b.Status.Phase = corev1.PodSucceeded
	g.Expect(k8s.Status().Update(ctx, b)).To(Succeed())
	g.Eventually(count).WithTimeout(10 * time.Second).Should(Equal(1))
	a.Status.Phase = corev1.PodFailed
	g.Expect(k8s.Status().Update(ctx, a)).To(Succeed())
	g.Eventually(count).WithTimeout(10 * time.Second).Should(Equal(0))

	// What is cached is the identity only.
	c := podIn(ns, "c")
	createPod(g, k8s, c)
	g.Eventually(count).WithTimeout(10 * time.Second).Should(Equal(1))
	got := newPodMetadata()
	g.Expect(pods.cache.Get(ctx, client.ObjectKeyFromObject(c), got)).To(Succeed())
	g.Expect(got.Labels).To(BeNil())
	g.Expect(got.Annotations).To(BeNil())
	g.Expect(got.ManagedFields).To(BeNil())
	g.Expect(got.UID).NotTo(BeEmpty())
}

// TestActivePodsMemory measures the live heap the ActivePods cache holds per Pod: set
// NSCLAIM_MEASURE_ACTIVE_PODS to the number of Pods (spread over namespaces of 50 each), and
// NSCLAIM_MEASURE_WORKLOAD_PODS=1 to give each a ReplicaSet controller reference, as a Deployment's Pods
// have (nothing garbage-collects here). docs/lifecycle.md reports the result and its extrapolation.
func TestActivePodsMemory(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("NSCLAIM_MEASURE_ACTIVE_PODS"))
	if n <= 0 {
		t.Skip("set NSCLAIM_MEASURE_ACTIVE_PODS=<pods> to measure the active Pod cache's memory")
	}
	ctx := context.Background()
	g := NewWithT(t)
	cfg, k8s := activePodsEnv(t)
	const perNamespace = 50
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	var namespaces []string
	for i := 0; i*perNamespace < n; i++ {
		namespaces = append(namespaces, newNamespace(t, k8s))
	}
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			p := podIn(namespaces[i/perNamespace], fmt.Sprintf("web-5d8f7c9b6-%05d", i))
			if os.Getenv("NSCLAIM_MEASURE_WORKLOAD_PODS") != "" {
				p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-5d8f7c9b6",
					UID: "2f1c1e6a-6a43-4f8e-9d6b-0b1f4a7c9e21", Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}}
			}
			createPod(g, k8s, p)
		}()
	}
	wg.Wait()
	t.Cleanup(func() {
		for _, ns := range namespaces {
			_ = k8s.DeleteAllOf(context.Background(), &corev1.Pod{}, client.InNamespace(ns), client.GracePeriodSeconds(0))
		}
	})

	heap := func() uint64 {
		runtime.GC()
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	before := heap()
	pods := activePodsCache(t, cfg, k8s)
	total, work := 0, 0
	for _, ns := range namespaces {
		c, w, err := pods.CountWork(ctx, ns)
		g.Expect(err).NotTo(HaveOccurred())
		total += c
		work += w
	}
	g.Expect(total).To(Equal(n))
	if os.Getenv("NSCLAIM_MEASURE_WORKLOAD_PODS") != "" {
		g.Expect(work).To(BeZero(), "every Pod is a ReplicaSet's: none is work")
	} else {
		g.Expect(work).To(Equal(n))
	}
	after := heap()
	runtime.KeepAlive(pods)
	per := float64(int64(after)-int64(before)) / float64(n)
	t.Logf("ActivePods cache: %d Pods in %d namespaces: live heap +%.1f KiB total, %.0f bytes per Pod", n, len(namespaces), float64(int64(after)-int64(before))/1024, per)
}

// TestStripToActivity: the cache keeps of a Pod's owners only whether a ReplicaSet or StatefulSet
// controls it (one shared reference), and that decides whether it is work.
func TestStripToActivity(t *testing.T) {
	yes, no := true, false
	for _, tc := range []struct {
		name     string
		refs     []metav1.OwnerReference
		workload bool
	}{
		{name: "bare Pod"},
		{name: "a Deployment's (ReplicaSet controller)", refs: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-5d8f7c9b6", UID: "u", Controller: &yes}}, workload: true},
		{name: "a StatefulSet's", refs: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "db", UID: "u", Controller: &yes}}, workload: true},
		{name: "a Job's", refs: []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: "nightly-123", UID: "u", Controller: &yes}}},
		{name: "a ReplicaSet owner that is not the controller", refs: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "x", UID: "u", Controller: &no}}},
		{name: "a ReplicaSet of another group", refs: []metav1.OwnerReference{{APIVersion: "example.com/v1", Kind: "ReplicaSet", Name: "x", UID: "u", Controller: &yes}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := newPodMetadata()
			in.Name, in.Namespace, in.Labels, in.OwnerReferences = "p", "ns", map[string]string{"app": "web"}, tc.refs
			out, err := stripToActivity(in)
			if err != nil {
				t.Fatal(err)
			}
			m := out.(*metav1.PartialObjectMetadata)
			if m.Labels != nil || m.Name != "p" || m.Namespace != "ns" {
				t.Errorf("not stripped to identity: %+v", m.ObjectMeta)
			}
			if got := isWorkloadPod(m.OwnerReferences); got != tc.workload {
				t.Errorf("workload after the transform = %t, want %t", got, tc.workload)
			}
			if len(m.OwnerReferences) > 0 && m.OwnerReferences[0].Name != "" {
				t.Errorf("owner reference kept more than the workload mark: %+v", m.OwnerReferences[0])
			}
			if CountWork([]metav1.PartialObjectMetadata{*m}) == 1 == tc.workload {
				t.Errorf("countWork disagrees with isWorkloadPod")
			}
		})
	}
}
