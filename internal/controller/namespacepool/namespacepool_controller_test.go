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

package namespacepool

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func named(names ...string) []*corev1.Namespace {
	out := make([]*corev1.Namespace, 0, len(names))
	for _, n := range names {
		out = append(out, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: n}})
	}
	return out
}

func names(nss []*corev1.Namespace) []string {
	out := make([]string, 0, len(nss))
	for _, ns := range nss {
		out = append(out, ns.Name)
	}
	return out
}

func TestTrimDeletesTheSurplusCreatingFirstThenNewestReady(t *testing.T) {
	for _, tc := range []struct {
		name                             string
		ready, creating                  []string
		size                             int
		wantReady, wantCreating, wantOut []string
	}{
		{"at size", []string{"r1", "r2"}, []string{"c1"}, 3, []string{"r1", "r2"}, []string{"c1"}, []string{}},
		{"one too many: a creating one goes", []string{"r1", "r2"}, []string{"c1"}, 2, []string{"r1", "r2"}, []string{}, []string{"c1"}},
		{"then the newest ready", []string{"r1", "r2", "r3"}, []string{"c1"}, 1, []string{"r1"}, []string{}, []string{"c1", "r3", "r2"}},
		{"size 0 empties the pool", []string{"r1"}, []string{"c1", "c2"}, 0, []string{}, []string{}, []string{"c2", "c1", "r1"}},
	} {
		p := &pool{ready: named(tc.ready...), creating: named(tc.creating...)}
		p.trim(tc.size)
		for _, c := range []struct {
			what      string
			got, want []string
		}{{"ready", names(p.ready), tc.wantReady}, {"creating", names(p.creating), tc.wantCreating}, {"stale", names(p.stale), tc.wantOut}} {
			if len(c.got) != len(c.want) {
				t.Errorf("%s: %s = %v, want %v", tc.name, c.what, c.got, c.want)
				continue
			}
			for i := range c.got {
				if c.got[i] != c.want[i] {
					t.Errorf("%s: %s = %v, want %v", tc.name, c.what, c.got, c.want)
					break
				}
			}
		}
	}
}

func TestWakeAtKeepsTheEarliest(t *testing.T) {
	p := &pool{}
	p.wakeAt(0)
	if p.wake != 0 {
		t.Fatalf("wake = %s after a zero wait, want none", p.wake)
	}
	p.wakeAt(3 * time.Second)
	p.wakeAt(time.Second)
	p.wakeAt(2 * time.Second)
	if p.wake != time.Second {
		t.Fatalf("wake = %s, want 1s", p.wake)
	}
}
