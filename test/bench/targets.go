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
	"time"
)

// The targets of issues 13 and 30, printed next to the figures with met / not met. They are never
// asserted: the bench reports, it does not pass or fail.

// figures are the measurements the targets are judged on; a zero count means "not measured".
type figures struct {
	burst              int
	rate, ceilingARate float64
	// usableRate is the usable ceiling's throughput: ceiling (a) until kube-controller-manager made
	// each namespace usable.
	usableRate           float64
	statusWritesPerClaim float64
	selfTestPerClaim     float64
	requestsPerClaim     float64
	// leasePerClaim is the part of requestsPerClaim that is the leader election's lease renewals: a
	// cost of time (one update every retry period, claims or not), not of claims, so the target is
	// judged on the rest. Both are printed.
	leasePerClaim            float64
	ceilingARequestsPerClaim float64
	single, rawSingle        time.Duration
	rssClaims                int
	rssKiB                   int64
	restartClaims            int
	tokensReissued           int
}

// Bounds of the targets.
const (
	minCeilingRatio         = 0.5
	minUsableRatio          = 0.9
	maxStatusWritesPerClaim = 1
	maxSelfTestPerClaim     = 3
	maxExtraPerClaim        = 4
	maxSingleRatio          = 1.1
	maxRSSMiB               = 256
	rssTargetClaims         = 10000
	maxTokensAfterRestart   = 0
)

// targetRow is one target: what it asks, what was measured, and whether it is met.
type targetRow struct {
	target, figure string
	measured, met  bool
	// at, when not zero, is the smaller size the figure was measured at instead of the target's.
	at int
}

func (t targetRow) verdict() string {
	if !t.measured {
		return "not measured"
	}
	v := metOrNot(t.met)
	if t.at > 0 {
		v += fmt.Sprintf(" at %d claims (the target is at %d)", t.at, rssTargetClaims)
	}
	return v
}

// metOrNot is the verdict on a measured figure: "met", or "**not met**" in bold, so that a miss stands
// out in every table the bench prints.
func metOrNot(met bool) string {
	if met {
		return "met"
	}
	return "**not met**"
}

// smaller returns n if it is not the target's size, else 0.
func smaller(n int) int {
	if n == rssTargetClaims {
		return 0
	}
	return n
}

// evaluate judges f against every target.
func evaluate(f figures) []targetRow {
	out := make([]targetRow, 0, 8)
	usable := 0.0
	if f.usableRate > 0 {
		usable = f.rate / f.usableRate
	}
	out = append(out, targetRow{
		target:   fmt.Sprintf("burst of %d: throughput >= %.1fx the usable ceiling", f.burst, minUsableRatio),
		figure:   fmt.Sprintf("%.2fx (%.2f vs %.2f claims/s)", usable, f.rate, f.usableRate),
		measured: f.burst > 0 && f.usableRate > 0, met: usable >= minUsableRatio,
	})
	out = append(out, targetRow{
		target:   fmt.Sprintf("burst of %d: status writes per claim <= %d", f.burst, maxStatusWritesPerClaim),
		figure:   fmt.Sprintf("%.2f", f.statusWritesPerClaim),
		measured: f.burst > 0, met: f.statusWritesPerClaim <= maxStatusWritesPerClaim,
	})
	ratio := 0.0
	if f.ceilingARate > 0 {
		ratio = f.rate / f.ceilingARate
	}
	out = append(out, targetRow{
		target:   fmt.Sprintf("burst of %d: throughput >= %.1fx ceiling (a), plain writes", f.burst, minCeilingRatio),
		figure:   fmt.Sprintf("%.2fx (%.2f vs %.2f claims/s)", ratio, f.rate, f.ceilingARate),
		measured: f.burst > 0 && f.ceilingARate > 0, met: ratio >= minCeilingRatio,
	})
	out = append(out, targetRow{
		target:   fmt.Sprintf("self-test requests (SubjectAccessReviews, SelfSubjectRulesReviews, ...) per claim <= %d", maxSelfTestPerClaim),
		figure:   fmt.Sprintf("%.2f", f.selfTestPerClaim),
		measured: f.burst > 0, met: f.selfTestPerClaim <= maxSelfTestPerClaim,
	})
	limit := f.ceilingARequestsPerClaim + maxExtraPerClaim
	own := f.requestsPerClaim - f.leasePerClaim
	out = append(out, targetRow{
		target: fmt.Sprintf("requests per claim, all verbs <= ceiling (a) + %d (the leader election's lease renewals, a cost of time, counted apart)", maxExtraPerClaim),
		figure: fmt.Sprintf("%.2f, %.2f with %.2f lease renewals (limit %.2f + %d = %.2f)",
			own, f.requestsPerClaim, f.leasePerClaim, f.ceilingARequestsPerClaim, maxExtraPerClaim, limit),
		measured: f.burst > 0 && f.ceilingARequestsPerClaim > 0, met: own <= limit,
	})
	single := 0.0
	if f.rawSingle > 0 {
		single = float64(f.single) / float64(f.rawSingle)
	}
	out = append(out, targetRow{
		target:   fmt.Sprintf("single claim, idle: created -> Ready <= %.1fx the raw client's created -> usable (medians)", maxSingleRatio),
		figure:   fmt.Sprintf("%.1fx (%s s vs %s s)", single, secs3(f.single), secs3(f.rawSingle)),
		measured: f.single > 0 && f.rawSingle > 0, met: single <= maxSingleRatio+1e-9,
	})
	rssMiB := f.rssKiB / 1024
	out = append(out, targetRow{
		target: fmt.Sprintf("%d claims: manager RSS <= %d MiB", rssTargetClaims, maxRSSMiB),
		figure: fmt.Sprintf("%d MiB with %d claims", rssMiB, f.rssClaims), measured: f.rssClaims > 0, met: rssMiB <= maxRSSMiB,
		at: smaller(f.rssClaims),
	})
	out = append(out, targetRow{
		target:   fmt.Sprintf("%d claims: a restart re-issues 0 tokens", rssTargetClaims),
		figure:   fmt.Sprintf("%d tokens after a restart with %d claims", f.tokensReissued, f.restartClaims),
		measured: f.restartClaims > 0, met: f.tokensReissued <= maxTokensAfterRestart, at: smaller(f.restartClaims),
	})
	return out
}

func secs3(d time.Duration) string { return fmt.Sprintf("%.3f", d.Seconds()) }
