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

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Budgets are keys of a second kind (Key.Budget): a slot carries the charge of its claim, and the check
// sees the charges of the claims counted, so a budget of quantities is admitted under the same short
// lock, seeded and refreshed from the same live lists, as a claim limit. A budget's holding stays
// counted while its namespace is Terminating: only GoneFromBudgets, once the namespace is deleted,
// frees it.

// Charge is what a claim takes from a budget: one claim of Requester and Resources.
type Charge struct {
	// Requester is who the claim is charged to in the budget's per-requester limits.
	Requester string
	// Resources is the charge per resource name.
	Resources corev1.ResourceList
}

// Charged is a claim the ledger counts for a budget, with its charge.
type Charged struct {
	Claim  types.UID
	Charge Charge
}

// ChargeCheck decides whether a claim fits a budget given the claims counted for it with their charges
// (the claim itself excluded). Like Check, it runs under the ledger's lock and must not call the API.
type ChargeCheck func(counted []Charged) bool

// AdmitCharged is Admit for a budget key: an admitted claim's slot carries charge, and check sees the
// charges counted. A claim the ledger counts already is admitted without a check (never gated again).
func (l *Ledger) AdmitCharged(ctx context.Context, key Key, claim types.UID, charge Charge, check ChargeCheck, live Lister) (*Reservation, error) {
	return l.admit(ctx, key, claim, charge, func(slots map[types.UID]slot) bool { return check(charged(slots, claim)) }, live)
}

// Charges returns the claims the ledger counts for key with their charges.
func (l *Ledger) Charges(key Key) []Charged {
	l.mu.Lock()
	defer l.mu.Unlock()
	if e := l.keys[key]; e != nil {
		return charged(e.slots, "")
	}
	return nil
}

// GoneFromBudgets drops claim's holding of namespace, now deleted, from every budget key, and returns
// the names of the budgets it freed (sorted).
func (l *Ledger) GoneFromBudgets(claim types.UID, namespace string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var freed []string
	for key, e := range l.keys {
		if key.Budget == "" {
			continue
		}
		if s, ok := e.slots[claim]; ok && s.held && s.namespace == namespace {
			delete(e.slots, claim)
			freed = append(freed, key.Budget)
			l.forgetIfIdle(key, e)
		}
	}
	slices.Sort(freed)
	return freed
}

// Reservations are a claim's admissions to several keys (its budgets), settled together.
type Reservations []*Reservation

// Hold holds every reservation (Reservation.Hold).
func (rs Reservations) Hold(namespace string) {
	for _, r := range rs {
		r.Hold(namespace)
	}
}

// Release releases every reservation (Reservation.Release).
func (rs Reservations) Release() {
	for _, r := range rs {
		r.Release()
	}
}

// charged lists the claims slots count with their charges, except claim, in UID order.
func charged(slots map[types.UID]slot, claim types.UID) []Charged {
	out := make([]Charged, 0, len(slots))
	for uid, s := range slots {
		if uid != claim {
			out = append(out, Charged{Claim: uid, Charge: s.charge})
		}
	}
	slices.SortFunc(out, func(a, b Charged) int {
		switch {
		case a.Claim < b.Claim:
			return -1
		case a.Claim > b.Claim:
			return 1
		}
		return 0
	})
	return out
}
