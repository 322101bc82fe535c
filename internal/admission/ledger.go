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
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/types"
)

// Key is one limit: a class in one requester namespace, or (Budget set) a NamespaceBudget.
type Key struct {
	// Namespace is the requester namespace.
	Namespace string
	// Class is the class's label value (claimpolicy.Label), as the namespaces it made carry it.
	Class string
	// Budget is the name of a NamespaceBudget; its slots carry charges (AdmitCharged).
	Budget string
}

// Holding is a claim that owns a live namespace of a key, as a live list reports it.
type Holding struct {
	Claim     types.UID
	Namespace string
	// Charge is what the holding takes from a budget (budget keys only).
	Charge Charge
}

// Lister lists a key's holdings from the API server (never the cache): the namespaces nsclaim owns that
// exist and are not being deleted.
type Lister func(ctx context.Context) ([]Holding, error)

// Check decides whether a claim may take a slot, given the claims the ledger counts for its key
// (holdings and reservations, the claim itself excluded). It must not call the API server: it runs
// under the ledger's lock.
type Check func(counted []types.UID) bool

// Ledger holds, per key, the slots the leader has reserved or knows to be held. The zero value is
// ready to use.
type Ledger struct {
	mu   sync.Mutex
	keys map[Key]*entry
}

// entry is one key's slots. seed is held while the key is seeded (its first admission, once).
type entry struct {
	seed   sync.Mutex
	seeded bool
	// users counts the admissions and reservations that use this entry: it is dropped only when none
	// does and it has no slot, so a key that comes back is seeded again.
	users int
	// seq counts the holdings recorded; a live list that starts at seq s has every namespace held at
	// seq <= s that still exists.
	seq   uint64
	slots map[types.UID]slot
}

// slot is one claim's place in a key's limit: reserved while its namespace is being made or handed
// out, held (since heldAt) once it exists.
type slot struct {
	namespace string
	held      bool
	heldAt    uint64
	charge    Charge
}

// Admit admits claim to key's limit if check allows it, and reserves its slot. A claim the ledger
// counts already (a holding) is admitted without a new reservation. A refused claim first refreshes
// the key from a live list (a holding may be gone that the ledger did not see go) and is checked
// once more. The returned Reservation is nil when the claim is refused; it must be released when
// the claim's namespace was not made (Release is a no-op once held).
func (l *Ledger) Admit(ctx context.Context, key Key, claim types.UID, check Check, live Lister) (*Reservation, error) {
	return l.admit(ctx, key, claim, Charge{}, func(slots map[types.UID]slot) bool { return check(counted(slots, claim)) }, live)
}

// admit is Admit and AdmitCharged: fits decides over the key's slots, and an admitted claim's slot is
// reserved with charge.
func (l *Ledger) admit(ctx context.Context, key Key, claim types.UID, charge Charge, fits func(map[types.UID]slot) bool, live Lister) (*Reservation, error) {
	e := l.use(key)
	r := &Reservation{ledger: l, key: key, claim: claim}
	if err := l.seed(ctx, e, live); err != nil {
		l.unuse(key, e)
		return nil, err
	}
	l.mu.Lock()
	if admitted(e, claim, charge, fits) {
		l.mu.Unlock()
		return r, nil
	}
	start := e.seq
	l.mu.Unlock()
	holdings, err := live(ctx)
	if err != nil {
		l.unuse(key, e)
		return nil, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	e.seq++
	e.slots = refreshed(e.slots, start, e.seq, holdings)
	if admitted(e, claim, charge, fits) {
		return r, nil
	}
	l.dropUser(key, e)
	return nil, nil
}

// seed fills a key the ledger has not seen from a live list: once, with every other admission of the
// key waiting (they could not count otherwise).
func (l *Ledger) seed(ctx context.Context, e *entry, live Lister) error {
	e.seed.Lock()
	defer e.seed.Unlock()
	if e.seeded {
		return nil
	}
	l.mu.Lock()
	start := e.seq
	l.mu.Unlock()
	holdings, err := live(ctx)
	if err != nil {
		return err
	}
	l.mu.Lock()
	e.seq++
	e.slots = refreshed(e.slots, start, e.seq, holdings)
	e.seeded = true
	l.mu.Unlock()
	return nil
}

// admitted runs check for claim and reserves its slot if it passes; l.mu is held.
func admitted(e *entry, claim types.UID, charge Charge, fits func(map[types.UID]slot) bool) bool {
	if _, ok := e.slots[claim]; ok {
		return true
	}
	if !fits(e.slots) {
		return false
	}
	e.slots[claim] = slot{charge: charge}
	return true
}

// use returns key's entry, made if needed, counted as used until unuse.
func (l *Ledger) use(key Key) *entry {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.keys == nil {
		l.keys = map[Key]*entry{}
	}
	e := l.keys[key]
	if e == nil {
		e = &entry{slots: map[types.UID]slot{}}
		l.keys[key] = e
	}
	e.users++
	return e
}

func (l *Ledger) unuse(key Key, e *entry) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.dropUser(key, e)
}

