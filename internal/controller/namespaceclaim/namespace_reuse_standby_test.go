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
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/nsclaim/nsclaim-operator/internal/claimpolicy"
	"github.com/nsclaim/nsclaim-operator/internal/watchcache"
)

// TestNameReuseFedOnAStandby (issue 39): a replica that is not the leader (another identity holds the
// Lease for an hour) but was wired as cmd/main.go wires it (CacheOptions with the tracker, then
// NamespaceReuse.Feed) records a namespace deletion it sees while standing by, so that, promoted later,
// it makes a new namespace of that name wait out the reuse window. Before Feed, a standby's Namespace
// informer started only with the leader's controllers: it recorded nothing, and this test failed.
func TestNameReuseFedOnAStandby(t *testing.T) {
	requireEnvtest(t)
	g := NewWithT(t)
	// A still clock: started stays t0, so only a recorded deletion can make a namespace created an
	// hour later a reuse.
	t0 := time.Now()
	clk := clocktesting.NewFakeClock(t0)
	tracker := watchcache.NewNamespaceReuse(clk, t0)

	leaseNS := newRequesterNamespace(t, nil)
	leaseName := uniq("standby")
	g.Expect(k8s.Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: leaseNS, Name: leaseName},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("the-leader"), LeaseDurationSeconds: ptr.To[int32](3600),
			AcquireTime: &metav1.MicroTime{Time: time.Now()}, RenewTime: &metav1.MicroTime{Time: time.Now()}}})).To(Succeed())

	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                  scheme,
		Metrics:                 metricsserver.Options{BindAddress: "0"},
		LeaderElection:          true,
		LeaderElectionID:        leaseName,
		LeaderElectionNamespace: leaseNS,
		Cache:                   watchcache.CacheOptions("", tracker),
	})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(tracker.Feed(mgr)).To(Succeed())
	mctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = mgr.Start(mctx)
	}()
	t.Cleanup(func() { cancel(); <-done })

	// A namespace is deleted while the replica stands by.
	gone := newRequesterNamespace(t, nil)
	g.Expect(k8s.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: gone}})).To(Succeed())

	later := metav1.NewTime(t0.Add(time.Hour))
	reused := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: gone, UID: types.UID("reused-" + gone), CreationTimestamp: later}}
	g.Eventually(func() time.Time {
		tracker.Created(reused)
		return tracker.GrantsAt(reused)
	}).WithTimeout(20*time.Second).WithPolling(100*time.Millisecond).Should(Equal(later.Add(claimpolicy.NameReuseWindow)),
		"the standby did not record the deletion of namespace %s", gone)
	fresh := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: uniq("fresh"), UID: "fresh", CreationTimestamp: later}}
	tracker.Created(fresh)
	g.Expect(tracker.GrantsAt(fresh)).To(BeZero(), "a name never deleted is not a reuse")

	select {
	case <-mgr.Elected():
		t.Fatal("the replica became the leader: the test did not test a standby")
	default:
	}
}
