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
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// The fleet's processes by role, for the CPU each spends on a burst: on one machine the hub, the three
// members and the bench share the cores, so a burst that is CPU-bound runs at the ceiling's rate times
// the ratio of the CPU each needs per claim.
const (
	// fleetHub is the hub's directory under the fleet's state directory (hack/lib/fleet.sh).
	fleetHub = "hub"

	roleHub          = "hub operator"
	roleHubPlane     = "hub control plane"
	roleMemberOps    = "member operators"
	roleMemberPlanes = "member control planes"
	roleMachine      = "machine"
	roleMachineIdle  = "machine idle"
)

var fleetRoles = []string{roleHub, roleHubPlane, roleMemberOps, roleMemberPlanes}

// fleetCPU is the CPU time each role of the fleet under dir has used so far, and the machine's busy
// and idle time (/proc/stat).
func fleetCPU(dir string) map[string]time.Duration {
	out := map[string]time.Duration{}
	for _, c := range append([]string{fleetHub}, fleetMembers...) {
		files, _ := filepath.Glob(filepath.Join(dir, c, "pids", "*.pid"))
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				continue
			}
			pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
			if err != nil {
				continue
			}
			st, err := readProc(pid)
			if err != nil {
				continue
			}
			base := filepath.Base(f)
			if strings.HasPrefix(base, "operator-supervisor") {
				continue
			}
			op := base == "operator.pid"
			switch {
			case c == fleetHub && op:
				out[roleHub] += st.cpu
			case c == fleetHub:
				out[roleHubPlane] += st.cpu
			case op:
				out[roleMemberOps] += st.cpu
			default:
				out[roleMemberPlanes] += st.cpu
			}
		}
	}
	busy, idle := machineCPU()
	out[roleMachine], out[roleMachineIdle] = busy, idle
	return out
}

// machineCPU is the machine's busy and idle CPU time so far, from /proc/stat's cpu line.
func machineCPU() (busy, idle time.Duration) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	for i, v := range f[1:] {
		n, _ := strconv.ParseInt(v, 10, 64)
		d := time.Duration(n) * time.Second / clockTick
		switch i {
		case 3, 4: // idle, iowait
			idle += d
		case 8, 9: // guest, guest_nice: already in user and nice
		default:
			busy += d
		}
	}
	return busy, idle
}

// cpuLine says, between two fleetCPU readings around n claims, how much CPU each role used per claim
// and how busy the machine was.
func cpuLine(a, b map[string]time.Duration, n int) string {
	per := func(role string) string {
		return fmt.Sprintf("%s %.0f ms", role, float64((b[role]-a[role]).Milliseconds())/float64(n))
	}
	parts := make([]string, 0, len(fleetRoles)+1)
	for _, r := range fleetRoles {
		parts = append(parts, per(r))
	}
	busy, idle := b[roleMachine]-a[roleMachine], b[roleMachineIdle]-a[roleMachineIdle]
	share := 0.0
	if busy+idle > 0 {
		share = 100 * float64(busy) / float64(busy+idle)
	}
	return fmt.Sprintf("CPU per claim: %s; the whole machine %.0f ms per claim, busy %.0f%% of the span",
		strings.Join(parts, ", "), float64(busy.Milliseconds())/float64(n), share)
}