// dropUser ends one use of e; l.mu is held. An entry nobody uses and that counts nothing is forgotten.
func (l *Ledger) dropUser(key Key, e *entry) {
	e.users--
	l.forgetIfIdle(key, e)
}

func (l *Ledger) forgetIfIdle(key Key, e *entry) {
	if e.users <= 0 && len(e.slots) == 0 && l.keys[key] == e {
		delete(l.keys, key)
	}
}

// Gone drops the holding of claim in key when namespace, the one it holds, is terminating or gone.
// A holding of another namespace (one someone else marked with the claim's labels) stays.
func (l *Ledger) Gone(key Key, claim types.UID, namespace string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	e := l.keys[key]
	if e == nil {
		return
	}
	if s, ok := e.slots[claim]; ok && s.held && s.namespace == namespace {
		delete(e.slots, claim)
		l.forgetIfIdle(key, e)
	}
}

// Counted returns the claims the ledger counts for key: holdings and reservations.
func (l *Ledger) Counted(key Key) []types.UID {
	l.mu.Lock()
	defer l.mu.Unlock()
	if e := l.keys[key]; e != nil {
		return counted(e.slots, "")
	}
	return nil
}

// Reservation is a claim's admission to a key: its slot, reserved or held.
type Reservation struct {
	ledger *Ledger
	key    Key
	claim  types.UID
	done   bool
}

// Hold records that the claim's namespace exists, or may (a write whose outcome is unknown): the slot
// is counted until the namespace is seen gone.
func (r *Reservation) Hold(namespace string) {
	r.settle(func(e *entry) {
		e.seq++
		e.slots[r.claim] = slot{namespace: namespace, held: true, heldAt: e.seq, charge: e.slots[r.claim].charge}
	})
}

// Release gives the slot back when the claim's namespace was certainly not made; it does nothing once
// the slot is held, and may be called more than once.
func (r *Reservation) Release() {
	r.settle(func(e *entry) {
		if s, ok := e.slots[r.claim]; ok && !s.held {
			delete(e.slots, r.claim)
		}
	})
}

// settle ends the reservation with change, made to its key's entry under the ledger's lock; only the
// first Hold or Release of a reservation (nil: none) changes anything.
func (r *Reservation) settle(change func(e *entry)) {
	if r == nil || r.done {
		return
	}
	l := r.ledger
	l.mu.Lock()
	defer l.mu.Unlock()
	e := l.keys[r.key]
	change(e)
	r.done = true
	l.dropUser(r.key, e)
}

// counted lists the claims slots count, except claim.
func counted(slots map[types.UID]slot, claim types.UID) []types.UID {
	uids := make([]types.UID, 0, len(slots))
	for uid := range slots {
		if uid != claim {
			uids = append(uids, uid)
		}
	}
	slices.Sort(uids)
	return uids
}

// refreshed is slots after a live list that started at seq start returned holdings: a holding recorded
// at or before start that the list does not have is gone; a claim the list has that slots lack is held
// (the ledger missed it), recorded at next, a seq no list that started before this refresh has; every
// other slot stays as it is: a reservation (its namespace may not exist yet, and its own Hold or
// Release settles it), and a holding recorded after start (the list may have missed it). A slot is
// never recorded with an older seq than it has: a list older than the newest that saw it cannot drop it.
func refreshed(slots map[types.UID]slot, start, next uint64, holdings []Holding) map[types.UID]slot {
	live := make(map[types.UID]Holding, len(holdings))
	for _, h := range holdings {
		live[h.Claim] = h
	}
	out := make(map[types.UID]slot, len(slots)+len(holdings))
	for uid, s := range slots {
		if _, ok := live[uid]; s.held && s.heldAt <= start && !ok {
			continue
		}
		out[uid] = s
	}
	for uid, ns := range live {
		if _, ok := out[uid]; !ok {
			out[uid] = slot{namespace: ns.Namespace, held: true, heldAt: next, charge: ns.Charge}
		}
	}
	return out
}
