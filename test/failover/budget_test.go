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
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
	"github.com/nsclaim/nsclaim-operator/test/invariants"
)

// TestBudgetHoldsWhenTheLeaderDiesMidBurst (issue 44): 12 claims of two classes (1 and 2 CPUs of
// quota) are created at the same moment in a requester namespace covered by a budget of 3 claims and 4
// CPUs; the leader is killed (SIGKILL: its ledger of reservations is lost, the Lease not released) as
// soon as the first namespace of the burst exists. The other replica seeds its ledger from what
// exists and finishes the burst: at no instant (a watcher records every namespace event, Terminating
// included) do more than 3 namespaces or 4 CPUs exist, every claim is Ready or Queued, and a release
// admits a queued claim under the new leader.
func TestBudgetHoldsWhenTheLeaderDiesMidBurst(t *testing.T) {
	const burst, maxClaims, maxCPU = 12, 3, 4
	g := NewWithT(t)
	ctx := t.Context()
	cfg, admin := adminClient(t)

	a := startReplica(t, "budget-a", ports("FAILOVER_PROBE_PORT_A", 20281), ports("FAILOVER_METRICS_PORT_A", 20643))
	g.Eventually(a.logs, 90*time.Second, 250*time.Millisecond).Should(ContainSubstring(acquiredLog), "the first replica becomes leader")
	b := startReplica(t, "budget-b", ports("FAILOVER_PROBE_PORT_B", 20381), ports("FAILOVER_METRICS_PORT_B", 20743))

	team := fmt.Sprintf("budget-%d", time.Now().UnixNano()%100000)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: team, Labels: map[string]string{"team": team}}}
	g.Expect(admin.Create(ctx, ns)).To(Succeed())
	cpuOf := map[string]int64{}
	classes := make([]string, 0, 2)
	for _, cpu := range []int64{1, 2} {
		class := &tenancyv1alpha1.NamespaceClass{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", team, cpu)}, Spec: tenancyv1alpha1.NamespaceClassSpec{
			ClusterRole: "edit", Naming: tenancyv1alpha1.NamingSpec{Prefix: "bud-"}, PodSecurity: tenancyv1alpha1.PodSecurityRestricted,
			ResourceQuota: &corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourceRequestsCPU: *resource.NewQuantity(cpu, resource.DecimalSI)}},
		}}
		g.Expect(admin.Create(ctx, class)).To(Succeed())
		cpuOf[class.Name] = cpu
		classes = append(classes, class.Name)
	}
	claimsLimit := int32(maxClaims)
	g.Expect(admin.Create(ctx, &tenancyv1alpha1.NamespaceBudget{ObjectMeta: metav1.ObjectMeta{Name: team}, Spec: tenancyv1alpha1.NamespaceBudgetSpec{
		Requesters: tenancyv1alpha1.BudgetRequesters{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": team}}},
		Limits: tenancyv1alpha1.BudgetLimits{Claims: &claimsLimit,
			Resources: corev1.ResourceList{corev1.ResourceRequestsCPU: *resource.NewQuantity(maxCPU, resource.DecimalSI)}},
		Queueing: tenancyv1alpha1.BudgetQueueingBestEffortFIFO,
	}})).To(Succeed())

	cs, err := kubernetes.NewForConfig(cfg)
	g.Expect(err).NotTo(HaveOccurred())
	bw, err := invariants.WatchBudget(ctx, cs, cpuOf, maxClaims, maxCPU, ns.Name)
	g.Expect(err).NotTo(HaveOccurred())

	start := make(chan struct{})
	var wg sync.WaitGroup
	claims := make([]*tenancyv1alpha1.NamespaceClaim, burst)
	for i := range burst {
		claims[i] = &tenancyv1alpha1.NamespaceClaim{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("job-%d", i), Namespace: ns.Name},
			Spec: tenancyv1alpha1.NamespaceClaimSpec{ClassName: classes[i%2]}}
		c, err := client.New(cfg, client.Options{Scheme: admin.Scheme()})
		g.Expect(err).NotTo(HaveOccurred())
		wg.Go(func() {
			<-start
			if err := c.Create(ctx, claims[i]); err != nil {
				t.Errorf("creating claim %s: %v", claims[i].Name, err)
			}
		})
	}
	close(start)
	wg.Wait()
	g.Eventually(bw.Events, 60*time.Second, 50*time.Millisecond).Should(BeNumerically(">", 0), "a namespace of the burst appears")
	g.Expect(a.cmd.Process.Signal(syscall.SIGKILL)).To(Succeed())
	g.Eventually(b.logs, 90*time.Second, 250*time.Millisecond).Should(ContainSubstring(acquiredLog), "the other replica takes over")

	// readyNow splits the claims (Ready, Queued), every one of them one or the other.
	readyNow := func(g Gomega, claims []*tenancyv1alpha1.NamespaceClaim) []*tenancyv1alpha1.NamespaceClaim {
		var ready []*tenancyv1alpha1.NamespaceClaim
		queued := 0
		for _, c := range claims {
			g.Expect(admin.Get(ctx, client.ObjectKeyFromObject(c), c)).To(Succeed())
			r := meta.FindStatusCondition(c.Status.Conditions, tenancyv1alpha1.ReadyCondition)
			g.Expect(r).NotTo(BeNil(), c.Name)
			switch r.Reason {
			case tenancyv1alpha1.ProvisionedReason:
				ready = append(ready, c)
			case tenancyv1alpha1.QueuedReason:
				queued++
			}
		}
		g.Expect(len(ready)+queued).To(Equal(len(claims)), "%d Ready, %d Queued", len(ready), queued)
		return ready
	}
	var ready []*tenancyv1alpha1.NamespaceClaim
	g.Eventually(func(g Gomega) {
		ready = readyNow(g, claims)
		n := len(ready)
		g.Consistently(func(g Gomega) int { return len(readyNow(g, claims)) }, 2*time.Second, 500*time.Millisecond).Should(Equal(n))
	}, 3*time.Minute, time.Second).Should(Succeed())
	g.Expect(len(ready)).To(BeNumerically(">=", 2), "3 claims of the budget fit at most 4 CPUs: 2 or 3 are admitted")
	g.Expect(bw.Over()).To(BeEmpty(), "more than the budget existed at an instant across the failover")

	// A release under the new leader admits what it frees once the namespace is gone (both classes
	// still wait: whatever was freed fits one of them).
	g.Expect(admin.Delete(ctx, ready[0])).To(Succeed())
	rest := slices.DeleteFunc(slices.Clone(claims), func(c *tenancyv1alpha1.NamespaceClaim) bool { return c.Name == ready[0].Name })
	g.Eventually(func(g Gomega) int { return len(readyNow(g, rest)) }, 2*time.Minute, 500*time.Millisecond).Should(BeNumerically(">=", len(ready)))
	g.Expect(bw.Over()).To(BeEmpty(), "more than the budget existed at an instant after the release")
	nsPeak, cpuPeak := bw.Peaks()
	t.Logf("leader killed mid-burst: %d Ready first, at most %d namespaces and %d CPU at once (budget %d, %d)", len(ready), nsPeak, cpuPeak, maxClaims, maxCPU)
}
