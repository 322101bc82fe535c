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
	"strings"
	"time"
)

// burstRow is one burst's figures; ceilingA and ceilingB are the ceilings' runs of the same size.
type burstRow struct {
	n, ready           int
	load               load
	lat                []time.Duration
	span               time.Duration
	ceilingA, ceilingB *burstRow
	// usable is ceiling (a)'s run measured until kube-controller-manager made each namespace usable:
	// the usable ceiling.
	usable *burstRow
}

// statusWritesPerClaim is the operator's status writes (patch or update of namespaceclaims/status)
// per claim.
func (r burstRow) statusWritesPerClaim() float64 {
	return perClaim(r.load.requests.count(whoOperator, func(w string) bool {
		v, res, _ := strings.Cut(w, " ")
		return res == "namespaceclaims/status" && (v == verbPatch || v == verbUpdate)
	}), r.n)
}

// perClaim is the burst's requests per claim by "verb resource": the operator's, and the tenant's
// (marked "as tenant": a self-test made with the issued token).
func (r burstRow) perClaim() map[string]float64 {
	out := map[string]float64{}
	for w, v := range r.load.requests[whoOperator] {
		out[w] += perClaim(v, r.n)
	}
	for w, v := range r.load.requests[whoTenant] {
		out[w+" (as tenant)"] += perClaim(v, r.n)
	}
	return out
}

// requestsPerClaim is the operator's and the tenant's requests per claim.
func (r burstRow) requestsPerClaim() float64 {
	return perClaim(r.load.requests.total(whoOperator)+r.load.requests.total(whoTenant), r.n)
}

// leasePerClaim is the part of requestsPerClaim that is the leader election's lease (its renewals).
func (r burstRow) leasePerClaim() float64 {
	return perClaim(r.load.requests.count(whoOperator, isLease), r.n)
}

// isLease reports a request to a Lease ("verb leases"): only the leader election's are the operator's.
func isLease(what string) bool {
	_, res, _ := strings.Cut(what, " ")
	return res == "leases"
}

// selfTestPerClaim is the authorization reviews per claim, the operator's and the tenant's.
func (r burstRow) selfTestPerClaim() float64 {
	return perClaim(r.load.requests.count(whoOperator, isSelfTest)+r.load.requests.count(whoTenant, isSelfTest), r.n)
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
	machine        string
	operatorArgs   string
	ceilingWorkers int
	latency        *latencyRow
	pool           *poolRow
	budget         *budgetRow
	bursts         []burstRow
	idle           *idleRow
	restarts       []restartRow
	scales         []scaleRow
}

func secs(d time.Duration) string { return fmt.Sprintf("%.2f", d.Seconds()) }

func (r report) markdown() string {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	p("Machine: %s", r.machine)
	p("Manager: %s", r.operatorArgs)
	p("")
	if len(r.bursts) > 0 {
		r.burstMarkdown(p)
	}
	if r.latency != nil {
		p("### Single claim on an idle cluster (one at a time, seconds)")
		p("")
		p("| | samples | min | median | max |")
		p("|---|---|---|---|---|")
		for _, x := range []struct {
			name string
			lat  []time.Duration
		}{{"nsclaim: created -> Ready", r.latency.nsclaim}, {"raw client: created -> usable (ceiling (a)'s writes, then kube-controller-manager's work)", r.latency.raw},
			{"raw client: created -> last write", r.latency.rawWrites}} {
			p("| %s | %d | %s | %s | %s |", x.name, len(x.lat), secs3(percentile(x.lat, 0)), secs3(percentile(x.lat, 50)), secs3(percentile(x.lat, 100)))
		}
		p("")
	}
	if r.pool != nil {
		r.pool.markdown(p)
	}
	if r.budget != nil {
		r.budget.markdown(p)
	}
	p("### Targets (issues 13 and 30; printed, not asserted)")
	p("")
	p("| target | figure | |")
	p("|---|---|---|")
	for _, t := range evaluate(r.figures()) {
		p("| %s | %s | %s |", t.target, t.figure, t.verdict())
	}
	p("")
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

// figures gathers what the targets are judged on: the last burst, the single claims, the largest
// scale and restart.
func (r report) figures() figures {
	f := figures{}
	if len(r.bursts) > 0 {
		last := r.bursts[len(r.bursts)-1]
		f.burst, f.rate, f.statusWritesPerClaim = last.n, last.throughput(), last.statusWritesPerClaim()
		if last.usable != nil {
			f.usableRate = last.usable.throughput()
		}
		f.selfTestPerClaim, f.requestsPerClaim, f.leasePerClaim = last.selfTestPerClaim(), last.requestsPerClaim(), last.leasePerClaim()
		if last.ceilingA != nil {
			f.ceilingARate, f.ceilingARequestsPerClaim = last.ceilingA.throughput(), last.ceilingA.requestsPerClaim()
		}
	}
	if r.latency != nil {
		f.single, f.rawSingle = percentile(r.latency.nsclaim, 50), percentile(r.latency.raw, 50)
	}
	for _, x := range r.scales {
		if x.claims >= f.rssClaims {
			f.rssClaims, f.rssKiB = x.claims, x.rssKiB
		}
	}
	for _, x := range r.restarts {
		if x.claims >= f.restartClaims {
			f.restartClaims, f.tokensReissued = x.claims, x.load.tokens()
		}
	}
	return f
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
