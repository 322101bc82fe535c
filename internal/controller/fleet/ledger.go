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
	"sync"

	"k8s.io/apimachinery/pkg/types"
)

// assignment is one claim's member and class.
type assignment struct{ cluster, class string }

// ledger holds the assignments this process wrote, so the next placement counts them before the
// cache shows them; an entry goes when its claim is released.
type ledger struct {
	mu sync.Mutex
	m  map[types.UID]assignment
}

func (l *ledger) add(uid types.UID, cluster, class string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.m == nil {
		l.m = map[types.UID]assignment{}
	}
	l.m[uid] = assignment{cluster: cluster, class: class}
}

func (l *ledger) remove(uid types.UID) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.m, uid)
}

// mergeInto adds the ledger's assignments to seen.
func (l *ledger) mergeInto(seen map[types.UID]assignment) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for uid, a := range l.m {
		seen[uid] = a
	}
}
