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

package admission

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/types"
)

func TestRefreshed(t *testing.T) {
	reserved := slot{}
	held := func(ns string, at uint64) slot { return slot{namespace: ns, held: true, heldAt: at} }
	cases := []struct {
		name     string
		slots    map[types.UID]slot
		start    uint64
		holdings []Holding
		want     map[types.UID]slot
	}{
		{"a seed counts every live holding", map[types.UID]slot{}, 0,
			[]Holding{{Claim: "a", Namespace: "ns-a"}, {Claim: "b", Namespace: "ns-b"}},
			map[types.UID]slot{"a": held("ns-a", 9), "b": held("ns-b", 9)}},
		{"a holding from before the list that the list lacks is gone", map[types.UID]slot{"a": held("ns-a", 2)}, 2,
			nil, map[types.UID]slot{}},
		{"a holding from after the list started stays", map[types.UID]slot{"a": held("ns-a", 3)}, 2,
			nil, map[types.UID]slot{"a": held("ns-a", 3)}},
		{"a reservation stays whatever the list says", map[types.UID]slot{"a": reserved}, 5,
			nil, map[types.UID]slot{"a": reserved}},
		// An older list running at the same time could drop it if it became a holding of this list's seq.
		{"a reservation whose namespace the list has stays a reservation", map[types.UID]slot{"a": reserved}, 5,
			[]Holding{{Claim: "a", Namespace: "ns-a"}}, map[types.UID]slot{"a": reserved}},
		{"a holding the ledger missed is counted, recorded after every list so far", map[types.UID]slot{"a": held("ns-a", 1)}, 4,
			[]Holding{{Claim: "a", Namespace: "ns-a"}, {Claim: "c", Namespace: "ns-c"}}, map[types.UID]slot{"a": held("ns-a", 1), "c": held("ns-c", 9)}},
		{"a later holding keeps its own record", map[types.UID]slot{"a": held("ns-a2", 6)}, 4,
			[]Holding{{Claim: "a", Namespace: "ns-a"}}, map[types.UID]slot{"a": held("ns-a2", 6)}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := refreshed(tc.slots, tc.start, 9, tc.holdings); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("refreshed = %v, want %v", got, tc.want)
			}
		})
	}
}

// under is a Check that admits while fewer than limit claims are counted.
func under(limit int) Check { return func(c []types.UID) bool { return len(c) < limit } }

func lister(h ...Holding) Lister { return func(context.Context) ([]Holding, error) { return h, nil } }

// TestAdmitNeverOverfills: 64 claims of one key race for 5 slots over a seed of 2 holdings; exactly 3
// are admitted, and those released give their slot to the next.
func TestAdmitNeverOverfills(t *testing.T) {
	var l Ledger
	key := Key{Namespace: "team-a", Class: "ci"}
	live := lister(Holding{Claim: "old-1", Namespace: "ns-1"}, Holding{Claim: "old-2", Namespace: "ns-2"})
	var mu sync.Mutex
	var admitted []*Reservation
	var wg sync.WaitGroup
	for i := range 64 {
		wg.Go(func() {
			r, err := l.Admit(context.Background(), key, types.UID(fmt.Sprint("c", i)), under(5), live)
			if err != nil {
				t.Error(err)
			}
			if r != nil {
				mu.Lock()
				admitted = append(admitted, r)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(admitted) != 3 {
		t.Fatalf("%d admitted, want 3", len(admitted))
	}
	if got := len(l.Counted(key)); got != 5 {
		t.Fatalf("%d counted, want 5", got)
	}
	admitted[0].Hold("ns-x")
	admitted[1].Release()
	admitted[1].Release()
	if r, _ := l.Admit(context.Background(), key, "late", under(5), lister()); r == nil {
		t.Fatal("a released slot was not given to the next claim")
	}
	// The refusal's refresh drops the seeded holdings the live list no longer has.
	if r, _ := l.Admit(context.Background(), key, "later", under(5), lister(Holding{Claim: "old-1", Namespace: "ns-1"})); r == nil {
		t.Fatal("a holding gone from the live list was still counted")
	}
}

func TestGoneAndForget(t *testing.T) {
	var l Ledger
	key := Key{Namespace: "team-a", Class: "ci"}
	r, err := l.Admit(context.Background(), key, "a", under(1), lister())
	if err != nil || r == nil {
		t.Fatalf("first claim not admitted: %v", err)
	}
	r.Hold("ns-a")
	r.Release() // no-op once held
	if got := l.Counted(key); len(got) != 1 {
		t.Fatalf("counted %v after hold", got)
	}
	// A holding is not dropped for another namespace carrying the claim's labels.
	l.Gone(key, "a", "forged")
	if got := l.Counted(key); len(got) != 1 {
		t.Fatalf("counted %v after a forged namespace went", got)
	}
	l.Gone(key, "a", "ns-a")
	if len(l.keys) != 0 {
		t.Fatalf("an idle key was kept: %v", l.keys)
	}
	// A forgotten key is seeded again, and a failing list admits nothing.
	boom := errors.New("boom")
	if r, err := l.Admit(context.Background(), key, "b", under(1), func(context.Context) ([]Holding, error) { return nil, boom }); !errors.Is(err, boom) || r != nil {
		t.Fatalf("Admit with a failing list = %v, %v", r, err)
	}
	if r, err := l.Admit(context.Background(), key, "b", under(1), lister(Holding{Claim: "a", Namespace: "ns-a"})); err != nil || r != nil {
		t.Fatalf("a reseeded key did not count its live holding: %v, %v", r, err)
	}
	if got := l.Counted(key); len(got) != 1 || got[0] != "a" {
		t.Fatalf("counted %v after the reseed, want [a]", got)
	}
}

// TestOlderListNeverDropsANamespaceBeingMade: two refused claims refresh at once; the newer list has
// the namespace a reserved claim just made, the older one does not. Whatever order they apply in, the
// reservation is still counted: the older list, applied last, must not admit a second claim to a
// limit of one.
func TestOlderListNeverDropsANamespaceBeingMade(t *testing.T) {
	var l Ledger
	key := Key{Namespace: "team-a", Class: "ci"}
	a, err := l.Admit(context.Background(), key, "a", under(1), lister())
	if err != nil || a == nil {
		t.Fatalf("first claim not admitted: %v", err)
	}
	listing, release := make(chan struct{}), make(chan struct{})
	older := func(ctx context.Context) ([]Holding, error) {
		close(listing)
		<-release
		return lister()(ctx) // taken before a's namespace existed
	}
	done := make(chan *Reservation)
	go func() {
		r, _ := l.Admit(context.Background(), key, "d", under(1), older)
		done <- r
	}()
	<-listing
	if r, _ := l.Admit(context.Background(), key, "e", under(1), lister(Holding{Claim: "a", Namespace: "ns-a"})); r != nil {
		t.Fatal("a claim was admitted over a namespace being made")
	}
	close(release)
	if r := <-done; r != nil {
		t.Fatal("an older list dropped the namespace being made and admitted a second claim")
	}
	a.Hold("ns-a")
	if got := l.Counted(key); len(got) != 1 || got[0] != "a" {
		t.Fatalf("counted %v, want [a]", got)
	}
}
