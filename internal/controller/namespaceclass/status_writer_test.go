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

package namespaceclass_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
	"github.com/nsclaim/nsclaim-operator/internal/controller/namespaceclass"
	"github.com/nsclaim/nsclaim-operator/internal/controller/namespacepool"
	"github.com/nsclaim/nsclaim-operator/internal/ownership"
	"github.com/nsclaim/nsclaim-operator/internal/watchcache"
)

// errPoolWroteStatus is what the pool reconciler's client answers to a write of a class's status.
var errPoolWroteStatus = errors.New("the pool reconciler wrote a NamespaceClass's status")

// TestClassStatusHasOneWriter, against a real API server with the class and pool reconcilers on one
// manager: the pool reconciler's client refuses and counts every write of a NamespaceClass's status,
// yet status.pool follows the pool (two namespaces being made, then none once the pool is turned off)
// beside the class's Ready condition: the class reconciler writes both, the pool reconciler nothing.
func TestClassStatusHasOneWriter(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	cfg, scheme, c := namespaceclass.StartAPIServer(t, g)
	g.Expect(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "nsclaim-system"}})).To(Succeed())
	key, keyCreated, err := ownership.LoadOrCreateKey(ctx, c, "nsclaim-system")
	g.Expect(err).NotTo(HaveOccurred())

	mgr, err := ctrl.NewManager(cfg, ctrl.Options{Scheme: scheme, Metrics: metricsserver.Options{BindAddress: "0"},
		Cache: watchcache.CacheOptions("", nil), Controller: config.Controller{SkipNameValidation: ptr.To(true)}})
	g.Expect(err).NotTo(HaveOccurred())
	var poolStatusWrites atomic.Int32
	refuseClassStatus := func(obj client.Object) error {
		if _, ok := obj.(*tenancyv1alpha1.NamespaceClass); ok {
			poolStatusWrites.Add(1)
			return errPoolWroteStatus
		}
		return nil
	}
	// The pool reconciler reads and writes through an uncached client of its own, which refuses status writes.
	uncached, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme})
	g.Expect(err).NotTo(HaveOccurred())
	poolClient := interceptor.NewClient(uncached, interceptor.Funcs{
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
			if err := refuseClassStatus(obj); err != nil {
				return err
			}
			return c.SubResource(sub).Patch(ctx, obj, patch, opts...)
		},
		SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
			if err := refuseClassStatus(obj); err != nil {
				return err
			}
			return c.SubResource(sub).Update(ctx, obj, opts...)
		},
	})
	pools := namespaceclass.NewPoolReports()
	owns := &ownership.Verifier{Key: key, KeyCreated: keyCreated, Client: mgr.GetClient()}
	g.Expect((&namespacepool.PoolReconciler{Client: poolClient, APIReader: mgr.GetAPIReader(), Recorder: mgr.GetEventRecorder("nsclaim"),
		Ownership: owns, RefillRate: 50, Reports: pools}).SetupWithManager(mgr)).To(Succeed())
	g.Expect((&namespaceclass.NamespaceClassReconciler{Client: mgr.GetClient(), Pools: pools}).SetupWithManager(mgr)).To(Succeed())
	namespaceclass.RunManager(t, mgr)

	class := &tenancyv1alpha1.NamespaceClass{ObjectMeta: metav1.ObjectMeta{Name: "pooled"}, Spec: tenancyv1alpha1.NamespaceClassSpec{
		ClusterRole: "edit", Naming: tenancyv1alpha1.NamingSpec{Prefix: "pooled-"}, Pool: tenancyv1alpha1.PoolSpec{Size: 2}}}
	g.Expect(c.Create(ctx, class)).To(Succeed())
	status := func(g Gomega) tenancyv1alpha1.NamespaceClassStatus {
		cur := &tenancyv1alpha1.NamespaceClass{}
		g.Expect(c.Get(ctx, client.ObjectKeyFromObject(class), cur)).To(Succeed())
		return cur.Status
	}
	// envtest runs no kube-controller-manager: the pooled namespaces are made but never usable.
	g.Eventually(func(g Gomega) {
		st := status(g)
		g.Expect(meta.IsStatusConditionTrue(st.Conditions, tenancyv1alpha1.ReadyCondition)).To(BeTrue())
		g.Expect(st.Pool).To(Equal(&tenancyv1alpha1.PoolStatus{Ready: 0, Creating: 2}))
	}).WithTimeout(30 * time.Second).Should(Succeed())

	g.Expect(c.Get(ctx, client.ObjectKeyFromObject(class), class)).To(Succeed())
	class.Spec.Pool.Size = 0
	g.Expect(c.Update(ctx, class)).To(Succeed())
	// The pool deletes its namespaces (they stay Terminating without kube-controller-manager, and a
	// terminating namespace is no longer counted): the class reconciler clears status.pool.
	g.Eventually(func(g Gomega) {
		st := status(g)
		g.Expect(st.Pool).To(BeNil())
		g.Expect(st.ObservedGeneration).To(Equal(class.Generation))
	}).WithTimeout(30 * time.Second).Should(Succeed())
	g.Expect(poolStatusWrites.Load()).To(BeZero(), "the pool reconciler wrote a class's status")
}
