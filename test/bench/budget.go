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

package main

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
)

// Budgets (issue 44, docs/budgets.md): what a NamespaceBudget costs a burst, and how fast a queued
// claim goes on when the claim that holds the budget is released.

// budgetRow is what the budget phase measured.
type budgetRow struct {
	// burst is --budget-burst; none and budget its throughputs (claims Ready per second) without a
	// budget and with one that never binds.
	burst        int
	none, budget float64
	// release is, per release, the holding claim's delete call to the queued claim's Ready=True event;
	// gone is the holding namespace's deletion event to that same Ready event (both sorted).
	release, gone []time.Duration
}

// budgetPhase runs the budget scenarios that --budget-burst and --budget-releases select.
func (b *bencher) budgetPhase(ctx context.Context) error {
	row := &budgetRow{burst: b.o.budgetBurst}
	if b.o.budgetBurst > 0 {
		if err := b.budgetCost(ctx, row); err != nil {
			return err
		}
	}
	if b.o.budgetReleases > 0 {
		if err := b.budgetReleases(ctx, row); err != nil {
			return err
		}
	}
	b.rows.budget = row
	return nil
}

// newBenchBudget creates a budget over the requester namespaces names (by their name label).
func newBenchBudget(ctx context.Context, k *clients, name string, claims int32, cpu string, names ...string) (*tenancyv1alpha1.NamespaceBudget, error) {
	bud := &tenancyv1alpha1.NamespaceBudget{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: tenancyv1alpha1.NamespaceBudgetSpec{
		Requesters: tenancyv1alpha1.BudgetRequesters{NamespaceSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
			Key: corev1.LabelMetadataName, Operator: metav1.LabelSelectorOpIn, Values: names}}}},
		Limits: tenancyv1alpha1.BudgetLimits{Claims: &claims, Resources: corev1.ResourceList{corev1.ResourceRequestsCPU: resource.MustParse(cpu)}},
	}}
	if err := k.c.Create(ctx, bud); err != nil {
		return nil, fmt.Errorf("creating NamespaceBudget %s: %w", name, err)
	}
	return bud, nil
}

// budgetCost bursts --budget-burst claims four times, in the order none, budget, budget, none (ABBA):
// without a budget, then into requester namespaces that a budget which never binds covers (twenty times
// the burst in claims and CPU), and compares the mean throughputs. Each burst runs on a cluster that
// still holds the claims of the bursts before it, so a single pair puts the budget's burst on the more
// loaded cluster; in ABBA order a drift by burst cancels, and each side is the mean of two bursts.
func (b *bencher) budgetCost(ctx context.Context, row *budgetRow) error {
	n := b.o.budgetBurst
	var bud *tenancyv1alpha1.NamespaceBudget
	defer func() {
		if bud != nil {
			_ = b.k.c.Delete(context.Background(), bud)
		}
	}()
	bursts := []struct {
		series   string
		budgeted bool
	}{{"bnone", false}, {"bbudget", true}, {"bbudget2", true}, {"bnone2", false}}
	var sum [2]float64
	var count [2]int
	for _, burst := range bursts {
		if burst.budgeted && bud == nil {
			// The budget covers the requester namespaces of every budgeted burst.
			var names []string
			for _, covered := range bursts {
				for i := 0; covered.budgeted && i < n; i += b.o.perNS {
					names = append(names, requesterNamespace(covered.series, i, b.o.perNS))
				}
			}
			var err error
			if bud, err = newBenchBudget(ctx, b.k, "bench-never-binds", int32(20*n), fmt.Sprint(20*n*4), names...); err != nil {
				return err
			}
		}
		before, _ := b.op.metrics()
		refs, err := createClaims(ctx, b.k, burst.series, 0, n, b.o.perNS, b.o.createParallel, nil)
		if err != nil {
			return err
		}
		b.claims += len(refs)
		missing := b.track.waitAll(ctx, refs, b.o.timeout)
		after, _ := b.op.metrics()
		if missing > 0 {
			return fmt.Errorf("budget burst %s: %d of %d claims not Ready after %s", burst.series, missing, n, b.o.timeout)
		}
		lat, last := b.track.latencies(refs)
		tput := float64(len(lat)) / last.Sub(refs[0].created).Seconds()
		side := 0
		if burst.budgeted {
			side = 1
		}
		sum[side] += tput
		count[side]++
		b.logf("budget cost: burst of %d (%s) %s: %.1f Ready/s, p50 %s (load %s)", n, burst.series,
			map[bool]string{false: "without a budget", true: "with a budget that never binds"}[burst.budgeted],
			tput, percentile(lat, 50).Round(time.Millisecond), loadAvg())
		if before != nil && after != nil {
			b.logf("budget cost: %s", queueStatsBetween(before, after).String(n, last.Sub(refs[0].created)))
		}
	}
	row.none, row.budget = sum[0]/float64(count[0]), sum[1]/float64(count[1])
	b.logf("budget cost: mean throughput with a budget %.2fx without, bursts in ABBA order (target >= 0.95x)", row.budget/row.none)
	return nil
}

// namespaceGone records when the bench saw each namespace of requester's claims deleted.
type namespaceGone struct {
	mu sync.Mutex
	at map[string]time.Time
}

