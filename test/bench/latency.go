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
	"time"
)

// The single-claim latency: one claim at a time on an idle cluster, each after the previous one is
// done and a pause. The raw client's figure is ceiling (a)'s writes for one claim (create returned ->
// last write returned), measured before the manager starts; nsclaim's is create returned -> the
// bench's informer saw Ready=True.

// latencyRow is both series of the single-claim phase.
type latencyRow struct {
	// raw is the raw client's create -> usable (its writes and rules reviews, then
	// kube-controller-manager's work); rawWrites is its create -> last write.
	raw, rawWrites, nsclaim []time.Duration
}

// rawLatency measures ceiling (a) for n claims, one at a time, until each namespace is usable, and
// finishes each (off the clock) so that the manager adopts it as Ready. It returns the create ->
// usable latencies and the create -> last write ones, sorted.
func (b *bencher) rawLatency(ctx context.Context, rc *rawClient, n int) ([]time.Duration, []time.Duration, error) {
	var out, writes []time.Duration
	withQuota := rc.class.Spec.ResourceQuota != nil
	for i := 0; i < n; i++ {
		refs, err := createClaims(ctx, b.k, "rawsingle", i, i+1, b.o.perNS, 1, nil)
		if err != nil {
			return nil, nil, err
		}
		b.claims++
		p, err := rc.objects(ctx, refs[0].obj)
		done := time.Now()
		if err != nil {
			return nil, nil, fmt.Errorf("raw client, claim %s: %w", refs[0].key(), err)
		}
		res := poolResult{done: map[string]time.Time{refs[0].key(): done}, made: map[string]provisioned{refs[0].key(): p}}
		if b.usable.waitUsable(ctx, res.made, withQuota, b.o.timeout) > 0 {
			return nil, nil, fmt.Errorf("raw client, namespace %s not usable after %s", p.namespace, b.o.timeout)
		}
		lat, _ := b.usable.usableLatencies(refs, res, withQuota)
		out = append(out, lat[0])
		writes = append(writes, done.Sub(refs[0].created))
		if err := rc.finish(ctx, refs[0].obj, p); err != nil {
			return nil, nil, err
		}
		if err := sleep(ctx, b.o.latencyPause); err != nil {
			return nil, nil, err
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	sort.Slice(writes, func(i, j int) bool { return writes[i] < writes[j] })
	return out, writes, nil
}

// nsclaimLatency creates n claims, one at a time, each once the previous one is Ready.
func (b *bencher) nsclaimLatency(ctx context.Context, n int) ([]time.Duration, error) {
	var out []time.Duration
	for i := 0; i < n; i++ {
		refs, err := createClaims(ctx, b.k, "single", i, i+1, b.o.perNS, 1, nil)
		if err != nil {
			return nil, err
		}
		b.claims++
		if b.track.waitAll(ctx, refs, b.o.timeout) > 0 {
			return nil, fmt.Errorf("claim %s not Ready after %s", refs[0].key(), b.o.timeout)
		}
		lat, _ := b.track.latencies(refs)
		out = append(out, lat[0])
		if err := sleep(ctx, b.o.latencyPause); err != nil {
			return nil, err
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out, nil
}
