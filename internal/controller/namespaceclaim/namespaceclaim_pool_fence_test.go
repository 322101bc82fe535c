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

package namespaceclaim

import "testing"

// TestFenceCoversPool: the pool runs only under this release's fence, whose label guard keeps anyone
// else from making a namespace look pooled; with no fence required it runs only if the admin opted in
// (--pool-without-fence), and the opt-in does not override a fence that is required but not intact.
func TestFenceCoversPool(t *testing.T) {
	for _, tc := range []struct {
		name         string
		gate         FenceGate
		withoutFence bool
		want         bool
	}{
		{name: "fence not required", want: false},
		{name: "fence not required, pool opted in", withoutFence: true, want: true},
		{name: "not checked yet", gate: gate{}, withoutFence: true, want: false},
		{name: "broken", gate: gate{checked: true, problem: "missing"}, withoutFence: true, want: false},
		{name: "the previous release's fence", gate: currentGate{gate: gate{checked: true}, current: false}, withoutFence: true, want: false},
		{name: "this release's fence", gate: currentGate{gate: gate{checked: true}, current: true}, want: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &NamespaceClaimReconciler{Fence: tc.gate, PoolWithoutFence: tc.withoutFence}
			if got := r.FenceCoversPool(); got != tc.want {
				t.Errorf("FenceCoversPool = %t, want %t", got, tc.want)
			}
		})
	}
}
