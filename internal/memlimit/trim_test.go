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

package memlimit

import (
	"runtime"
	"runtime/debug"
	"testing"
	"time"
)

func TestShouldTrim(t *testing.T) {
	const mib = 1 << 20
	// A settled manager with 10,000 claims: 110 MiB live, the heap grown to 200 MiB by the catch-up.
	settled := HeapStats{Live: 110 * mib, Objects: 150 * mib, Free: 40 * mib, Allocs: 5000 * mib}
	quiet := settled
	quiet.Allocs += 2 * mib
	cases := []struct {
		name      string
		prev, cur HeapStats
		sinceLast time.Duration
		want      bool
	}{
		{name: "quiet after a busy spell, never trimmed", prev: settled, cur: quiet, sinceLast: -1, want: true},
		{name: "quiet, last trim long ago", prev: settled, cur: quiet, sinceLast: trimMinGap, want: true},
		{name: "quiet, but trimmed moments ago", prev: settled, cur: quiet, sinceLast: trimMinGap - time.Second},
		{name: "busy: allocated a sixteenth of the live heap in the interval", prev: settled,
			cur: HeapStats{Live: 110 * mib, Objects: 150 * mib, Free: 40 * mib, Allocs: settled.Allocs + 110*mib/16}, sinceLast: -1},
		{name: "holds less than a quarter of the live heap", prev: settled,
			cur: HeapStats{Live: 110 * mib, Objects: 120 * mib, Free: 10 * mib, Allocs: quiet.Allocs}, sinceLast: -1},
		{name: "holds a quarter of the live heap", prev: settled,
			cur: HeapStats{Live: 100 * mib, Objects: 110 * mib, Free: 15 * mib, Allocs: quiet.Allocs}, sinceLast: -1, want: true},
		{name: "small heap: less than 16 MiB held is not worth a collection", prev: HeapStats{Live: 8 * mib},
			cur: HeapStats{Live: 8 * mib, Objects: 8 * mib, Free: 15 * mib, Allocs: 1}, sinceLast: -1},
		{name: "counter went back (a fresh reading): no decision", prev: settled,
			cur: HeapStats{Live: 110 * mib, Objects: 150 * mib, Free: 40 * mib, Allocs: 1}, sinceLast: -1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := ShouldTrim(c.prev, c.cur, c.sinceLast); got != c.want {
				t.Errorf("ShouldTrim(held %d MiB, live %d MiB, allocated %d MiB) = %v, want %v",
					c.cur.Held()/mib, c.cur.Live/mib, (c.cur.Allocs-c.prev.Allocs)/mib, got, c.want)
			}
		})
	}
}

// TestReadHeapStatsSeesTheRuntime proves the runtime/metrics names are right and that a trim returns
// what ShouldTrim counts as held: a heap that kept 64 MiB reads as live, dropping it leaves it held
// after a collection, and debug.FreeOSMemory (the trimmer's Free) returns it.
func TestReadHeapStatsSeesTheRuntime(t *testing.T) {
	before := ReadHeapStats()
	keep := make([][]byte, 0, 64)
	for range 64 {
		keep = append(keep, make([]byte, 1<<20))
	}
	runtime.GC()
	live := ReadHeapStats()
	runtime.KeepAlive(keep)
	if live.Live < 64<<20 || live.Allocs < before.Allocs+64<<20 {
		t.Fatalf("after allocating 64 MiB and keeping it: live %d, allocated %d (before %d)", live.Live, live.Allocs, before.Allocs)
	}
	keep = nil
	runtime.KeepAlive(keep)
	runtime.GC()
	freed := ReadHeapStats()
	if freed.Held() < 32<<20 {
		t.Fatalf("after dropping 64 MiB and a collection the runtime holds %d bytes beyond the live heap, want the freed pages", freed.Held())
	}
	if !ShouldTrim(HeapStats{Allocs: freed.Allocs}, freed, -1) {
		t.Fatalf("ShouldTrim of a quiet heap holding %d bytes beyond %d live = false", freed.Held(), freed.Live)
	}
	debug.FreeOSMemory()
	if after := ReadHeapStats(); after.Held() > freed.Held()/4 {
		t.Fatalf("after a trim the runtime still holds %d bytes (held %d before)", after.Held(), freed.Held())
	}
}
