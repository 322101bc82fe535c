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

package failover

import (
	"fmt"
	"sync"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
	"github.com/nsclaim/nsclaim-operator/test/invariants"
)

// TestClaimLimitHoldsWhenTheLeaderDiesMidBurst: 8 claims are created at the same moment, each with a
// client of its own, under a class that allows 3 per requester namespace; the leader is killed
// (SIGKILL, so its in-memory state is lost and the Lease is not released) as soon as the first
// namespace of the burst exists, and the other replica finishes the burst. At no moment may more than
// 3 namespaces of the burst exist, and exactly 3 claims become Ready.
func TestClaimLimitHoldsWhenTheLeaderDiesMidBurst(t *testing.T) {
	const limit, burst = 3, 8
	g := NewWithT(t)
	ctx := t.Context()
	cfg, admin := adminClient(t)
	scheme := admin.Scheme()

	a := startReplica(t, "limit-a", ports("FAILOVER_PROBE_PORT_A", 20281), ports("FAILOVER_METRICS_PORT_A", 20643))
	g.Eventually(a.logs, 90*time.Second, 250*time.Millisecond).Should(ContainSubstring(acquiredLog), "the first replica becomes leader")
	b := startReplica(t, "limit-b", ports("FAILOVER_PROBE_PORT_B", 20381), ports("FAILOVER_METRICS_PORT_B", 20743))

	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("fanout-%d", time.Now().UnixNano()%100000)}}
	g.Expect(admin.Create(ctx, ns)).To(Succeed())
	class := &tenancyv1alpha1.NamespaceClass{ObjectMeta: metav1.ObjectMeta{Name: ns.Name}, Spec: tenancyv1alpha1.NamespaceClassSpec{
		ClusterRole: "edit", Naming: tenancyv1alpha1.NamingSpec{Prefix: "lim-"}, PodSecurity: tenancyv1alpha1.PodSecurityRestricted,
		Access: tenancyv1alpha1.AccessSpec{MaxClaimsPerNamespace: limit},
	}}
	g.Expect(admin.Create(ctx, class)).To(Succeed())

	// Watch the burst's namespaces: the most that exist at once, and the first one's appearance.
	cs, err := kubernetes.NewForConfig(cfg)
	g.Expect(err).NotTo(HaveOccurred())
	live, err := invariants.WatchLiveNamespaces(ctx, cs, ns.Name)
	g.Expect(err).NotTo(HaveOccurred())

	start := make(chan struct{})
	var wg sync.WaitGroup
	names := make([]string, burst)
	for i := range burst {
		names[i] = fmt.Sprintf("job-%d", i)
		c, err := client.New(cfg, client.Options{Scheme: scheme})
		g.Expect(err).NotTo(HaveOccurred())
		wg.Go(func() {
			<-start
			claim := &tenancyv1alpha1.NamespaceClaim{ObjectMeta: metav1.ObjectMeta{Name: names[i], Namespace: ns.Name},
				Spec: tenancyv1alpha1.NamespaceClaimSpec{ClassName: class.Name}}
			if err := c.Create(ctx, claim); err != nil {
				t.Errorf("creating claim %s: %v", names[i], err)
			}
		})
	}
	close(start)
	wg.Wait()
	g.Eventually(live.First(), 60*time.Second).Should(BeClosed(), "a namespace of the burst appears")
	g.Expect(a.cmd.Process.Signal(syscall.SIGKILL)).To(Succeed())
	g.Eventually(b.logs, 90*time.Second, 250*time.Millisecond).Should(ContainSubstring(acquiredLog), "the other replica takes over")

	var ready, refused int
	g.Eventually(func(g Gomega) {
		ready, refused = 0, 0
		for _, name := range names {
			var c tenancyv1alpha1.NamespaceClaim
			g.Expect(admin.Get(ctx, types.NamespacedName{Namespace: ns.Name, Name: name}, &c)).To(Succeed())
			r := meta.FindStatusCondition(c.Status.Conditions, tenancyv1alpha1.ReadyCondition)
			g.Expect(r).NotTo(BeNil(), name)
			switch r.Reason {
			case tenancyv1alpha1.ProvisionedReason:
				ready++
			case tenancyv1alpha1.ClaimLimitExceededReason:
				refused++
			}
		}
		g.Expect(ready+refused).To(Equal(burst), "%d Ready, %d refused", ready, refused)
	}, 3*time.Minute, time.Second).Should(Succeed())
	g.Expect(ready).To(Equal(limit), "%d claims Ready, %d refused", ready, refused)
	g.Expect(live.Peak()).To(BeNumerically("<=", limit), "more namespaces than the limit existed at once")
	t.Logf("leader killed mid-burst: %d Ready, %d refused, at most %d namespaces at once", ready, refused, live.Peak())
}
