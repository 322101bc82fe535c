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
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
	"github.com/nsclaim/nsclaim-operator/internal/testenv"
	"github.com/nsclaim/nsclaim-operator/test/invariants"
)

// Budgets in envtest: there is no kube-controller-manager, so a deleted namespace stays Terminating
// (and charged) until the test finalizes it, as the namespace controller would once it is empty.

// withQuotaCPU gives the class a ResourceQuota of cpu requests.cpu: the charge of its claims.
func withQuotaCPU(cpu string) classOpt {
	return func(c *tenancyv1alpha1.NamespaceClass) {
		c.Spec.ResourceQuota = &corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourceRequestsCPU: resource.MustParse(cpu)}}
	}
}

// newBudget creates a budget over the requester namespaces labelled team=team.
func newBudget(t *testing.T, team string, claims int32, cpu string, opts ...func(*tenancyv1alpha1.NamespaceBudget)) *tenancyv1alpha1.NamespaceBudget {
	t.Helper()
	b := &tenancyv1alpha1.NamespaceBudget{ObjectMeta: metav1.ObjectMeta{Name: uniq("budget")}, Spec: tenancyv1alpha1.NamespaceBudgetSpec{
		Requesters: tenancyv1alpha1.BudgetRequesters{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": team}}},
		Limits:     tenancyv1alpha1.BudgetLimits{Claims: &claims}}}
	if cpu != "" {
		b.Spec.Limits.Resources = corev1.ResourceList{corev1.ResourceRequestsCPU: resource.MustParse(cpu)}
	}
	for _, o := range opts {
		o(b)
	}
	NewWithT(t).Expect(k8s.Create(context.Background(), b)).To(Succeed())
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), b) })
	return b
}

// asPipeline returns a client acting as a pipeline of requester namespace ns with the shipped
// pipeline role (config/rbac/pipeline_role.yaml) bound there, as `kubectl nsclaim pipeline-identity`
// binds it.
func asPipeline(t *testing.T, ns string) client.Client {
	t.Helper()
	g := NewWithT(t)
	body, err := os.ReadFile(filepath.Join("..", "..", "..", "config", "rbac", "pipeline_role.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	role := &rbacv1.ClusterRole{}
	g.Expect(yaml.UnmarshalStrict(body, role)).To(Succeed())
	user := uniq("pipeline")
	role.Name = user
	g.Expect(k8s.Create(ctx, role)).To(Succeed())
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: user, Namespace: ns},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: user},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}}}
	g.Expect(k8s.Create(ctx, binding)).To(Succeed())
	t.Cleanup(func() { _ = k8s.Delete(ctx, binding); _ = k8s.Delete(ctx, role) })
	g.Expect(testenv.WaitAllowed(ctx, k8s, user, authorizationv1.ResourceAttributes{Namespace: ns, Verb: "create",
		Group: tenancyv1alpha1.GroupVersion.Group, Resource: "namespaceclaims"}, 10*time.Second)).To(Succeed())
	return impersonating(t, user, nil, nil)
}

// watchBudget follows the namespaces made for the claims of requesters with the shared budget watcher
// (invariants.BudgetWatch), for the test's whole life; cpuOf is the CPU a namespace of each class holds.
func watchBudget(t *testing.T, cpuOf map[string]int64, requesters ...string) *invariants.BudgetWatch {
	t.Helper()
	cs, err := kubernetes.NewForConfig(cfg)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	wctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	// The test asserts on the peaks itself: no limit of the watcher's own.
	bw, err := invariants.WatchBudget(wctx, cs, cpuOf, math.MaxInt64, math.MaxInt64, requesters...)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	return bw
}

// createAtOnce creates claims all at once, each through as(i), and expects every create to succeed.
func createAtOnce(g Gomega, claims []*tenancyv1alpha1.NamespaceClaim, as func(i int) client.Client) {
	errs := make([]error, len(claims))
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range claims {
		wg.Go(func() {
			<-start
			errs[i] = as(i).Create(context.Background(), claims[i])
		})
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		g.Expect(err).NotTo(HaveOccurred(), "creating claim %d", i)
	}
}

