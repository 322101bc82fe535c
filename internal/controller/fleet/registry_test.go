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

package fleet

import (
	"testing"
	"time"
)

// TestReusable: a placement takes a member's last probe only if that probe began after the placement's
// reconcile did, so a fence removed before the claim was looked at is always seen.
func TestReusable(t *testing.T) {
	t0 := time.Date(2026, 11, 28, 7, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name    string
		started time.Time
		since   time.Time
		want    bool
	}{
		{"began after the placement's reconcile", t0.Add(time.Millisecond), t0, true},
		{"began at the same instant", t0, t0, true},
		{"began before the placement's reconcile", t0.Add(-time.Millisecond), t0, false},
		{"no probe yet", time.Time{}, t0, false},
		{"since zero asks for a new probe", t0, time.Time{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := reusable(probe{started: tc.started}, tc.since); got != tc.want {
				t.Errorf("reusable(started %v, since %v) = %v, want %v", tc.started, tc.since, got, tc.want)
			}
		})
	}
}
