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

package namespaceclass

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/event"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
)

func TestCoalesceWait(t *testing.T) {
	last := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name  string
		since time.Duration
		want  time.Duration
	}{
		{"just written", 0, time.Second},
		{"within the interval", 300 * time.Millisecond, 700 * time.Millisecond},
		{"at the interval", time.Second, 0},
		{"long after", time.Hour, 0},
	} {
		if got := coalesceWait(last, last.Add(tc.since), time.Second); got != tc.want {
			t.Errorf("%s: coalesceWait = %s, want %s", tc.name, got, tc.want)
		}
	}
}

// TestPoolReportBurstIsCoalesced, against a real API server with the class reconciler on a manager:
// a burst of pool reports, as a burst of handouts and refills makes them, reaches the class's status in
// a bounded number of status writes (counted at the class reconciler's client), and status.pool ends
// with the burst's last report. A later report after the interval is written again.
func TestPoolReportBurstIsCoalesced(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	cfg, scheme, c := StartAPIServer(t, g)
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{Scheme: scheme, Metrics: metricsserver.Options{BindAddress: "0"},
		Controller: config.Controller{SkipNameValidation: ptr.To(true)}})
	g.Expect(err).NotTo(HaveOccurred())

	var writes atomic.Int32
	uncached, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme})
	g.Expect(err).NotTo(HaveOccurred())
	counting := interceptor.NewClient(uncached, interceptor.Funcs{
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
			if _, ok := obj.(*tenancyv1alpha1.NamespaceClass); ok && sub == "status" {
				writes.Add(1)
			}
			return c.SubResource(sub).Patch(ctx, obj, patch, opts...)
		},
	})
	const interval = 2 * time.Second
	pools := NewPoolReports()
	g.Expect((&NamespaceClassReconciler{Client: counting, Pools: pools, PoolWriteInterval: interval}).SetupWithManager(mgr)).To(Succeed())
	RunManager(t, mgr)

	class := &tenancyv1alpha1.NamespaceClass{ObjectMeta: metav1.ObjectMeta{Name: "burst"}, Spec: tenancyv1alpha1.NamespaceClassSpec{
		ClusterRole: "edit", Naming: tenancyv1alpha1.NamingSpec{Prefix: "burst-"}, Pool: tenancyv1alpha1.PoolSpec{Size: 50}}}
	g.Expect(c.Create(ctx, class)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(c.Get(ctx, client.ObjectKeyFromObject(class), class)).To(Succeed())
		g.Expect(meta.FindStatusCondition(class.Status.Conditions, tenancyv1alpha1.ReadyCondition)).NotTo(BeNil())
	}).WithTimeout(30 * time.Second).Should(Succeed())
	before := writes.Load()

	// A burst of 50 handouts, each followed by a refill: 100 reports, each differing from status.pool as
	// the pool reconciler read it, spaced as a pool's reports are (each one a reconcile of its own).
	const burst = 50
	start := time.Now()
	for i := int32(1); i <= burst; i++ {
		pools.Report(ctx, class, &tenancyv1alpha1.PoolStatus{Ready: burst - i, Creating: i - 1})
		time.Sleep(10 * time.Millisecond)
		pools.Report(ctx, class, &tenancyv1alpha1.PoolStatus{Ready: burst - i, Creating: i})
		time.Sleep(10 * time.Millisecond)
	}
	last := &tenancyv1alpha1.PoolStatus{Ready: 0, Creating: burst}
	g.Eventually(func(g Gomega) {
		cur := &tenancyv1alpha1.NamespaceClass{}
		g.Expect(c.Get(ctx, client.ObjectKeyFromObject(class), cur)).To(Succeed())
		g.Expect(cur.Status.Pool).To(Equal(last))
	}).WithTimeout(30 * time.Second).Should(Succeed())
	// The reports were all made by the time status.pool held the last one: one write at once, then at
	// most one per interval since the burst began.
	bound := 2 + int32(time.Since(start)/interval)
	burstWrites := writes.Load() - before
	t.Logf("%d status writes for %d reports (bound %d)", burstWrites, 2*burst, bound)
	g.Expect(burstWrites).To(BeNumerically(">=", 1))
	g.Expect(burstWrites).To(BeNumerically("<=", bound), "status writes for %d reports", 2*burst)

	// After the interval, one more report is written.
	g.Expect(c.Get(ctx, client.ObjectKeyFromObject(class), class)).To(Succeed())
	next := &tenancyv1alpha1.PoolStatus{Ready: burst, Creating: 0}
	pools.Report(ctx, class, next)
	g.Eventually(func(g Gomega) {
		cur := &tenancyv1alpha1.NamespaceClass{}
		g.Expect(c.Get(ctx, client.ObjectKeyFromObject(class), cur)).To(Succeed())
		g.Expect(cur.Status.Pool).To(Equal(next))
	}).WithTimeout(30 * time.Second).Should(Succeed())
}

func TestOnlyPoolCountsChanged(t *testing.T) {
	base := &tenancyv1alpha1.NamespaceClass{ObjectMeta: metav1.ObjectMeta{Name: "ci", ResourceVersion: "1", Generation: 1},
		Spec:   tenancyv1alpha1.NamespaceClassSpec{ClusterRole: "edit", Pool: tenancyv1alpha1.PoolSpec{Size: 5}},
		Status: tenancyv1alpha1.NamespaceClassStatus{ObservedGeneration: 1, Pool: &tenancyv1alpha1.PoolStatus{Ready: 5}}}
	for _, tc := range []struct {
		name   string
		change func(c *tenancyv1alpha1.NamespaceClass)
		want   bool
	}{
		{"pool counts", func(c *tenancyv1alpha1.NamespaceClass) {
			c.Status.Pool = &tenancyv1alpha1.PoolStatus{Ready: 4, Creating: 1}
		}, true},
		{"pool counts cleared", func(c *tenancyv1alpha1.NamespaceClass) { c.Status.Pool = nil }, true},
		{"spec", func(c *tenancyv1alpha1.NamespaceClass) { c.Spec.Pool.Size = 6; c.Generation = 2 }, false},
		{"observed generation", func(c *tenancyv1alpha1.NamespaceClass) { c.Status.ObservedGeneration = 2 }, false},
		{"a condition", func(c *tenancyv1alpha1.NamespaceClass) {
			c.Status.Conditions = []metav1.Condition{{Type: tenancyv1alpha1.ReadyCondition, Status: metav1.ConditionFalse}}
		}, false},
		{"a label", func(c *tenancyv1alpha1.NamespaceClass) { c.Labels = map[string]string{"a": "b"} }, false},
		{"deletion", func(c *tenancyv1alpha1.NamespaceClass) { now := metav1.Now(); c.DeletionTimestamp = &now }, false},
	} {
		cur := base.DeepCopy()
		cur.ResourceVersion = "2"
		tc.change(cur)
		if got := onlyPoolCountsChanged(base, cur); got != tc.want {
			t.Errorf("%s: onlyPoolCountsChanged = %v, want %v", tc.name, got, tc.want)
		}
		if got := NotOnlyPoolCounts().Update(event.UpdateEvent{ObjectOld: base, ObjectNew: cur}); got == tc.want {
			t.Errorf("%s: the predicate passed the update: %v, want %v", tc.name, got, !tc.want)
		}
	}
}
