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
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
)

// poolClassName is the class of the pool phase: the bench class with a warm pool.
const poolClassName = "bench-pool"

// Targets of issues 30 and 42 for the pool, measured from a client (printed, never asserted).
const (
	poolTargetP50      = 60 * time.Millisecond
	poolTargetP99      = 250 * time.Millisecond
	poolTargetCeilingX = 0.8
)

// poolRow is what the pool phase measured.
type poolRow struct {
	size int
	// limit is the class's maxClaimsPerNamespace (0: none).
	limit int
	// fill is the time the empty pool took to fill.
	fill time.Duration
	// single are the single claims' create call -> Ready on the bench's watch, sorted; singleLoad
	// their window.
	single     []time.Duration
	singleLoad load
	// stages is where the single claims' time went (stageMedians) over stagedOf claims.
	stages   map[string]time.Duration
	stagedOf int
	// trace is the median single claim's requests in order (medianTrace).
	trace []string
	// burst is the burst of size claims in one requester namespace, spread the same over spreadOver
	// requester namespaces (spreadOver 0: not run).
	burst, spread pooledBurst
	spreadOver    int
	// ceiling is the plain-writes ceiling (ceiling (a)) of the same run, claims/s, of ceilingOf claims
	// (poolCeiling); 0 when the run had none.
	ceiling   float64
	ceilingOf int
}

// pooledBurst is a burst from the full pool and its claims' Pooled reasons.
type pooledBurst struct {
	burstRow
	hits, misses int
}

// poolPhase measures the warm pool as users have it: a class like the bench class with
// spec.pool.size = --pool and access.maxClaimsPerNamespace = --pool-limit, filled; then single claims
// one at a time, each from the full pool; then a burst of --pool claims at once in one requester
// namespace (a monorepo's matrix), then the same spread over --pool-spread requester namespaces, each
// from the full pool and against the plain-writes ceiling of the same run. Every latency runs from the
// create call to the event of Ready=True on the bench's watch. The pool is switched off at the end,
// so the later phases do not pay for its refill.
func (b *bencher) poolPhase(ctx context.Context) error {
	n := b.o.pool
	class := benchClass()
	class.Name, class.Spec.Naming.Prefix, class.Spec.Pool.Size = poolClassName, "bp-", int32(n)
	class.Spec.Access.MaxClaimsPerNamespace = int32(b.o.poolLimit)
	if err := b.k.c.Create(ctx, class); err != nil {
		return fmt.Errorf("creating NamespaceClass %s: %w", poolClassName, err)
	}
	defer func() {
		cur := &tenancyv1alpha1.NamespaceClass{}
		if err := b.k.c.Get(context.Background(), client.ObjectKey{Name: poolClassName}, cur); err == nil {
			cur.Spec.Pool.Size = 0
			_ = b.k.c.Update(context.Background(), cur)
		}
	}()
	row := &poolRow{size: n, limit: b.o.poolLimit}
	b.logf("pool: filling a pool of %d (maxClaimsPerNamespace %d)", n, b.o.poolLimit)
	t0 := time.Now()
	if err := b.waitPoolFull(ctx, n); err != nil {
		return err
	}
	row.fill = time.Since(t0)
	b.logf("pool: %d ready in %s (load %s)", n, row.fill.Round(time.Millisecond), loadAvg())

	w := b.begin(ctx, b.op.pid())
	// With --metrics-pprof the manager's CPU over the single claims is profiled (cpu-pool-single.pb.gz).
	profiled := b.op.cpuProfile(filepath.Dir(b.o.out), "pool-single", time.Duration(b.o.latency)*(b.o.latencyPause+200*time.Millisecond))
	var singles []claimRef
	for i := 0; i < b.o.latency; i++ {
		if err := b.waitPoolFull(ctx, n); err != nil {
			return err
		}
		refs, err := createClaimsOf(ctx, b.k, poolClassName, "pool-single", i, i+1, b.o.perNS, 1, nil)
		if err != nil {
			return err
		}
		b.claims++
		if b.track.waitAll(ctx, refs, b.o.timeout) > 0 {
			return fmt.Errorf("claim %s not Ready after %s", refs[0].key(), b.o.timeout)
		}
		lat, _ := b.track.latencies(refs)
		row.single = append(row.single, lat[0])
		singles = append(singles, refs[0])
		if err := sleep(ctx, b.o.latencyPause); err != nil {
			return err
		}
	}
	row.singleLoad = w.end(ctx, b.op.pid())
	if path := profiled(); path != "" {
		b.logf("pool: the manager's CPU profile over the single claims: %s", path)
	}
	if events, err := b.audit.readTimed(w.from, b.audit.offset()); err == nil {
		samples := b.stageSamplesOf(ctx, singles)
		row.stages, row.stagedOf = stageMedians(samples, events)
		row.trace = medianTrace(samples, events)
	}
	sort.Slice(row.single, func(i, j int) bool { return row.single[i] < row.single[j] })
	if len(row.single) > 0 {
		b.logf("pool single claim: p50 %s p90 %s p99 %s (targets p50 <= %s, p99 <= %s; load %s)", percentile(row.single, 50).Round(time.Millisecond),
			percentile(row.single, 90).Round(time.Millisecond), percentile(row.single, 99).Round(time.Millisecond), poolTargetP50, poolTargetP99, loadAvg())
	}
	row.ceiling, row.ceilingOf = poolCeiling(b.rows.bursts, n)
	var err error
	// All in one requester namespace (n <= --claims-per-namespace is not assumed).
	if row.burst, err = b.poolBurst(ctx, "pool-burst", n, n); err != nil {
		return err
	}
	if b.o.poolSpread > 0 {
		row.spreadOver = b.o.poolSpread
		if row.spread, err = b.poolBurst(ctx, "pool-spread", n, (n+b.o.poolSpread-1)/b.o.poolSpread); err != nil {
			return err
		}
	}
	b.rows.pool = row
	return nil
}