// finalize ends the deletion of a Terminating namespace as kube-controller-manager's namespace
// controller would (envtest runs none): the objects in it are deleted, its spec finalizers dropped,
// and it is gone.
func finalize(t *testing.T, name string) {
	t.Helper()
	cs, err := kubernetes.NewForConfig(cfg)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	NewWithT(t).Eventually(func(g Gomega) {
		ns, err := cs.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
		if isNotFound(err) {
			return
		}
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(ns.DeletionTimestamp).NotTo(BeNil(), "namespace %s is not being deleted", name)
		for _, obj := range []client.Object{&corev1.ServiceAccount{}, &rbacv1.Role{}, &rbacv1.RoleBinding{}, &corev1.ResourceQuota{},
			&corev1.LimitRange{}, &networkingv1.NetworkPolicy{}, &corev1.Secret{}, &corev1.ConfigMap{}} {
			g.Expect(k8s.DeleteAllOf(ctx, obj, client.InNamespace(name))).To(Succeed())
		}
		ns.Spec.Finalizers = nil
		_, err = cs.CoreV1().Namespaces().Finalize(ctx, ns, metav1.UpdateOptions{})
		g.Expect(client.IgnoreNotFound(err)).To(Succeed())
	}).WithTimeout(20 * time.Second).Should(Succeed())
}

// readyReason is the claim's Ready reason at the API server, and its message.
func readyReason(g Gomega, c *tenancyv1alpha1.NamespaceClaim) (string, string) {
	rc := meta.FindStatusCondition(getClaim(g, c).Status.Conditions, tenancyv1alpha1.ReadyCondition)
	if rc == nil {
		return "", ""
	}
	return rc.Reason, rc.Message
}

// budgetOutcome waits until exactly admitted of claims are Ready and the others Queued, and returns both.
func budgetOutcome(t *testing.T, claims []*tenancyv1alpha1.NamespaceClaim, admitted int, timeout time.Duration) []*tenancyv1alpha1.NamespaceClaim {
	var ready []*tenancyv1alpha1.NamespaceClaim
	t.Helper()
	NewWithT(t).Eventually(func(g Gomega) {
		var queued []*tenancyv1alpha1.NamespaceClaim
		ready = nil
		for _, c := range claims {
			switch reason, msg := readyReason(g, c); reason {
			case tenancyv1alpha1.ProvisionedReason:
				ready = append(ready, c)
			case tenancyv1alpha1.QueuedReason:
				g.Expect(msg).To(ContainSubstring("at position"))
				queued = append(queued, c)
			}
		}
		g.Expect(ready).To(HaveLen(admitted))
		g.Expect(queued).To(HaveLen(len(claims) - admitted))
	}).WithTimeout(timeout).WithPolling(100 * time.Millisecond).Should(Succeed())
	return ready
}

