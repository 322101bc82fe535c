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

package watchcache

import (
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// TestSideCachesRunOnEveryReplica pins the manager's runnable group of the side caches: not among the
// manager's caches (a GetCache method), and not in the leader-election group, which starts only on the
// leader, so a follower would take over with them cold.
func TestSideCachesRunOnEveryReplica(t *testing.T) {
	for name, r := range map[string]manager.Runnable{"BindingIndex": &BindingIndex{}, "DefaultServiceAccounts": &DefaultServiceAccounts{}} {
		if _, ok := r.(interface{ GetCache() cache.Cache }); ok {
			t.Errorf("%s has GetCache", name)
		}
		if le, ok := r.(manager.LeaderElectionRunnable); !ok || le.NeedLeaderElection() {
			t.Errorf("%s runs only on the leader", name)
		}
	}
}
