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
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/nsclaim/nsclaim-operator/internal/claimpolicy"
)

func namespaceAt(name string, uid types.UID, created time.Time, deleting bool) *corev1.Namespace {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, UID: uid, CreationTimestamp: metav1.NewTime(created)}}
	if deleting {
		ns.DeletionTimestamp = &metav1.Time{Time: created.Add(time.Minute)}
	}
	return ns
}

// TestNamespaceReuseLearnsFromTheInformer: a name whose namespace the informer saw being deleted is a
// reuse if created within the window, not after it; a name never seen is not; the transform still
// applies the next transform; entries are pruned once their window passed.
func TestNamespaceReuseLearnsFromTheInformer(t *testing.T) {
	start := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakePassiveClock(start)
	r := NewNamespaceReuse(clk, clk.Now())
	var nextCalls int
	transform := r.Transform(func(in any) (any, error) { nextCalls++; return in, nil })

	clk.SetTime(start.Add(time.Hour))
	now := clk.Now()
	// The informer sees pr-1 live (nothing recorded), then being deleted, then its final delete event.
	for _, obj := range []any{namespaceAt("pr-1", "old", now.Add(-time.Hour), false), namespaceAt("pr-1", "old", now.Add(-time.Hour), true)} {
		if _, err := transform(obj); err != nil {
			t.Fatal(err)
		}
	}
	if nextCalls != 2 {
		t.Fatalf("the next transform ran %d times, want 2", nextCalls)
	}
	clk.SetTime(now.Add(3 * time.Second))
	reusedNS := namespaceAt("pr-1", "new", clk.Now(), false)
	r.Created(reusedNS)
	if got, want := r.GrantsAt(reusedNS), reusedNS.CreationTimestamp.Add(claimpolicy.NameReuseWindow); !got.Equal(want) {
		t.Fatalf("reused name: GrantsAt = %v, want %v", got, want)
	}
	fresh := namespaceAt("pr-2", "fresh", clk.Now(), false)
	r.Created(fresh)
	if got := r.GrantsAt(fresh); !got.IsZero() {
		t.Fatalf("fresh name: GrantsAt = %v, want at once", got)
	}

	// A create that found the name taken (a namespace the cache had not seen) makes it a reuse too.
	r.Going("pr-3")
	clk.SetTime(clk.Now().Add(claimpolicy.NameReuseWindow - time.Second))
	taken := namespaceAt("pr-3", "taken", clk.Now(), false)
	r.Created(taken)
	if r.GrantsAt(taken).IsZero() {
		t.Fatal("a name found taken a moment ago is not a reuse")
	}

	// A window after pr-1 was last seen going, a new pr-1 is fresh, and the old entries are gone.
	clk.SetTime(clk.Now().Add(3 * claimpolicy.NameReuseWindow))
	later := namespaceAt("pr-1", "later", clk.Now(), false)
	r.Created(later)
	if got := r.GrantsAt(later); !got.IsZero() {
		t.Fatalf("a name last used long ago: GrantsAt = %v, want at once", got)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.going) != 0 || len(r.reused) != 0 {
		t.Fatalf("entries past their window are kept: going %v, reused %v", r.going, r.reused)
	}
}

// TestNamespaceReuseFeederRunsOnStandbys: the feeder needs no leader election (controller-runtime
// starts it on every replica), and its first sync moves started up, never back.
func TestNamespaceReuseFeederRunsOnStandbys(t *testing.T) {
	if (&reuseFeeder{}).NeedLeaderElection() {
		t.Fatal("the name-reuse feeder waits for leader election: a standby would record no deletion")
	}
	start := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name             string
		knownSince, sync time.Time
		want             time.Time
	}{
		{name: "synced after the start: started moves up to the sync", knownSince: start, sync: start.Add(3 * time.Second), want: start.Add(3 * time.Second)},
		{name: "a harness vouching for a later time: kept", knownSince: start.Add(time.Minute), sync: start, want: start.Add(time.Minute)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := NewNamespaceReuse(clocktesting.NewFakePassiveClock(tc.sync), tc.knownSince)
			r.watching()
			if !r.started.Equal(tc.want) {
				t.Errorf("started = %v, want %v", r.started, tc.want)
			}
		})
	}
}