// TestBudgetHoldsUnderARace: pipelines of two requester namespaces of one team race claims of two
// classes (1 and 2 CPUs) against a budget of 3 claims and 4 CPUs. At no instant do more namespaces or
// more CPU exist than the budget allows (a watcher records every event); the claims that do not fit
// are Queued (a wait: no refusal). The two Capsule bypasses fail: a claim deleted while its namespace
// is Terminating frees nothing (a claim made then stays Queued) until the namespace is gone, which
// admits a queued claim at once (event-driven: well inside the 10 s poll); an admitted claim that is
// edited is never gated again.
func TestBudgetHoldsUnderARace(t *testing.T) {
	requireEnvtest(t)
	t.Cleanup(func() { checkInvariants(t) })
	g := NewWithT(t)
	team := uniq("team")
	small, big := newClass(t, withQuotaCPU("1")), newClass(t, withQuotaCPU("2"))
	b := newBudget(t, team, 3, "4")
	reqs := []string{newRequesterNamespace(t, map[string]string{"team": team}), newRequesterNamespace(t, map[string]string{"team": team})}
	bw := watchBudget(t, map[string]int64{small.Name: 1, big.Name: 2}, reqs...)
	pipelines := []client.Client{asPipeline(t, reqs[0]), asPipeline(t, reqs[1])}

	const burst = 12
	claims := make([]*tenancyv1alpha1.NamespaceClaim, burst)
	for i := range claims {
		class := small
		if i%2 == 1 {
			class = big
		}
		claims[i] = &tenancyv1alpha1.NamespaceClaim{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("race-%d", i), Namespace: reqs[i%4/2]},
			Spec: tenancyv1alpha1.NamespaceClaimSpec{ClassName: class.Name}}
	}
	createAtOnce(g, claims, func(i int) client.Client { return pipelines[i%4/2] })
	// 3 claims fit only as 1+1+2 CPUs at most; whatever the race admitted, it stays within both limits.
	var ready, queued []*tenancyv1alpha1.NamespaceClaim
	g.Eventually(func(g Gomega) {
		ready, queued = nil, nil
		for _, c := range claims {
			switch reason, _ := readyReason(g, c); reason {
			case tenancyv1alpha1.ProvisionedReason:
				ready = append(ready, c)
			case tenancyv1alpha1.QueuedReason:
				queued = append(queued, c)
			}
		}
		g.Expect(len(ready) + len(queued)).To(Equal(burst))
		g.Expect(len(ready)).To(BeNumerically(">=", 2))
		// The race's admissions settle: a queued claim that fits what the first ones left is admitted
		// moments later, so the split is taken once it holds still.
		n := len(ready)
		g.Consistently(func(g Gomega) int {
			k := 0
			for _, c := range claims {
				if r, _ := readyReason(g, c); r == tenancyv1alpha1.ProvisionedReason {
					k++
				}
			}
			return k
		}).WithTimeout(2 * time.Second).WithPolling(200 * time.Millisecond).Should(Equal(n))
	}).WithTimeout(45 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())
	nsPeak, cpuPeak := bw.Peaks()
	g.Expect(nsPeak).To(BeNumerically("<=", 3), "more namespaces than the budget existed at once")
	g.Expect(cpuPeak).To(BeNumerically("<=", 4), "more CPU than the budget existed at once")
	g.Expect(nsPeak).To(BeNumerically(">=", 2), "the watcher saw no namespace: it proves nothing")

	// Bypass 2: an admitted claim edited (an annotation, a heartbeat) is not gated again.
	touch(t, ready[0])
	g.Consistently(func(g Gomega) string { r, _ := readyReason(g, ready[0]); return r }).
		WithTimeout(2 * time.Second).Should(Equal(tenancyv1alpha1.ProvisionedReason))

	// Bypass 1: delete the Ready claim with the most CPU (what it frees admits the head of the queue,
	// whichever it is, once it is really freed); its namespace is Terminating and still charged.
	for i, c := range ready {
		if c.Spec.ClassName == big.Name {
			ready[0], ready[i] = ready[i], ready[0]
			break
		}
	}
	gone := getClaim(g, ready[0])
	g.Expect(pipelines[slices.Index(reqs, ready[0].Namespace)].Delete(context.Background(), ready[0])).To(Succeed())
	g.Eventually(func(g Gomega) { expectNamespaceDeleting(g, gone.Status.Namespace) }).WithTimeout(20 * time.Second).Should(Succeed())
	again := &tenancyv1alpha1.NamespaceClaim{ObjectMeta: metav1.ObjectMeta{Name: "race-again", Namespace: reqs[0]},
		Spec: tenancyv1alpha1.NamespaceClaimSpec{ClassName: small.Name}}
	g.Expect(pipelines[0].Create(context.Background(), again)).To(Succeed())
	waitFor(t, again, tenancyv1alpha1.ReadyCondition, metav1.ConditionFalse, tenancyv1alpha1.QueuedReason)
	rest := append(append(ready[1:], queued...), again)
	readyCount := func(g Gomega) int {
		n := 0
		for _, c := range rest {
			if r, _ := readyReason(g, c); r == tenancyv1alpha1.ProvisionedReason {
				n++
			}
		}
		return n
	}
	g.Consistently(readyCount).WithTimeout(2*time.Second).Should(Equal(len(ready)-1), "a claim was admitted while a namespace was Terminating")
	nsPeak, cpuPeak = bw.Peaks()
	g.Expect(nsPeak).To(BeNumerically("<=", 3), "a Terminating namespace was not charged")
	g.Expect(cpuPeak).To(BeNumerically("<=", 4), "a Terminating namespace was not charged")

	// The namespace is gone: a queued claim is admitted at once, event-driven.
	finalize(t, gone.Status.Namespace)
	g.Eventually(readyCount).WithTimeout(5 * time.Second).WithPolling(100 * time.Millisecond).Should(BeNumerically(">", len(ready)-1))
	nsPeak, cpuPeak = bw.Peaks()
	g.Expect(nsPeak).To(BeNumerically("<=", 3))
	g.Expect(cpuPeak).To(BeNumerically("<=", 4))

	// The budget's status reports what the namespaces hold and what waits.
	g.Eventually(func(g Gomega) {
		cur := &tenancyv1alpha1.NamespaceBudget{}
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(b), cur)).To(Succeed())
		g.Expect(cur.Status.Allocated.Claims).To(BeNumerically(">=", 2))
		g.Expect(cur.Status.Allocated.Claims).To(BeNumerically("<=", 3))
		g.Expect(cur.Status.Queued).To(BeNumerically(">", 0))
		g.Expect(cur.Status.OldestQueuedSince).NotTo(BeNil())
		g.Expect(meta.IsStatusConditionFalse(cur.Status.Conditions, tenancyv1alpha1.ReadyCondition)).To(BeTrue())
	}).WithTimeout(20 * time.Second).Should(Succeed())
	for _, c := range append(claims, again) {
		_ = k8s.Delete(context.Background(), c)
	}
	finalizeAll(t, reqs...)
}

