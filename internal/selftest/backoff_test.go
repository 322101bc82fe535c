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

package selftest

import (
	"testing"
	"time"
)

func TestDelay(t *testing.T) {
	for n, want := range map[int]time.Duration{
		1: 2 * time.Second, 2: 4 * time.Second, 3: 8 * time.Second, 8: 256 * time.Second, 9: 5 * time.Minute, 50: 5 * time.Minute,
	} {
		if got := Delay(n); got != want {
			t.Errorf("Delay(%d) = %s, want %s", n, got, want)
		}
	}
}

// Failures that come before the scheduled retry keep the schedule; only retries grow it.
func TestBackoffFailed(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var b Backoff
	for i, st := range []struct {
		at, want time.Duration
		failures int
	}{
		{0, 2 * time.Second, 1},
		{500 * time.Millisecond, 1500 * time.Millisecond, 1},
		{2 * time.Second, 4 * time.Second, 2},
		{6 * time.Second, 8 * time.Second, 3},
	} {
		var got time.Duration
		b, got = b.Failed(t0.Add(st.at))
		if got != st.want || b.Failures != st.failures {
			t.Fatalf("step %d at +%s: retry after %s with %d failures, want %s with %d", i, st.at, got, b.Failures, st.want, st.failures)
		}
	}
}
