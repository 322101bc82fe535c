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

package informers

import (
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"

	"github.com/nsclaim/nsclaim-operator/internal/claimpolicy"
)

// NamespaceReuse tells when a namespace's grants may be made without letting a previous holder of its
// name in. It learns which names were in use moments ago from the manager's Namespace informer: its
// transform sees every namespace that is being deleted, including the final delete event, before the
// cache drops the namespace, so when the cache no longer has a name that was deleted, the time of that
// deletion is known here. What the informer could not have seen (deletions before the manager started,
// or a deletion a relist skipped) is covered by treating every namespace made within the window of the
// start as reused.
type NamespaceReuse struct {
	clock   clock.PassiveClock
	started time.Time
	window  time.Duration

	mu sync.Mutex
	// going maps a name to the last time a namespace of that name was seen being deleted, or seen to
	// exist when a create of it failed. Entries older than the window are dropped.
	going map[string]time.Time
	// reused holds the namespaces this process created while their name was in going.
	reused map[types.UID]time.Time
	pruned time.Time
}

// NewNamespaceReuse returns a NamespaceReuse that vouches for the deletions it sees from knownSince on:
// the manager passes the time it starts, before its caches do (it cannot know what was deleted before).
// A harness whose API server started empty may pass the API server's start, since nothing was
// deleted before it.
func NewNamespaceReuse(clk clock.PassiveClock, knownSince time.Time) *NamespaceReuse {
	return &NamespaceReuse{clock: clk, started: knownSince, window: claimpolicy.NameReuseWindow,
		going: map[string]time.Time{}, reused: map[types.UID]time.Time{}}
}

// Transform wraps the Namespace informer's transform: it records each namespace it sees being
// deleted, then applies next.
func (t *NamespaceReuse) Transform(next toolscache.TransformFunc) toolscache.TransformFunc {
	return func(in any) (any, error) {
		if ns, ok := in.(*corev1.Namespace); ok && !ns.DeletionTimestamp.IsZero() {
			t.Going(ns.Name)
		}
		if next == nil {
			return in, nil
		}
		return next(in)
	}
}

// Going records that a namespace named name exists or is being deleted now, so a namespace of that name
// created within the window is a reuse.
func (t *NamespaceReuse) Going(name string) {
	now := t.clock.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	t.going[name] = now
	t.pruneLocked(now)
}

// Created records the namespace ns (with its UID) that this process has just created: it is a reuse
// when a namespace of its name was seen going within the window.
func (t *NamespaceReuse) Created(ns *corev1.Namespace) {
	now := t.clock.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	if seen, ok := t.going[ns.Name]; ok && now.Sub(seen) < t.window {
		t.reused[ns.UID] = ns.CreationTimestamp.Time
	}
	t.pruneLocked(now)
}

// GrantsAt returns the earliest time at which bindings may name the tenant of namespace ns, or zero
// when they may be made at once (see grantsAt).
func (t *NamespaceReuse) GrantsAt(ns *corev1.Namespace) time.Time {
	t.mu.Lock()
	_, reused := t.reused[ns.UID]
	t.mu.Unlock()
	return claimpolicy.GrantsAt(ns.CreationTimestamp.Time, reused, t.started, t.window)
}

// pruneLocked drops, at most once per window, the entries whose window has passed.
func (t *NamespaceReuse) pruneLocked(now time.Time) {
	if now.Sub(t.pruned) < t.window {
		return
	}
	t.pruned = now
	for name, seen := range t.going {
		if now.Sub(seen) >= t.window {
			delete(t.going, name)
		}
	}
	for uid, created := range t.reused {
		if now.Sub(created) >= 2*t.window {
			delete(t.reused, uid)
		}
	}
}
