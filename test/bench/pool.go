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

// Targets of issue 30's pool (printed, never asserted).
const (
	poolTargetP50      = 100 * time.Millisecond
	poolTargetCeilingX = 0.8
)

// poolRow is what the pool phase measured.
type poolRow struct {
	size int
	// fill is the time the empty pool took to fill.
	fill time.Duration
	// single are the single claims' created -> Ready, sorted; singleLoad their window.
	single     []time.Duration
	singleLoad load
	// burst is the burst of size claims; hits and misses its Pooled reasons.
	burst        burstRow
	hits, misses int
	// ceiling is the plain-writes ceiling (ceiling (a)) of the same run, claims/s, of ceilingOf claims
	// (poolCeiling); 0 when the run had none.
	ceiling   float64
	ceilingOf int
}

// poolPhase measures the warm pool: a class like the bench class with spec.pool.size = --pool, filled;
// then single claims one at a time, each from the full pool (created -> Ready); then a burst of
// --pool claims at once, against the plain-writes ceiling of the same run. The pool is switched off
// at the end, so the later phases do not pay for its refill.
func (b *bencher) poolPhase(ctx context.Context) error {
	n := b.o.pool
	class := benchClass()
	class.Name, class.Spec.Naming.Prefix, class.Spec.Pool.Size = poolClassName, "bp-", int32(n)
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
	row := &poolRow{size: n}
	b.logf("pool: filling a pool of %d", n)
	t0 := time.Now()
	if err := b.waitPoolFull(ctx, n); err != nil {
		return err
	}
	row.fill = time.Since(t0)
	b.logf("pool: %d ready in %s (load %s)", n, row.fill.Round(time.Millisecond), loadAvg())

	w := b.begin(ctx, b.op.pid())
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
		if err := sleep(ctx, b.o.latencyPause); err != nil {
			return err
		}
	}
	row.singleLoad = w.end(ctx, b.op.pid())
	sort.Slice(row.single, func(i, j int) bool { return row.single[i] < row.single[j] })
	if len(row.single) > 0 {
		b.logf("pool single claim: p50 %s p90 %s (target p50 <= %s; load %s)", percentile(row.single, 50).Round(time.Millisecond),
			percentile(row.single, 90).Round(time.Millisecond), poolTargetP50, loadAvg())
	}

	if err := b.waitPoolFull(ctx, n); err != nil {
		return err
	}
	w = b.begin(ctx, b.op.pid())
	refs, err := createClaimsOf(ctx, b.k, poolClassName, "pool-burst", 0, n, b.o.perNS, b.o.createParallel, nil)
	if err != nil {
		return err
	}
	b.claims += len(refs)
	missing := b.track.waitAll(ctx, refs, b.o.timeout)
	l := w.end(ctx, b.op.pid())
	lat, last := b.track.latencies(refs)
	row.burst = burstRow{n: n, ready: len(lat), load: l, lat: lat, span: last.Sub(refs[0].created)}
	if missing > 0 {
		b.logf("pool burst: %d of %d claims not Ready after %s", missing, n, b.o.timeout)
	}
	if row.hits, row.misses, err = b.pooledReasons(ctx, refs); err != nil {
		return err
	}
	row.ceiling, row.ceilingOf = poolCeiling(b.rows.bursts, n)
	b.logf("pool burst %d: %d Ready in %s (%.1f/s; plain-writes ceiling %.1f/s), p50 %s p99 %s, %d hits %d misses (load %s)",
		n, len(lat), row.burst.span.Round(time.Millisecond), row.burst.throughput(), row.ceiling,
		percentile(lat, 50).Round(time.Millisecond), percentile(lat, 99).Round(time.Millisecond), row.hits, row.misses, loadAvg())
	b.rows.pool = row
	return nil
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
	p("### Warm pool (spec.pool.size = %d)", r.size)
	p("")
	p("| | figure |")
	p("|---|---|")
	p("| pool filled from empty | %s s |", secs(r.fill))
	if len(r.single) > 0 {
		p("| single claim from the full pool, created -> Ready (%d samples) | p50 %s s, p90 %s s |", len(r.single),
			secs3(percentile(r.single, 50)), secs3(percentile(r.single, 90)))
	}
	p("| burst of %d: claims/s (Ready %d) | %.1f |", r.burst.n, r.burst.ready, r.burst.throughput())
	p("| burst: hits / misses | %d / %d |", r.hits, r.misses)
	if r.ceiling > 0 {
		p("| plain-writes ceiling of this run (%d claims) | %.1f claims/s |", r.ceilingOf, r.ceiling)
	}
	p("")
	if len(r.single) > 0 {
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
	p("| pool target | figure | |")
	p("|---|---|---|")
	if len(r.single) > 0 {
		p50 := percentile(r.single, 50)
		p("| single claim p50 <= %s | %s s | %s |", poolTargetP50, secs3(p50), metOrNot(p50 <= poolTargetP50))
	}
	if r.ceiling > 0 {
		x := r.burst.throughput() / r.ceiling
		p("| burst >= %.1fx the plain-writes ceiling | %.2fx | %s |", poolTargetCeilingX, x, metOrNot(x >= poolTargetCeilingX))
	}
	p("")
}
