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
	"fmt"
	"sort"
	"strings"
)

// burstMarkdown prints the bursts against the ceilings, and the last burst's requests per claim by
// verb and resource.
func (r report) burstMarkdown(p func(string, ...any)) {
	p("### Burst (created -> Ready, seconds) against the ceilings")
	p("")
	p("Ceilings at %d in parallel, as the operator's ServiceAccount, no reads: (a) plain writes: nsclaim's objects for each claim"+
		" and the 2 rules reviews of its self-test with the minted token; the usable ceiling: (a) measured until kube-controller-manager"+
		" made each namespace usable (its `default` ServiceAccount exists, the quota has its status), what Ready promises;"+
		" (b) the shell operator nsplease's ten writes.", r.ceilingWorkers)
	p("")
	p("| run | claims | done | per s | p50 | p95 | p99 | max | requests/claim | self-test requests/claim | status writes/claim | nsclaim / this |")
	p("|---|---|---|---|---|---|---|---|---|---|---|---|")
	for _, x := range r.bursts {
		rows := []struct {
			name string
			r    *burstRow
		}{{"nsclaim", &x}, {"**usable ceiling**: (a) until usable", x.usable}, {"ceiling (a): plain writes", x.ceilingA}, {"ceiling (b): nsplease's ten writes", x.ceilingB}}
		for _, y := range rows {
			if y.r == nil {
				continue
			}
			ratio := 0.0
			if y.r.throughput() > 0 {
				ratio = x.throughput() / y.r.throughput()
			}
			p("| %s | %d | %d | %.2f | %s | %s | %s | %s | %.2f | %.2f | %.2f | %.2fx |", y.name, y.r.n, y.r.ready, y.r.throughput(),
				secs(percentile(y.r.lat, 50)), secs(percentile(y.r.lat, 95)), secs(percentile(y.r.lat, 99)), secs(percentile(y.r.lat, 100)),
				y.r.requestsPerClaim(), y.r.selfTestPerClaim(), y.r.statusWritesPerClaim(), ratio)
		}
	}
	p("")
	p("| claims | manager CPU s | peak RSS MiB | uncached reads |")
	p("|---|---|---|---|")
	for _, x := range r.bursts {
		p("| %d | %.1f | %d | %d |", x.n, x.load.cpu.Seconds(), x.load.peakKiB/1024, x.load.uncachedReads())
	}
	p("")
	last := r.bursts[len(r.bursts)-1]
	p("### Requests per claim by verb and resource, burst of %d (audit log)", last.n)
	p("")
	p("nsclaim: its ServiceAccount's requests, and the tenant's (\"as tenant\": made with the issued token).")
	p("")
	p("| verb resource | nsclaim | ceiling (a) | ceiling (b) |")
	p("|---|---|---|---|")
	cols := []map[string]float64{last.perClaim(), {}, {}}
	if last.ceilingA != nil {
		cols[1] = last.ceilingA.perClaim()
	}
	if last.ceilingB != nil {
		cols[2] = last.ceilingB.perClaim()
	}
	keys := map[string]bool{}
	for _, c := range cols {
		for k := range c {
			keys[k] = true
		}
	}
	ks := make([]string, 0, len(keys))
	for k := range keys {
		ks = append(ks, k)
	}
	sort.Slice(ks, func(i, j int) bool {
		if cols[0][ks[i]] != cols[0][ks[j]] {
			return cols[0][ks[i]] > cols[0][ks[j]]
		}
		if cols[1][ks[i]] != cols[1][ks[j]] {
			return cols[1][ks[i]] > cols[1][ks[j]]
		}
		return ks[i] < ks[j]
	})
	total := [3]float64{}
	for _, k := range ks {
		cells := make([]string, 0, len(cols))
		for i, c := range cols {
			total[i] += c[k]
			cells = append(cells, fmtPerClaim(c[k]))
		}
		p("| %s | %s |", k, strings.Join(cells, " | "))
	}
	p("| **total** | **%.2f** | **%.2f** | **%.2f** |", total[0], total[1], total[2])
	p("")
	p("Mean server-side time (ms, kube-apiserver's apiserver_request_duration_seconds, every client's requests in the window):")
	p("")
	p("| verb resource | nsclaim burst | ceiling (a) |")
	p("|---|---|---|")
	timed := map[string]bool{}
	for _, k := range ks {
		k = strings.TrimSuffix(k, " (as tenant)")
		if timed[k] {
			continue
		}
		timed[k] = true
		a := 0.0
		if last.ceilingA != nil {
			a = last.ceilingA.load.meanMillis(k)
		}
		p("| %s | %.1f | %.1f |", k, last.load.meanMillis(k), a)
	}
	p("")
	p("Everyone else during the nsclaim burst: bench client %d requests (%.1f/claim),"+
		" control plane (kube-controller-manager, kube-apiserver itself) %d (%.1f/claim)."+
		" kube-apiserver's apiserver_request_total grew by %.0f; the audit log holds %d.",
		last.load.requests.total(cmdBench), perClaim(last.load.requests.total(cmdBench), last.n),
		last.load.requests.total("control-plane"), perClaim(last.load.requests.total("control-plane"), last.n),
		last.load.apiserverTotal(), last.load.requests.all())
	p("")
	p("Control plane requests during the burst, per claim (top 8): %s", top(last.load.requests, "control-plane", 8, float64(last.n)))
	p("")
}

func fmtPerClaim(v float64) string {
	if v == 0 {
		return "0"
	}
	return fmt.Sprintf("%.2f", v)
}
