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

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestKeyedMutexSerializesPerKey: holders of one key never overlap, other keys do not wait, unlock is
// idempotent and a key's mutex is freed when nobody needs it.
func TestKeyedMutexSerializesPerKey(t *testing.T) {
	var k keyedMutex
	var inside, most atomic.Int32
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			unlock := k.lock("team-a/ci")
			n := inside.Add(1)
			for {
				m := most.Load()
				if n <= m || most.CompareAndSwap(m, n) {
					break
				}
			}
			time.Sleep(time.Millisecond)
			inside.Add(-1)
			unlock()
			unlock()
		})
	}
	// Another key is not held up by the first one's holder.
	held := k.lock("team-a/ci")
	other := make(chan struct{})
	go func() { k.lock("team-b/ci")(); close(other) }()
	<-other
	held()
	wg.Wait()
	if most.Load() != 1 {
		t.Fatalf("%d holders of one key at once", most.Load())
	}
	if len(k.locks) != 0 {
		t.Fatalf("mutexes kept after use: %v", k.locks)
	}
}