// finalizeAll deletes every claim of requesters and finalizes their namespaces until none is left,
// so the suite's invariants find nothing Terminating.
func finalizeAll(t *testing.T, requesters ...string) {
	t.Helper()
	NewWithT(t).Eventually(func(g Gomega) {
		list := &corev1.NamespaceList{}
		g.Expect(k8s.List(ctx, list, client.MatchingLabels{tenancyv1alpha1.ManagedByLabel: tenancyv1alpha1.ManagedByValue})).To(Succeed())
		left := 0
		for i := range list.Items {
			ns := &list.Items[i]
			for _, r := range requesters {
				if ns.Labels[tenancyv1alpha1.ClaimNamespaceLabel] == r {
					left++
					if ns.DeletionTimestamp != nil {
						finalize(t, ns.Name)
					}
				}
			}
		}
		g.Expect(left).To(BeZero())
	}).WithTimeout(60 * time.Second).WithPolling(500 * time.Millisecond).Should(Succeed())
}

// TestBudgetStrictFIFO: with a budget of one claim, claims are admitted in claim order, one after the
// other as each namespace goes.
func TestBudgetStrictFIFO(t *testing.T) {
	requireEnvtest(t)
	t.Cleanup(func() { checkInvariants(t) })
	g := NewWithT(t)
	team := uniq("team")
	class := newClass(t)
	newBudget(t, team, 1, "")
	req := newRequesterNamespace(t, map[string]string{"team": team})
	pipeline := asPipeline(t, req)
	claims := make([]*tenancyv1alpha1.NamespaceClaim, 3)
	for i := range claims {
		claims[i] = &tenancyv1alpha1.NamespaceClaim{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("fifo-%d", i), Namespace: req},
			Spec: tenancyv1alpha1.NamespaceClaimSpec{ClassName: class.Name}}
	}
	// Created newest first within the second, so creation order and name order agree only by the
	// tie-break (name) when the timestamps are equal, and by time when they are not: fifo-0 first.
	for i := range claims {
		g.Expect(pipeline.Create(context.Background(), claims[i])).To(Succeed())
	}
	for i := range claims {
		ready := budgetOutcome(t, claims[i:], 1, 30*time.Second)
		g.Expect(ready[0].Name).To(Equal(claims[i].Name), "claim %d was not admitted in order", i)
		if i+1 < len(claims) {
			// The next claim's message moves to position 1 at its next reconcile, which the admission
			// of this one triggers: it is read until it does.
			g.Eventually(func(g Gomega) string {
				_, msg := readyReason(g, claims[i+1])
				return msg
			}).WithTimeout(10 * time.Second).Should(ContainSubstring("at position 1"))
		}
		held := getClaim(g, claims[i]).Status.Namespace
		g.Expect(pipeline.Delete(context.Background(), claims[i])).To(Succeed())
		g.Eventually(func(g Gomega) { expectNamespaceDeleting(g, held) }).WithTimeout(20 * time.Second).Should(Succeed())
		finalize(t, held)
	}
	finalizeAll(t, req)
}

