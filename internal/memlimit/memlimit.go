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

// Package memlimit sets the Go runtime's soft memory limit from the container's memory limit, with
// headroom: the soft limit counts only the memory the Go runtime manages, while the container's memory
// also holds what the runtime does not know about. The largest such part is the manager's own binary:
// its code and tables are mapped from the file, their pages count in the process's RSS and are charged
// to the container's memory, and under pressure the kernel can only evict them to read them back at
// once. So the limit is 90% of what the container's limit leaves once the binary's mappings are set
// aside (the Go GC guide advises leaving 5-10% for the rest).
package memlimit

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"runtime/debug"
	"strconv"
)

// Env names the environment variable that carries the container's memory limit in bytes (the
// Deployment sets it from limits.memory through the downward API).
const Env = "NSCLAIM_MEMORY_LIMIT"

// Decision is what to do with the Go runtime's soft memory limit.
type Decision struct {
	// Limit is the soft memory limit to set, in bytes; 0 leaves the runtime's own (GOMEMLIMIT, or none).
	Limit int64
	// Source says where the limit in effect comes from, for the start-up log.
	Source string
	// Ignored says why Env was not used although it was set (malformed or not positive); empty otherwise.
	Ignored string
}

// Decide takes the values of GOMEMLIMIT and Env (empty when unset) and the bytes of the manager's
// binary that are mapped into its memory (image; see Image). An explicit GOMEMLIMIT wins and is left to
// the runtime, which has already applied it. Otherwise a positive integer in Env gives a soft limit of
// 90% of that limit less image; image is set aside only up to half of the limit, so a binary mapped in
// full by a tiny limit still leaves the runtime 45% of it. Anything else in Env is ignored, and the
// limit stays the runtime's default (none).
func Decide(gomemlimit, containerLimit string, image int64) Decision {
	if gomemlimit != "" {
		return Decision{Source: "GOMEMLIMIT"}
	}
	if containerLimit == "" {
		return Decision{Source: "none"}
	}
	n, err := strconv.ParseInt(containerLimit, 10, 64)
	if err != nil || n <= 0 {
		return Decision{Source: "none", Ignored: fmt.Sprintf("%s must be a positive number of bytes, got %q", Env, containerLimit)}
	}
	image = min(max(image, 0), n/2)
	if image == 0 {
		return Decision{Limit: ninetyPercent(n), Source: "90% of " + Env}
	}
	return Decision{Limit: ninetyPercent(n - image), Source: fmt.Sprintf("90%% of %s less the binary's %d mapped bytes", Env, image)}
}

// ninetyPercent is n*9/10, rounded down, without overflowing for n near math.MaxInt64.
func ninetyPercent(n int64) int64 { return n/10*9 + n%10*9/10 }

// Image returns the bytes of the running binary mapped into the process (code, read-only data and
// initialised data; not the heap), from /proc/self/maps; 0 if they cannot be read.
func Image() int64 {
	exe, err := os.Executable()
	if err != nil {
		return 0
	}
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return 0
	}
	return MappedBytes(maps, exe)
}

// MappedBytes sums the sizes of the mappings of the file path in maps, a /proc/PID/maps text
// ("start-end perms offset dev inode path" per line).
func MappedBytes(maps []byte, path string) int64 {
	var total int64
	for line := range bytes.Lines(maps) {
		// Five fields, then the path, which may hold spaces.
		rest := bytes.TrimSpace(line)
		var f [5][]byte
		for i := range f {
			f[i], rest, _ = bytes.Cut(rest, []byte(" "))
			rest = bytes.TrimLeft(rest, " ")
		}
		if string(rest) != path {
			continue
		}
		start, end, ok := bytes.Cut(f[0], []byte("-"))
		if !ok {
			continue
		}
		s, err1 := strconv.ParseUint(string(start), 16, 64)
		e, err2 := strconv.ParseUint(string(end), 16, 64)
		if err1 != nil || err2 != nil || e < s {
			continue
		}
		total += int64(e - s)
	}
	return total
}

// Apply sets the soft memory limit Decide chose from the environment read by getenv and the binary's
// mapped bytes image, and returns the decision and the limit in effect afterwards (math.MaxInt64 when
// there is none).
func Apply(getenv func(string) string, image int64) (Decision, int64) {
	d := Decide(getenv("GOMEMLIMIT"), getenv(Env), image)
	if d.Limit > 0 {
		debug.SetMemoryLimit(d.Limit)
	}
	return d, debug.SetMemoryLimit(-1)
}

// NoLimit is the limit in effect when there is none.
const NoLimit = math.MaxInt64