// poolBurst waits for the full pool, then creates n claims of series at once, perNS to a requester
// namespace, and measures them.
func (b *bencher) poolBurst(ctx context.Context, series string, n, perNS int) (pooledBurst, error) {
	var out pooledBurst
	if err := b.waitPoolFull(ctx, b.o.pool); err != nil {
		return out, err
	}
	w := b.begin(ctx, b.op.pid())
	refs, err := createClaimsOf(ctx, b.k, poolClassName, series, 0, n, perNS, b.o.createParallel, nil)
	if err != nil {
		return out, err
	}
	b.claims += len(refs)
	missing := b.track.waitAll(ctx, refs, b.o.timeout)
	l := w.end(ctx, b.op.pid())
	lat, last := b.track.latencies(refs)
	out.burstRow = burstRow{n: n, ready: len(lat), load: l, lat: lat, span: last.Sub(refs[0].created)}
	if missing > 0 {
		b.logf("%s: %d of %d claims not Ready after %s", series, missing, n, b.o.timeout)
	}
	if out.hits, out.misses, err = b.pooledReasons(ctx, refs); err != nil {
		return out, err
	}
	b.logf("%s %d (%d per requester namespace): %d Ready in %s (%.1f/s), p50 %s p99 %s, %d hits %d misses (load %s)",
		series, n, perNS, len(lat), out.span.Round(time.Millisecond), out.throughput(),
		percentile(lat, 50).Round(time.Millisecond), percentile(lat, 99).Round(time.Millisecond), out.hits, out.misses, loadAvg())
	return out, nil
}

// poolCeiling returns the plain-writes ceiling to hold a pool burst of n claims against: that of the
// run's burst closest in size (the smallest of n or more, else the largest), since a short burst's
// ramp up and down weighs on its rate as on the pool's; and that burst's size. Zero without one.
func poolCeiling(bursts []burstRow, n int) (float64, int) {
	var best *burstRow
	for i := range bursts {
		br := &bursts[i]
		if br.ceilingA == nil {
			continue
		}
		switch {
		case best == nil:
			best = br
		case best.n < n && br.n > best.n:
			best = br
		case br.n >= n && br.n < best.n:
			best = br
		}
	}
	if best == nil {
		return 0, 0
	}
	return best.ceilingA.throughput(), best.n
}

// waitPoolFull waits until the pool class reports n ready pooled namespaces and none being made.
func (b *bencher) waitPoolFull(ctx context.Context, n int) error {
	deadline := time.Now().Add(b.o.timeout)
	for {
		cur := &tenancyv1alpha1.NamespaceClass{}
		if err := b.k.c.Get(ctx, client.ObjectKey{Name: poolClassName}, cur); err != nil {
			return err
		}
		if p := cur.Status.Pool; p != nil && int(p.Ready) >= n && p.Creating == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the pool of %s did not fill to %d within %s: %+v", poolClassName, n, b.o.timeout, cur.Status.Pool)
		}
		if err := sleep(ctx, 100*time.Millisecond); err != nil {
			return err
		}
	}
}