// TestBudgetStrictFIFOAdmitsABurstThatFits: a burst into a StrictFIFO budget with room for all of it
// is admitted as each claim is first reconciled, whatever order the workers take them in: a claim
// whose older siblings are not counted yet goes first when there is room for them too, so none is
// ever Queued (a claim that had to wait for every older one to be counted was admitted one per
// wake-up: a burst of 500 took minutes into a budget it never filled).
func TestBudgetStrictFIFOAdmitsABurstThatFits(t *testing.T) {
	requireEnvtest(t)
	t.Cleanup(func() { checkInvariants(t) })
	g := NewWithT(t)
	team := uniq("team")
	class := newClass(t, withQuotaCPU("1"))
	newBudget(t, team, 20, "20")
	req := newRequesterNamespace(t, map[string]string{"team": team})
	pipeline := asPipeline(t, req)

	// Every Ready reason any claim of the requester namespace shows, from a watch started first.
	cs, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme})
	g.Expect(err).NotTo(HaveOccurred())
	wctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	w, err := cs.Watch(wctx, &tenancyv1alpha1.NamespaceClaimList{}, client.InNamespace(req))
	g.Expect(err).NotTo(HaveOccurred())
	var mu sync.Mutex
	var queued []string
	go func() {
		for ev := range w.ResultChan() {
			c, ok := ev.Object.(*tenancyv1alpha1.NamespaceClaim)
			if !ok {
				continue
			}
			if r := meta.FindStatusCondition(c.Status.Conditions, tenancyv1alpha1.ReadyCondition); r != nil && r.Reason == tenancyv1alpha1.QueuedReason {
				mu.Lock()
				queued = append(queued, c.Name+": "+r.Message)
				mu.Unlock()
			}
		}
	}()

	const burst = 10
	claims := make([]*tenancyv1alpha1.NamespaceClaim, burst)
	for i := range claims {
		claims[i] = &tenancyv1alpha1.NamespaceClaim{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("fits-%d", i), Namespace: req},
			Spec: tenancyv1alpha1.NamespaceClaimSpec{ClassName: class.Name}}
	}
	createAtOnce(g, claims, func(int) client.Client { return pipeline })
	ready := budgetOutcome(t, claims, burst, 60*time.Second)
	g.Expect(ready).To(HaveLen(burst))
	mu.Lock()
	defer mu.Unlock()
	g.Expect(queued).To(BeEmpty(), "a claim of a burst the budget has room for was queued")
	for _, c := range claims {
		g.Expect(pipeline.Delete(context.Background(), c)).To(Succeed())
	}
	finalizeAll(t, req)
}

// TestBudgetEvictIdle: a budget of two claims with onExhausted EvictIdle, shared by two requesters.
// When requester A claims a third, A's least recently active claim of a class with an idle TTL is
// deleted; B's claim and A's claim of a class without one are never touched.
func TestBudgetEvictIdle(t *testing.T) {
	requireEnvtest(t)
	t.Cleanup(func() { checkInvariants(t) })
	g := NewWithT(t)
	team := uniq("team")
	idle := newClass(t, func(c *tenancyv1alpha1.NamespaceClass) {
		c.Spec.Lifetime.IdleTTL = &metav1.Duration{Duration: time.Hour}
	})
	kept := newClass(t)
	newBudget(t, team, 3, "", func(b *tenancyv1alpha1.NamespaceBudget) {
		b.Spec.OnExhausted = tenancyv1alpha1.BudgetExhaustedEvictIdle
	})
	reqA := newRequesterNamespace(t, map[string]string{"team": team})
	reqB := newRequesterNamespace(t, map[string]string{"team": team})
	a, bp := asPipeline(t, reqA), asPipeline(t, reqB)
	mk := func(c client.Client, ns, name string, class *tenancyv1alpha1.NamespaceClass) *tenancyv1alpha1.NamespaceClaim {
		cl := &tenancyv1alpha1.NamespaceClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: tenancyv1alpha1.NamespaceClaimSpec{ClassName: class.Name}}
		g.Expect(c.Create(context.Background(), cl)).To(Succeed())
		return cl
	}
	theirs := mk(bp, reqB, "theirs", idle)
	waitFor(t, theirs, tenancyv1alpha1.ReadyCondition, metav1.ConditionTrue, tenancyv1alpha1.ProvisionedReason)
	keptClaim := mk(a, reqA, "kept", kept)
	waitFor(t, keptClaim, tenancyv1alpha1.ReadyCondition, metav1.ConditionTrue, tenancyv1alpha1.ProvisionedReason)
	old := mk(a, reqA, "old", idle)
	waitFor(t, old, tenancyv1alpha1.ReadyCondition, metav1.ConditionTrue, tenancyv1alpha1.ProvisionedReason)
	oldNS := getClaim(g, old).Status.Namespace

	fresh := mk(a, reqA, "fresh", idle)
	g.Eventually(func(g Gomega) {
		cur := &tenancyv1alpha1.NamespaceClaim{}
		err := k8s.Get(ctx, client.ObjectKeyFromObject(old), cur)
		g.Expect(isNotFound(err) || (err == nil && cur.DeletionTimestamp != nil)).To(BeTrue(), "the idle claim of A was not evicted")
	}).WithTimeout(20 * time.Second).Should(Succeed())
	g.Eventually(func(g Gomega) { expectNamespaceDeleting(g, oldNS) }).WithTimeout(20 * time.Second).Should(Succeed())
	finalize(t, oldNS)
	waitFor(t, fresh, tenancyv1alpha1.ReadyCondition, metav1.ConditionTrue, tenancyv1alpha1.ProvisionedReason)
	for _, c := range []*tenancyv1alpha1.NamespaceClaim{theirs, keptClaim} {
		cur := getClaim(g, c)
		g.Expect(cur.DeletionTimestamp).To(BeNil(), "claim %s was evicted", c.Name)
		r, _ := readyReason(g, c)
		g.Expect(r).To(Equal(tenancyv1alpha1.ProvisionedReason))
	}
	for _, c := range []*tenancyv1alpha1.NamespaceClaim{theirs, keptClaim, fresh} {
		_ = k8s.Delete(context.Background(), c)
	}
	finalizeAll(t, reqA, reqB)
}

