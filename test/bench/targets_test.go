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
	"testing"
	"time"
)

func TestEvaluate(t *testing.T) {
	ms := time.Millisecond
	cases := []struct {
		name string
		f    figures
		// verdicts, in evaluate's order: usable ratio, status writes, throughput, self-test, requests, single claim, RSS, restart.
		want []string
	}{
		{
			name: "issue 13's before figures",
			f: figures{burst: 500, rate: 7.7, ceilingARate: 66, usableRate: 21, statusWritesPerClaim: 2, selfTestPerClaim: 62, requestsPerClaim: 81, ceilingARequestsPerClaim: 12,
				single: 400 * ms, rawSingle: 40 * ms},
			want: []string{"**not met**", "**not met**", "**not met**", "**not met**", "**not met**", "**not met**", "not measured", "not measured"},
		},
		{
			name: "every target met, on the bounds",
			f: figures{burst: 500, rate: 5, ceilingARate: 10, usableRate: 5 / 0.9, statusWritesPerClaim: 1, selfTestPerClaim: 3, requestsPerClaim: 16, ceilingARequestsPerClaim: 12,
				single: 110 * ms, rawSingle: 100 * ms, rssClaims: 10000, rssKiB: 256 * 1024, restartClaims: 10000},
			want: []string{"met", "met", "met", "met", "met", "met", "met", "met"},
		},
		{
			name: "just past every bound",
			f: figures{burst: 500, rate: 4.99, ceilingARate: 10, usableRate: 4.99 / 0.89, statusWritesPerClaim: 1.01, selfTestPerClaim: 3.01, requestsPerClaim: 16.01, ceilingARequestsPerClaim: 12,
				single: 111 * ms, rawSingle: 100 * ms, rssClaims: 2000, rssKiB: 257 * 1024, restartClaims: 2000, tokensReissued: 1},
			want: []string{"**not met**", "**not met**", "**not met**", "**not met**", "**not met**", "**not met**",
				"**not met** at 2000 claims (the target is at 10000)", "**not met** at 2000 claims (the target is at 10000)"},
		},
		{
			name: "lease renewals are counted apart: met on the claims' own requests",
			f:    figures{burst: 500, requestsPerClaim: 16.04, leasePerClaim: 0.04, ceilingARequestsPerClaim: 12},
			want: []string{"not measured", "met", "not measured", "met", "met", "not measured", "not measured", "not measured"},
		},
		{
			name: "lease renewals do not hide an excess of the claims' own",
			f:    figures{burst: 500, requestsPerClaim: 16.05, leasePerClaim: 0.04, ceilingARequestsPerClaim: 12},
			want: []string{"not measured", "met", "not measured", "met", "**not met**", "not measured", "not measured", "not measured"},
		},
		{
			name: "RSS and restart met at a smaller size say so",
			f:    figures{rssClaims: 2000, rssKiB: 203 * 1024, restartClaims: 2000},
			want: []string{"not measured", "not measured", "not measured", "not measured", "not measured", "not measured",
				"met at 2000 claims (the target is at 10000)", "met at 2000 claims (the target is at 10000)"},
		},
		{
			name: "no ceiling and no single claims: not measured, not met by default",
			f:    figures{burst: 500, rate: 5, selfTestPerClaim: 1, requestsPerClaim: 10},
			want: []string{"not measured", "met", "not measured", "met", "not measured", "not measured", "not measured", "not measured"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := evaluate(tc.f)
			if len(got) != len(tc.want) {
				t.Fatalf("%d targets, want %d", len(got), len(tc.want))
			}
			for i, row := range got {
				if row.verdict() != tc.want[i] {
					t.Errorf("target %q (%s): %s, want %s", row.target, row.figure, row.verdict(), tc.want[i])
				}
			}
		})
	}
}

func TestMetOrNot(t *testing.T) {
	for _, tc := range []struct {
		met  bool
		want string
	}{
		{met: true, want: "met"},
		{met: false, want: "**not met**"},
	} {
		if got := metOrNot(tc.met); got != tc.want {
			t.Errorf("metOrNot(%v) = %q, want %q", tc.met, got, tc.want)
		}
	}
}

func TestPoolCeiling(t *testing.T) {
	withCeiling := func(n int, span time.Duration) burstRow {
		return burstRow{n: n, ceilingA: &burstRow{n: n, ready: n, span: span}}
	}
	for _, tc := range []struct {
		name   string
		bursts []burstRow
		n      int
		want   int
	}{
		{"none", nil, 50, 0},
		{"no ceiling measured", []burstRow{{n: 50}}, 50, 0},
		{"the same size", []burstRow{withCeiling(500, time.Second), withCeiling(50, time.Second)}, 50, 50},
		{"the smallest larger one", []burstRow{withCeiling(500, time.Second), withCeiling(200, time.Second), withCeiling(20, time.Second)}, 50, 200},
		{"all smaller: the largest", []burstRow{withCeiling(10, time.Second), withCeiling(20, time.Second)}, 50, 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, got := poolCeiling(tc.bursts, tc.n); got != tc.want {
				t.Errorf("poolCeiling chose the burst of %d, want %d", got, tc.want)
			}
		})
	}
}
