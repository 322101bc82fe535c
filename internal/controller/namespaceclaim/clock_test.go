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
	"testing"
	"time"
)

// offsetClock is the envtest suite's clock: real time plus an offset that a test moves. It keeps
// moving with the API server's clock (which stamps creation times and token expiries), so a test that
// compares the two does not depend on how long the suite has been running on a slow machine, as a
// frozen fake clock would.
type offsetClock struct {
	mu     sync.Mutex
	offset time.Duration
}

// Now returns the real time moved by the offset.
func (c *offsetClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.offset)
}

// Since returns the time elapsed since t on this clock.
func (c *offsetClock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }

// SetTime moves the clock so that it reads t now (and keeps running from there).
func (c *offsetClock) SetTime(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.offset = time.Until(t)
}

func TestOffsetClockMovesWithRealTime(t *testing.T) {
	c := &offsetClock{}
	future := time.Now().Add(45 * time.Minute)
	c.SetTime(future)
	if d := c.Now().Sub(future); d < 0 || d > time.Minute {
		t.Fatalf("after SetTime, Now is %v away from the time set", d)
	}
	before := c.Now()
	time.Sleep(5 * time.Millisecond)
	if !c.Now().After(before) {
		t.Fatal("the clock does not move with real time")
	}
	c.SetTime(time.Now())
	if d := c.Since(time.Now()); d > time.Minute || d < -time.Minute {
		t.Fatalf("after moving back, the offset is %v", d)
	}
}