// pooledReasons counts the claims' Pooled conditions: PoolHit and PoolEmpty.
func (b *bencher) pooledReasons(ctx context.Context, refs []claimRef) (hits, misses int, err error) {
	for _, r := range refs {
		c := &tenancyv1alpha1.NamespaceClaim{}
		if err := b.k.c.Get(ctx, client.ObjectKey{Namespace: r.namespace, Name: r.name}, c); err != nil {
			return 0, 0, err
		}
		switch cond := meta.FindStatusCondition(c.Status.Conditions, tenancyv1alpha1.PooledCondition); {
		case cond == nil:
		case cond.Reason == tenancyv1alpha1.PoolHitReason:
			hits++
		case cond.Reason == tenancyv1alpha1.PoolEmptyReason:
			misses++
		}
	}
	return hits, misses, nil
}

// markdown prints the pool phase: its figures, the server time of the single claims' requests, and
// the targets met or not.
func (r *poolRow) markdown(p func(string, ...any)) {
	p("### Warm pool (spec.pool.size = %d, access.maxClaimsPerNamespace = %d)", r.size, r.limit)
	p("")
	p("Measured from a client: the create call to the event of Ready=True on the bench's watch of claims.")
	p("")
	p("| | figure |")
	p("|---|---|")
	p("| pool filled from empty | %s s |", secs(r.fill))
	if len(r.single) > 0 {
		p("| single claim from the full pool (%d samples) | p50 %s s, p90 %s s, p99 %s s |", len(r.single),
			secs3(percentile(r.single, 50)), secs3(percentile(r.single, 90)), secs3(percentile(r.single, 99)))
	}
	bursts := []struct {
		what string
		b    *pooledBurst
	}{{"one requester namespace", &r.burst}}
	if r.spreadOver > 0 {
		bursts = append(bursts, struct {
			what string
			b    *pooledBurst
		}{fmt.Sprintf("spread over %d requester namespaces", r.spreadOver), &r.spread})
	}
	for _, x := range bursts {
		p("| burst of %d, %s: claims/s (Ready %d; p50 %s s, p99 %s s) | %.1f |", x.b.n, x.what, x.b.ready,
			secs3(percentile(x.b.lat, 50)), secs3(percentile(x.b.lat, 99)), x.b.throughput())
		p("| burst, %s: hits / misses | %d / %d |", x.what, x.b.hits, x.b.misses)
	}
	if r.ceiling > 0 {
		p("| plain-writes ceiling of this run (%d claims) | %.1f claims/s |", r.ceilingOf, r.ceiling)
	}
	p("")
	if len(r.single) > 0 {
		stagesMarkdown(p, r.stages, r.stagedOf, percentile(r.single, 50))
		for _, l := range r.trace {
			p("%s", l)
		}
		r.singleCosts(p)
	}
	p("| pool target | figure | |")
	p("|---|---|---|")
	if len(r.single) > 0 {
		p50, p99 := percentile(r.single, 50), percentile(r.single, 99)
		p("| single claim p50 <= %s | %s s | %s |", poolTargetP50, secs3(p50), metOrNot(p50 <= poolTargetP50))
		p("| single claim p99 <= %s | %s s | %s |", poolTargetP99, secs3(p99), metOrNot(p99 <= poolTargetP99))
	}
	if r.ceiling > 0 {
		for _, x := range bursts {
			v := x.b.throughput() / r.ceiling
			p("| burst, %s, >= %.1fx the plain-writes ceiling | %.2fx | %s |", x.what, poolTargetCeilingX, v, metOrNot(v >= poolTargetCeilingX))
		}
	}
	p("")
}

// singleCosts prints the server time of the single claims' requests.
func (r *poolRow) singleCosts(p func(string, ...any)) {
	p("kube-apiserver's time per request during the single claims (everyone's requests; mean ms x count per claim), the ten largest:")
	p("")
	p("| request | mean ms | per claim |")
	p("|---|---|---|")
	type cost struct {
		what        string
		mean, count float64
	}
	var costs []cost
	for k, v := range r.singleLoad.seconds {
		if what, ok := strings.CutSuffix(k, " count"); ok && v > 0 {
			costs = append(costs, cost{what, r.singleLoad.meanMillis(what), v})
		}
	}
	slices.SortFunc(costs, func(a, b cost) int {
		switch x, y := a.mean*a.count, b.mean*b.count; {
		case x > y:
			return -1
		case x < y:
			return 1
		}
		return 0
	})
	for i, c := range costs {
		if i == 10 {
			break
		}
		p("| %s | %.1f | %.1f |", c.what, c.mean, c.count/float64(len(r.single)))
	}
	p("")
}
