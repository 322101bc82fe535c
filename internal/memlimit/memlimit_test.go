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
	"os"
	"runtime/debug"
	"testing"
)

func TestDecide(t *testing.T) {
	cases := []struct {
		name, gomemlimit, env string
		image                 int64
		want                  int64
		source                string
		ignored               bool
	}{
		{name: "256Mi limit", env: "268435456", want: 241591910, source: "90% of " + Env},
		{name: "1Gi limit", env: "1073741824", want: 966367641, source: "90% of " + Env},
		{name: "not a multiple of 10", env: "19", want: 17, source: "90% of " + Env},
		{name: "largest value does not overflow", env: "9223372036854775807", want: 8301034833169298226, source: "90% of " + Env},
		{name: "256Mi less a 34 MB binary", env: "268435456", image: 34000000, want: 210991910, source: "90% of " + Env + " less the binary's 34000000 mapped bytes"},
		{name: "binary set aside up to half the limit", env: "100000000", image: 80000000, want: 45000000, source: "90% of " + Env + " less the binary's 50000000 mapped bytes"},
		{name: "negative image is none", env: "1000", image: -5, want: 900, source: "90% of " + Env},
		{name: "explicit GOMEMLIMIT wins over the binary too", gomemlimit: "200MiB", env: "268435456", image: 34000000, source: "GOMEMLIMIT"},
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
			d := Decide(tc.gomemlimit, tc.env, tc.image)
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
	d, got := Apply(func(k string) string { return env[k] }, 100000000)
	if d.Limit != 810000000 || got != 810000000 {
		t.Fatalf("got decision %+v and limit in effect %d, want 810000000", d, got)
	}
	env = map[string]string{"GOMEMLIMIT": "1GiB", Env: "1000000000"}
	if d, got := Apply(func(k string) string { return env[k] }, 0); d.Limit != 0 || got != 810000000 {
		t.Fatalf("an explicit GOMEMLIMIT must leave the limit in effect alone, got %+v and %d", d, got)
	}
}

func TestMappedBytes(t *testing.T) {
	maps := `00400000-01500000 r-xp 00000000 fd:01 1234 /manager
01500000-02b00000 r--p 01100000 fd:01 1234 /manager
02b00000-02b40000 rw-p 02700000 fd:01 1234 /manager
02b40000-04c00000 rw-p 00000000 00:00 0
c000000000-c004000000 rw-p 00000000 00:00 0
7f0000000000-7f0000001000 r--p 00000000 fd:01 99 /manager-old
7f0000001000-7f0000002000 r--p 00000000 fd:01 98 /opt/my manager
7f0000002000-7f0000003000 r--p 00000000 fd:01 98 /opt/my manager
7fff00000000-7fff00021000 rw-p 00000000 00:00 0                          [stack]
not a mapping line
`
	for _, tc := range []struct {
		path string
		want int64
	}{
		{path: "/manager", want: 0x1100000 + 0x1600000 + 0x40000},
		{path: "/opt/my manager", want: 0x2000},
		{path: "/manager-old", want: 0x1000},
		{path: "/absent", want: 0},
	} {
		if got := MappedBytes([]byte(maps), tc.path); got != tc.want {
			t.Errorf("MappedBytes(%q) = %#x, want %#x", tc.path, got, tc.want)
		}
	}
}

// TestImage reads this test binary's own mappings: the code alone is more than a megabyte, and less
// than the file.
func TestImage(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Skip(err)
	}
	info, err := os.Stat(exe)
	if err != nil {
		t.Fatal(err)
	}
	if got := Image(); got < 1<<20 || got > info.Size()+1<<20 {
		t.Fatalf("Image() = %d bytes for a %d-byte test binary", got, info.Size())
	}
}