func (b *bencher) watchGone(ctx context.Context, requester string) (*namespaceGone, error) {
	w, err := b.k.cs.CoreV1().Namespaces().Watch(ctx, metav1.ListOptions{LabelSelector: tenancyv1alpha1.ClaimNamespaceLabel + "=" + requester})
	if err != nil {
		return nil, err
	}
	g := &namespaceGone{at: map[string]time.Time{}}
	go func() {
		defer w.Stop()
		for ev := range w.ResultChan() {
			if ns, ok := ev.Object.(*corev1.Namespace); ok && ev.Type == watch.Deleted {
				g.mu.Lock()
				g.at[ns.Name] = time.Now()
				g.mu.Unlock()
			}
		}
	}()
	return g, nil
}

func (g *namespaceGone) when(name string) (time.Time, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	t, ok := g.at[name]
	return t, ok
}

// budgetReleases measures queued -> Ready after a release, --budget-releases times: a budget of one
// claim over one requester namespace; claim i holds it while claim i+1 waits Queued; the bench
// deletes claim i (the clock starts before the delete call, as a client's) and stops it at claim i+1's
// Ready=True event on its watch. Claim i+1's wait includes the holding namespace's deletion by
// kube-controller-manager (its objects, then the namespace), which a budget must wait for; the
// namespace's deletion event to Ready is the operator's own part.
func (b *bencher) budgetReleases(ctx context.Context, row *budgetRow) error {
	const series = "brelease"
	requester := requesterNamespace(series, 0, b.o.perNS)
	if err := ensureNamespaces(ctx, b.k, []string{requester}); err != nil {
		return err
	}
	bud, err := newBenchBudget(ctx, b.k, "bench-one-claim", 1, "1000", requester)
	if err != nil {
		return err
	}
	defer func() { _ = b.k.c.Delete(context.Background(), bud) }()
	gone, err := b.watchGone(ctx, requester)
	if err != nil {
		return err
	}
	var holder *claimRef
	for i := 0; i <= b.o.budgetReleases && ctx.Err() == nil; i++ {
		refs, err := createClaims(ctx, b.k, series, i, i+1, b.o.perNS, 1, nil)
		if err != nil {
			return err
		}
		next := refs[0]
		b.claims++
		if holder == nil {
			if b.track.waitAll(ctx, refs, b.o.timeout) > 0 {
				return fmt.Errorf("budget release: the first claim %s is not Ready", next.key())
			}
			holder = &next
			continue
		}
		if err := b.waitQueued(ctx, next); err != nil {
			return err
		}
		held := &tenancyv1alpha1.NamespaceClaim{}
		if err := b.k.c.Get(ctx, clientKey(holder.namespace, holder.name), held); err != nil {
			return err
		}
		sent := time.Now()
		if err := b.k.c.Delete(ctx, held); err != nil {
			return err
		}
		b.claims--
		if b.track.waitAll(ctx, refs, b.o.timeout) > 0 {
			return fmt.Errorf("budget release: queued claim %s not Ready after %s", next.key(), b.o.timeout)
		}
		ready, _ := b.track.at(next.key())
		row.release = append(row.release, ready.Sub(sent))
		if at, ok := gone.when(held.Status.Namespace); ok {
			row.gone = append(row.gone, ready.Sub(at))
		}
		holder = &next
	}
	sort.Slice(row.release, func(i, j int) bool { return row.release[i] < row.release[j] })
	sort.Slice(row.gone, func(i, j int) bool { return row.gone[i] < row.gone[j] })
	b.logf("budget release: queued -> Ready after the holder's delete call p50 %s max %s (target p50 <= 1s); after its namespace is gone p50 %s max %s; %d releases (load %s)",
		percentile(row.release, 50).Round(time.Millisecond), percentile(row.release, 100).Round(time.Millisecond),
		percentile(row.gone, 50).Round(time.Millisecond), percentile(row.gone, 100).Round(time.Millisecond), len(row.release), loadAvg())
	return nil
}

// waitQueued waits until the claim is Ready=False with reason Queued.
func (b *bencher) waitQueued(ctx context.Context, ref claimRef) error {
	deadline := time.Now().Add(b.o.timeout)
	for time.Now().Before(deadline) {
		c := &tenancyv1alpha1.NamespaceClaim{}
		if err := b.k.c.Get(ctx, client.ObjectKey{Namespace: ref.namespace, Name: ref.name}, c); err != nil {
			return err
		}
		if r := meta.FindStatusCondition(c.Status.Conditions, tenancyv1alpha1.ReadyCondition); r != nil && r.Reason == tenancyv1alpha1.QueuedReason {
			return nil
		}
		if err := sleep(ctx, 50*time.Millisecond); err != nil {
			return err
		}
	}
	return fmt.Errorf("budget release: claim %s not Queued after %s", ref.key(), b.o.timeout)
}

// markdown prints the budget section of the report.
func (r *budgetRow) markdown(p func(string, ...any)) {
	p("### Budgets (issue 44)")
	p("")
	if r.burst > 0 {
		p("| burst | Ready/s without a budget (mean of 2, ABBA) | with a budget that never binds (mean of 2) | ratio (target >= 0.95) |")
		p("|---|---|---|---|")
		p("| %d | %.1f | %.1f | %.2f |", r.burst, r.none, r.budget, r.budget/r.none)
		p("")
	}
	if len(r.release) > 0 {
		p("| queued -> Ready after a release (seconds) | samples | p50 (target <= 1) | max |")
		p("|---|---|---|---|")
		p("| from the holding claim's delete call | %d | %s | %s |", len(r.release), secs3(percentile(r.release, 50)), secs3(percentile(r.release, 100)))
		p("| from its namespace's deletion event | %d | %s | %s |", len(r.gone), secs3(percentile(r.gone, 50)), secs3(percentile(r.gone, 100)))
		p("")
	}
}
