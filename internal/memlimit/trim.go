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
	"context"
	"runtime/debug"
	"runtime/metrics"
	"time"

	"github.com/go-logr/logr"
)

// HeapStats is what the trimmer reads of the Go runtime (runtime/metrics), in bytes.
type HeapStats struct {
	// Live is the heap's live bytes as of the last collection (/gc/heap/live).
	Live uint64
	// Objects is the memory of the heap's objects, live and dead not yet swept (/memory/classes/heap/objects).
	Objects uint64
	// Free is free heap memory the runtime keeps mapped (/memory/classes/heap/free).
	Free uint64
	// Allocs is the bytes allocated since the start (/gc/heap/allocs).
	Allocs uint64
}

// Held is the heap memory the runtime keeps beyond the live heap: free pages it has not returned to
// the OS, and dead objects a collection would free.
func (s HeapStats) Held() uint64 {
	held := s.Free
	if s.Objects > s.Live {
		held += s.Objects - s.Live
	}
	return held
}

// Trim policy. The runtime keeps what the heap grew to: the collector lets the heap reach about twice
// the live heap (GOGC=100, or the soft limit) before it collects, and the background scavenger returns
// free pages only above about 110% of that goal. So after a busy spell (the informers' first lists of
// every kind, a restart's catch-up, an adoption) the process keeps the spell's peak although the live
// heap is far smaller. A trim (debug.FreeOSMemory: a collection, then every free page returned) right
// after the spell gives that memory back; it lasts as long as the heap does not grow back, which
// takes the allocation of a whole collection cycle.
const (
	// trimInterval is how often the trimmer reads the runtime's statistics.
	trimInterval = 10 * time.Second
	// trimMinGap is the least time between two trims: a trim costs one collection, so a busy process
	// trims at most this often, whatever it allocates.
	trimMinGap = 5 * time.Minute
	// trimMinHeld is the least held memory worth a trim.
	trimMinHeld = 16 << 20
	// quietShare: the process is quiet when it allocated less than live/quietShare in the last
	// interval; at that rate the runtime's forced collection (every 2 minutes) comes before the heap
	// regrows by 3/4 of the live heap.
	quietShare = 16
	// heldShare: a trim is worth it when the memory held beyond the live heap is at least
	// live/heldShare.
	heldShare = 4
)

// ShouldTrim reports whether to return the held memory now: the process allocated little since prev
// (quiet), it holds at least trimMinHeld and a quarter of its live heap beyond it, and its last trim is
// at least trimMinGap old (sinceLast; negative when it never trimmed).
func ShouldTrim(prev, cur HeapStats, sinceLast time.Duration) bool {
	if sinceLast >= 0 && sinceLast < trimMinGap {
		return false
	}
	if cur.Allocs < prev.Allocs || cur.Allocs-prev.Allocs >= cur.Live/quietShare {
		return false
	}
	held := cur.Held()
	return held >= trimMinHeld && held >= cur.Live/heldShare
}

// Trimmer returns the heap memory the Go runtime holds after a busy spell to the OS, once the process
// has gone quiet (ShouldTrim). It is a manager Runnable that every replica runs (a follower's caches
// hold as much as the leader's). Read and Free are the runtime's (ReadHeapStats, debug.FreeOSMemory)
// unless set.
type Trimmer struct {
	Log  logr.Logger
	Read func() HeapStats
	Free func()
}

// Start reads the runtime's statistics every trimInterval until ctx ends and trims when ShouldTrim
// says so.
func (t *Trimmer) Start(ctx context.Context) error {
	read, free := t.Read, t.Free
	if read == nil {
		read = ReadHeapStats
	}
	if free == nil {
		free = debug.FreeOSMemory
	}
	tick := time.NewTicker(trimInterval)
	defer tick.Stop()
	prev := read()
	var last time.Time
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		cur := read()
		since := time.Duration(-1)
		if !last.IsZero() {
			since = time.Since(last)
		}
		if ShouldTrim(prev, cur, since) {
			free()
			last = time.Now()
			after := read()
			t.Log.Info("Returned the heap memory held after a busy spell", "heldBytes", cur.Held(),
				"liveBytes", after.Live, "heldAfterBytes", after.Held())
			cur = after
		}
		prev = cur
	}
}

// NeedLeaderElection is false: every replica holds its caches and trims its own memory.
func (t *Trimmer) NeedLeaderElection() bool { return false }

// ReadHeapStats reads HeapStats from runtime/metrics.
func ReadHeapStats() HeapStats {
	s := []metrics.Sample{
		{Name: "/gc/heap/live:bytes"}, {Name: "/memory/classes/heap/objects:bytes"},
		{Name: "/memory/classes/heap/free:bytes"}, {Name: "/gc/heap/allocs:bytes"},
	}
	metrics.Read(s)
	v := func(i int) uint64 {
		if s[i].Value.Kind() != metrics.KindUint64 {
			return 0
		}
		return s[i].Value.Uint64()
	}
	return HeapStats{Live: v(0), Objects: v(1), Free: v(2), Allocs: v(3)}
}