// TestBudgetStatusCountsOnlyProvenNamespaces: a namespace patcher (RBAC on namespaces only, no fence)
// creates a namespace carrying a covered claim's labels and annotations, copied from the claim's real
// namespace. The budget's status counts what nsclaim's ownership record proves, as its admission
// does: the forged namespace is never allocated.
func TestBudgetStatusCountsOnlyProvenNamespaces(t *testing.T) {
	requireEnvtest(t)
	t.Cleanup(func() { checkInvariants(t) })
	g := NewWithT(t)
	team := uniq("team")
	class := newClass(t)
	b := newBudget(t, team, 5, "")
	req := newRequesterNamespace(t, map[string]string{"team": team})
	pipeline := asPipeline(t, req)
	claim := func(name string) *tenancyv1alpha1.NamespaceClaim {
		c := &tenancyv1alpha1.NamespaceClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: req}, Spec: tenancyv1alpha1.NamespaceClaimSpec{ClassName: class.Name}}
		g.Expect(pipeline.Create(context.Background(), c)).To(Succeed())
		return waitFor(t, c, tenancyv1alpha1.ReadyCondition, metav1.ConditionTrue, tenancyv1alpha1.ProvisionedReason)
	}
	allocated := func(g Gomega) int32 {
		cur := &tenancyv1alpha1.NamespaceBudget{}
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(b), cur)).To(Succeed())
		return cur.Status.Allocated.Claims
	}
	first := claim("first")
	g.Eventually(allocated).WithTimeout(20 * time.Second).Should(Equal(int32(1)))

	real := &corev1.Namespace{}
	g.Expect(k8s.Get(ctx, client.ObjectKey{Name: getClaim(g, first).Status.Namespace}, real)).To(Succeed())
	forged := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: uniq("forged-budget"), Labels: map[string]string{}, Annotations: real.Annotations}}
	for k, v := range real.Labels {
		if k != corev1.LabelMetadataName {
			forged.Labels[k] = v
		}
	}
	g.Expect(forged.Labels).To(HaveKey(tenancyv1alpha1.ClaimUIDLabel))
	g.Expect(namespacePatcher(t).Create(ctx, forged)).To(Succeed())
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), forged) })

	// A second claim makes the budget reconcile after the forged namespace exists: two, not three.
	second := claim("second")
	g.Eventually(allocated).WithTimeout(20 * time.Second).Should(Equal(int32(2)))
	g.Consistently(allocated).WithTimeout(3 * time.Second).Should(Equal(int32(2)))
	g.Expect(k8s.Delete(ctx, forged)).To(Succeed())
	for _, c := range []*tenancyv1alpha1.NamespaceClaim{first, second} {
		_ = k8s.Delete(context.Background(), c)
	}
	finalizeAll(t, req)
}

