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
	"bufio"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// memClasses is where a replica's resident memory is, from /proc (anonymous and file-backed pages)
// and from the Go runtime's /memory/classes and /gc/heap metrics (runtime/metrics, which the manager's
// metrics endpoint exposes with their names' slashes and colons as underscores), in MiB.
type memClasses struct {
	rssAnon, rssFile float64
	// live is the heap's live bytes as of the last collection; objects is live plus dead objects not
	// yet swept; unused is the free slots of spans in use (fragmentation); free is free heap memory
	// the runtime holds, released what it returned to the OS; goal is the next collection's heap goal.
	live, objects, unused, free, released, goal float64
	// other is the rest of the runtime's memory: stacks, span and GC metadata, profiling buckets, other.
	other, total float64
	// allocs is the bytes allocated so far, for a rate between two readings.
	allocs float64
}

// readMemClasses reads the replica's memory classes; ok is false when its metrics could not be read.
func (r *replica) readMemClasses() (memClasses, bool) {
	m, err := r.metrics()
	if err != nil {
		return memClasses{}, false
	}
	const mib = 1 << 20
	g := func(name string) float64 { return sum(m, name, nil) / mib }
	c := memClasses{
		live: g("go_gc_heap_live_bytes"), objects: g("go_memory_classes_heap_objects_bytes"),
		unused: g("go_memory_classes_heap_unused_bytes"), free: g("go_memory_classes_heap_free_bytes"),
		released: g("go_memory_classes_heap_released_bytes"), goal: g("go_gc_heap_goal_bytes"),
		total: g("go_memory_classes_total_bytes"), allocs: g("go_gc_heap_allocs_bytes_total"),
	}
	c.other = c.total - c.objects - c.unused - c.free - c.released
	c.rssAnon, c.rssFile = procAnonFile(r.pid())
	return c, c.total > 0
}

func (c memClasses) String() string {
	return fmt.Sprintf("RssAnon %.1f RssFile %.1f | heap live %.1f, objects %.1f (live + unswept), unused in spans %.1f, "+
		"free %.1f, released %.1f, goal %.1f | other runtime %.1f | runtime total %.1f (MiB)",
		c.rssAnon, c.rssFile, c.live, c.objects, c.unused, c.free, c.released, c.goal, c.other, c.total)
}

// procAnonFile is the process's resident anonymous and file-backed memory in MiB (0, 0 if unreadable).
func procAnonFile(pid int) (anon, file float64) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0
	}
	defer func() { _ = f.Close() }()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, _ := strings.Cut(sc.Text(), ":")
		n, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
		switch k {
		case "RssAnon":
			anon = n / 1024
		case "RssFile":
			file = n / 1024
		}
	}
	return anon, file
}

// watchMemory keeps the replica idle for --mem-watch after a scale point and prints its RSS and memory
// classes every 30s, with the bytes it allocated in between: whether the memory it returned stays
// returned.
func (b *bencher) watchMemory(ctx context.Context, op *replica, claims int) {
	if b.o.memWatch <= 0 {
		return
	}
	prev, havePrev := op.readMemClasses()
	var maxKiB int64
	for end := time.Now().Add(b.o.memWatch); time.Now().Before(end); {
		if sleep(ctx, 30*time.Second) != nil {
			return
		}
		p, _ := readProc(op.pid())
		maxKiB = max(maxKiB, p.rssKiB)
		m, ok := op.readMemClasses()
		if !ok {
			havePrev = false
			continue
		}
		allocated := "n/a"
		if havePrev {
			allocated = fmt.Sprintf("%.1f MiB", m.allocs-prev.allocs)
		}
		b.logf("scale %d: idle watch: RSS %d MiB; %s; allocated %s in 30s", claims, p.rssKiB/1024, m, allocated)
		prev, havePrev = m, true
	}
	b.logf("scale %d: idle watch of %s: RSS at most %d MiB", claims, b.o.memWatch, maxKiB/1024)
}
