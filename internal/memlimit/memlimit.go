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
// also holds what the runtime does not know about, for which the Go GC guide advises leaving 5-10%.
package memlimit

import (
	"fmt"
	"math"
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

// Decide takes the values of GOMEMLIMIT and Env (empty when unset). An explicit GOMEMLIMIT wins and
// is left to the runtime, which has already applied it. Otherwise a positive integer in Env gives a
// soft limit of 90% of it; anything else in Env is ignored, and the limit stays the runtime's default
// (none).
func Decide(gomemlimit, containerLimit string) Decision {
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
	return Decision{Limit: ninetyPercent(n), Source: "90% of " + Env}
}

// ninetyPercent is n*9/10, rounded down, without overflowing for n near math.MaxInt64.
func ninetyPercent(n int64) int64 { return n/10*9 + n%10*9/10 }

// Apply sets the soft memory limit Decide chose from the environment read by getenv, and returns the
// decision and the limit in effect afterwards (math.MaxInt64 when there is none).
func Apply(getenv func(string) string) (Decision, int64) {
	d := Decide(getenv("GOMEMLIMIT"), getenv(Env))
	if d.Limit > 0 {
		debug.SetMemoryLimit(d.Limit)
	}
	return d, debug.SetMemoryLimit(-1)
}

// NoLimit is the limit in effect when there is none.
const NoLimit = math.MaxInt64
