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
	"runtime/debug"
	"testing"
)

func TestDecide(t *testing.T) {
	cases := []struct {
		name, gomemlimit, env string
		want                  int64
		source                string
		ignored               bool
	}{
		{name: "256Mi limit", env: "268435456", want: 241591910, source: "90% of " + Env},
		{name: "1Gi limit", env: "1073741824", want: 966367641, source: "90% of " + Env},
		{name: "not a multiple of 10", env: "19", want: 17, source: "90% of " + Env},
		{name: "largest value does not overflow", env: "9223372036854775807", want: 8301034833169298226, source: "90% of " + Env},
		{name: "explicit GOMEMLIMIT wins", gomemlimit: "200MiB", env: "268435456", source: "GOMEMLIMIT"},
		{name: "explicit GOMEMLIMIT off wins", gomemlimit: "off", env: "268435456", source: "GOMEMLIMIT"},
		{name: "nothing set", source: "none"},
		{name: "zero ignored", env: "0", source: "none", ignored: true},
		{name: "negative ignored", env: "-5", source: "none", ignored: true},
		{name: "quantity with unit ignored", env: "256Mi", source: "none", ignored: true},
		{name: "too large ignored", env: "9223372036854775808", source: "none", ignored: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := Decide(tc.gomemlimit, tc.env)
			if d.Limit != tc.want || d.Source != tc.source || (d.Ignored != "") != tc.ignored {
				t.Fatalf("got %+v, want limit %d source %q ignored %v", d, tc.want, tc.source, tc.ignored)
			}
		})
	}
}

// TestApply sets the limit Decide chose and reports the one in effect; the test restores the
// process's limit afterwards.
func TestApply(t *testing.T) {
	before := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(before) })
	env := map[string]string{Env: "1000000000"}
	d, got := Apply(func(k string) string { return env[k] })
	if d.Limit != 900000000 || got != 900000000 {
		t.Fatalf("got decision %+v and limit in effect %d, want 900000000", d, got)
	}
	env = map[string]string{"GOMEMLIMIT": "1GiB", Env: "1000000000"}
	if d, got := Apply(func(k string) string { return env[k] }); d.Limit != 0 || got != 900000000 {
		t.Fatalf("an explicit GOMEMLIMIT must leave the limit in effect alone, got %+v and %d", d, got)
	}
}
