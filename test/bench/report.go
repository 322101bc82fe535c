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
	"time"
)

// burstRow is one burst's figures; ceiling is the ceiling program's run of the same size.
type burstRow struct {
	n, ready int
	load     load
	lat      []time.Duration
	span     time.Duration
	ceiling  *burstRow
}

func (r burstRow) throughput() float64 {
	if r.span <= 0 {
		return 0
	}
	return float64(r.ready) / r.span.Seconds()
}

type idleRow struct {
	claims int
	load   load
}

type restartRow struct {
	claims   int
	caughtUp time.Duration
	load     load
}

type scaleRow struct {
	claims          int
	rssKiB, peakKiB int64
	catchUpCPU      time.Duration
	idleCPUPerMin   time.Duration
	oneMore         time.Duration
}

// report is every figure of a run, printed as one markdown document.
type report struct {
	machine      string
	operatorArgs string
	bursts       []burstRow
	idle         *idleRow
	restarts     []restartRow
	scales       []scaleRow
}

func secs(d time.Duration) string { return fmt.Sprintf("%.2f", d.Seconds()) }

func (r report) markdown() string {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	p("Machine: %s", r.machine)
	p("Manager: %s", r.operatorArgs)
	p("")
	if len(r.bursts) > 0 {
		p("### Burst (created -> Ready, seconds) and ceiling")
		p("")
		p("| claims | Ready | claims/s | p50 | p95 | p99 | max | manager CPU s | peak RSS MiB | operator req/claim |" +
			" uncached reads | ceiling claims/s | ceiling p50 | ceiling req/claim | nsclaim / ceiling |")
		p("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
		for _, x := range r.bursts {
			c := burstRow{}
			if x.ceiling != nil {
				c = *x.ceiling
			}
			ratio := 0.0
			if c.throughput() > 0 {
				ratio = x.throughput() / c.throughput()
			}
			p("| %d | %d | %.2f | %s | %s | %s | %s | %.1f | %d | %.1f | %d | %.2f | %s | %.1f | %.2f |",
				x.n, x.ready, x.throughput(), secs(percentile(x.lat, 50)), secs(percentile(x.lat, 95)), secs(percentile(x.lat, 99)), secs(percentile(x.lat, 100)),
				x.load.cpu.Seconds(), x.load.peakKiB/1024, perClaim(x.load.requests.total("operator"), x.n), x.load.uncachedReads(),
				c.throughput(), secs(percentile(c.lat, 50)), perClaim(c.load.requests.total("operator"), c.n), ratio)
		}
		p("")
		last := r.bursts[len(r.bursts)-1]
		p("### API requests per claim, burst of %d (audit log; operator = its ServiceAccount)", last.n)
		p("")
		p("| verb resource | operator | ceiling |")
		p("|---|---|---|")
		keys := map[string]bool{}
		for _, k := range last.load.requests.keys("operator") {
			keys[k] = true
		}
		if last.ceiling != nil {
			for _, k := range last.ceiling.load.requests.keys("operator") {
				keys[k] = true
			}
		}
		ks := make([]string, 0, len(keys))
		for k := range keys {
			ks = append(ks, k)
		}
		sort.Slice(ks, func(i, j int) bool {
			a, b := last.load.requests["operator"][ks[i]], last.load.requests["operator"][ks[j]]
			if a != b {
				return a > b
			}
			return ks[i] < ks[j]
		})
		for _, k := range ks {
			c := 0.0
			if last.ceiling != nil {
				c = perClaim(last.ceiling.load.requests["operator"][k], last.n)
			}
			p("| %s | %.2f | %.2f |", k, perClaim(last.load.requests["operator"][k], last.n), c)
		}
		p("| **total** | **%.2f** | **%.2f** |", perClaim(last.load.requests.total("operator"), last.n), perClaim(func() int {
			if last.ceiling == nil {
				return 0
			}
			return last.ceiling.load.requests.total("operator")
		}(), last.n))
		p("")
		p("Everyone else during the burst: bench client %d requests (%.1f/claim),"+
			" control plane (kube-controller-manager, kube-apiserver itself) %d (%.1f/claim)."+
			" kube-apiserver's apiserver_request_total grew by %.0f; the audit log holds %d.",
			last.load.requests.total("bench"), perClaim(last.load.requests.total("bench"), last.n),
			last.load.requests.total("control-plane"), perClaim(last.load.requests.total("control-plane"), last.n),
			last.load.apiserverTotal(), last.load.requests.all())
		p("")
		p("Control plane requests during the burst, per claim (top 8): %s", top(last.load.requests, "control-plane", 8, float64(last.n)))
		p("")
	}
	if r.idle != nil {
		l := r.idle.load
		mins := l.dur.Minutes()
		p("### Idle (%d claims, %.1f min)", r.idle.claims, mins)
		p("")
		p("Operator: %.1f requests/min: %s. Everyone else: %.1f/min. Manager CPU %.2f s/min.", float64(l.requests.total("operator"))/mins,
			top(l.requests, "operator", 10, mins), float64(l.requests.total("control-plane")+l.requests.total("bench"))/mins, l.cpu.Seconds()/mins)
		p("")
	}
	if len(r.restarts) > 0 {
		p("### Restart")
		p("")
		p("| claims | caught up s | writes | tokens re-issued | uncached reads | informer lists | manager CPU s | RSS MiB | peak RSS MiB | all operator requests |")
		p("|---|---|---|---|---|---|---|---|---|---|")
		for _, x := range r.restarts {
			lists := x.load.requests.count("operator", func(w string) bool { return strings.HasPrefix(w, "list ") })
			p("| %d | %s | %d | %d | %d | %d | %.1f | %d | %d | %d |", x.claims, secs(x.caughtUp), x.load.operatorWrites(), x.load.tokens(),
				x.load.uncachedReads(), lists, x.load.cpu.Seconds(), x.load.rssKiB/1024, x.load.peakKiB/1024, x.load.requests.total("operator"))
		}
		p("")
		for _, x := range r.restarts {
			p("Operator requests after the restart with %d claims: %s", x.claims, top(x.load.requests, "operator", 12, 1))
		}
		p("")
	}
	if len(r.scales) > 0 {
		p("### Scale")
		p("")
		p("| claims | RSS MiB | peak RSS MiB (catch-up) | catch-up CPU s | idle CPU s/min | one more claim Ready s |")
		p("|---|---|---|---|---|---|")
		for _, x := range r.scales {
			p("| %d | %d | %d | %.1f | %.2f | %s |", x.claims, x.rssKiB/1024, x.peakKiB/1024, x.catchUpCPU.Seconds(), x.idleCPUPerMin.Seconds(), secs(x.oneMore))
		}
		p("")
	}
	return b.String()
}

func perClaim(n, claims int) float64 {
	if claims == 0 {
		return 0
	}
	return float64(n) / float64(claims)
}

// top lists who's n most frequent requests, each divided by per.
func top(rc requestCounts, who string, n int, per float64) string {
	return topFilter(rc, who, n, func(string) bool { return true }, per)
}

func topFilter(rc requestCounts, who string, n int, keep func(string) bool, per ...float64) string {
	div := 1.0
	if len(per) > 0 && per[0] > 0 {
		div = per[0]
	}
	var parts []string
	for _, k := range rc.keys(who) {
		if !keep(k) {
			continue
		}
		if len(parts) == n {
			parts = append(parts, "...")
			break
		}
		if div == 1 {
			parts = append(parts, fmt.Sprintf("%s %d", k, rc[who][k]))
		} else {
			parts = append(parts, fmt.Sprintf("%s %.2f", k, float64(rc[who][k])/div))
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}
