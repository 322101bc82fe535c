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
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/manager"

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
	clock  clock.PassiveClock
	window time.Duration

	mu sync.Mutex
	// started is when the informer's record begins (see NewNamespaceReuse and Feed).
	started time.Time
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
	started := t.started
	t.mu.Unlock()
	return claimpolicy.GrantsAt(ns.CreationTimestamp.Time, reused, started, t.window)
}

// Feed adds to mgr the runnable that feeds t from the moment the manager starts, on every replica,
// leader or not: it starts the manager's Namespace informer (whose transform is t.Transform, see
// CacheOptions) at once instead of when a leader's controller first watches Namespaces. Without it, a
// standby promoted to leader hours after its start would open its informer only then, and miss every
// deletion before (its record would begin at promotion while started says process start). Keeping the
// informer of a standby running was chosen over making a new leader wait the window out after each
// takeover: it costs a standby one Namespace watch, and a failover no 15 s pause of every new
// namespace's grants. Once the informer has synced, started moves up to that moment if it was
// earlier: from then on the informer has seen every deletion, and before it nothing is vouched for.
func (t *NamespaceReuse) Feed(mgr manager.Manager) error {
	if err := mgr.Add(&reuseFeeder{reuse: t, informers: mgr.GetCache()}); err != nil {
		return fmt.Errorf("adding the name-reuse tracker's Namespace informer: %w", err)
	}
	return nil
}

// reuseFeeder starts the Namespace informer of a manager's cache on every replica (see Feed).
type reuseFeeder struct {
	reuse     *NamespaceReuse
	informers cache.Informers
}

// NeedLeaderElection reports that the feeder runs on every replica, leader or standby: a standby must
// see the deletions a leader will need once it takes over.
func (f *reuseFeeder) NeedLeaderElection() bool { return false }

// Start gets the Namespace informer, which starts it and waits for its first list, then records that
// the tracker vouches for deletions from now on.
func (f *reuseFeeder) Start(ctx context.Context) error {
	if _, err := f.informers.GetInformer(ctx, &corev1.Namespace{}); err != nil {
		return fmt.Errorf("starting the Namespace informer of the name-reuse tracker: %w", err)
	}
	f.reuse.watching()
	return nil
}

// watching moves started up to now, the moment the informer has listed every namespace.
func (t *NamespaceReuse) watching() {
	now := t.clock.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	if now.After(t.started) {
		t.started = now
	}
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