// TestBudgetRejectAndMaxQueueWait: the two refusals of a budget, through the API server, as a pipeline
// with the shipped role. With onExhausted Reject, a claim that does not fit is refused at once
// (BudgetExhausted, a Warning naming the budget) and never gets a namespace; with maxQueueWait, a claim
// that does not fit waits (Queued, a Normal Event) and is refused once it has waited that long
// (QueueWaitExceeded), at its next look, within the queued poll. Neither refusal makes a namespace, and
// neither budget ever holds more than its one claim.
func TestBudgetRejectAndMaxQueueWait(t *testing.T) {
	requireEnvtest(t)
	t.Cleanup(func() { checkInvariants(t) })
	g := NewWithT(t)
	class := newClass(t)
	rejectTeam, waitTeam := uniq("team"), uniq("team")
	rejecting := newBudget(t, rejectTeam, 1, "", func(b *tenancyv1alpha1.NamespaceBudget) {
		b.Spec.OnExhausted = tenancyv1alpha1.BudgetExhaustedReject
	})
	waiting := newBudget(t, waitTeam, 1, "", func(b *tenancyv1alpha1.NamespaceBudget) {
		b.Spec.MaxQueueWait = &metav1.Duration{Duration: 2 * time.Second}
	})
	reqR := newRequesterNamespace(t, map[string]string{"team": rejectTeam})
	reqW := newRequesterNamespace(t, map[string]string{"team": waitTeam})
	bw := watchBudget(t, map[string]int64{class.Name: 0}, reqR, reqW)
	mk := func(c client.Client, ns, name string) *tenancyv1alpha1.NamespaceClaim {
		cl := &tenancyv1alpha1.NamespaceClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: tenancyv1alpha1.NamespaceClaimSpec{ClassName: class.Name}}
		g.Expect(c.Create(context.Background(), cl)).To(Succeed())
		return cl
	}
	warning := func(claim *tenancyv1alpha1.NamespaceClaim, reason, budget string) {
		t.Helper()
		g.Eventually(func(g Gomega) {
			evs := &corev1.EventList{}
			g.Expect(k8s.List(ctx, evs, client.InNamespace(claim.Namespace))).To(Succeed())
			g.Expect(evs.Items).To(ContainElement(And(HaveField("Reason", reason), HaveField("Type", corev1.EventTypeWarning),
				HaveField("InvolvedObject.UID", claim.UID), HaveField("Message", ContainSubstring(budget)))))
		}).WithTimeout(10 * time.Second).Should(Succeed())
	}

	// Reject: the second claim of the team is refused at once, and stays without a namespace.
	pr := asPipeline(t, reqR)
	held := mk(pr, reqR, "held")
	waitFor(t, held, tenancyv1alpha1.ReadyCondition, metav1.ConditionTrue, tenancyv1alpha1.ProvisionedReason)
	refused := mk(pr, reqR, "refused")
	waitFor(t, refused, tenancyv1alpha1.ReadyCondition, metav1.ConditionFalse, tenancyv1alpha1.BudgetExhaustedReason)
	_, msg := readyReason(g, refused)
	g.Expect(msg).To(And(ContainSubstring(rejecting.Name), ContainSubstring("onExhausted: Reject")))
	warning(refused, tenancyv1alpha1.BudgetExhaustedReason, rejecting.Name)

	// maxQueueWait: the second claim waits, then is refused once it has waited 2 s.
	pw := asPipeline(t, reqW)
	first := mk(pw, reqW, "first")
	waitFor(t, first, tenancyv1alpha1.ReadyCondition, metav1.ConditionTrue, tenancyv1alpha1.ProvisionedReason)
	late := mk(pw, reqW, "late")
	expectClaimEvent(t, late, tenancyv1alpha1.QueuedReason)
	waitFor(t, late, tenancyv1alpha1.ReadyCondition, metav1.ConditionFalse, tenancyv1alpha1.QueueWaitExceededReason)
	_, msg = readyReason(g, late)
	g.Expect(msg).To(And(ContainSubstring(waiting.Name), ContainSubstring("maxQueueWait (2s)")))
	warning(late, tenancyv1alpha1.QueueWaitExceededReason, waiting.Name)

	for _, c := range []*tenancyv1alpha1.NamespaceClaim{refused, late} {
		g.Expect(getClaim(g, c).Status.Namespace).To(BeEmpty(), "refused claim %s got a namespace", c.Name)
	}
	nsPeak, _ := bw.Peaks()
	g.Expect(nsPeak).To(BeNumerically("==", 2), "two budgets of one claim each: two namespaces at most, and the watcher saw both")
	for _, c := range []*tenancyv1alpha1.NamespaceClaim{held, refused, first, late} {
		_ = k8s.Delete(context.Background(), c)
	}
	finalizeAll(t, reqR, reqW)
}
