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

// Package budget holds the claim reconciler's budget phase (Phase.Reconcile over Claim, the part of a
// reconcile it reads and records): a claim that holds no namespace yet is admitted to every
// NamespaceBudget that covers it through the admission ledger (internal/admission, the one the claim
// limit uses), before anything exists; one that does not fit waits (Queued), is refused or makes room
// (EvictIdle). The decisions are internal/budget's; this package lists, reserves, deletes and reports.
package budget

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
	"github.com/nsclaim/nsclaim-operator/internal/admission"
	policy "github.com/nsclaim/nsclaim-operator/internal/budget"
	"github.com/nsclaim/nsclaim-operator/internal/claimpolicy"
	"github.com/nsclaim/nsclaim-operator/internal/monitoring"
)

// +kubebuilder:rbac:groups=tenancy.nsclaim.dev,resources=namespacebudgets,verbs=get;list;watch

// Claim is the part of a claim's reconcile the budget phase reads and records.
type Claim struct {
	Claim *tenancyv1alpha1.NamespaceClaim
	// Class is the resolved class (its ResourceQuota hard is the claim's charge).
	Class *tenancyv1alpha1.NamespaceClass
	// Held is set when the claim holds its namespace: an admitted claim is never gated again.
	Held bool
	// RequesterLabels are the labels of the claim's namespace (the budgets' namespaceSelector).
	RequesterLabels map[string]string
	Now             time.Time

	// Refusal is the claim's refusal so far; the phase runs only without one, and records Queued,
	// BudgetExhausted or QueueWaitExceeded.
	Refusal *claimpolicy.Refusal
	// Slots are the claim's reservations in its budgets, recorded when every budget admitted it: held
	// once its namespace exists, released when it was not made.
	Slots admission.Reservations
	// GiveUpAt is when the queued claim's maxQueueWait runs out (its creation plus the budget's
	// maxQueueWait), so that it is looked at again then and refused on time; zero when it is not queued
	// or the budget it waits for has no maxQueueWait.
	GiveUpAt time.Time
}

// Phase is the budget phase over the cache, the one admission ledger and the live lists.
type Phase struct {
	// Reader is the manager's cache: budgets, claims, classes, requester namespaces.
	Reader client.Reader
	// Writer deletes the claim an eviction chose.
	Writer client.Writer
	// Ledger is the claim reconciler's admission ledger.
	Ledger *admission.Ledger
	// APIReader lists the namespaces nsclaim made, uncached (metadata only): the cache may not have seen
	// one made an instant ago.
	APIReader client.Reader
	// Owned returns the claim that owns a namespace by nsclaim's record, and whether one does.
	Owned func(ctx context.Context, ns *metav1.PartialObjectMetadata) (types.UID, bool, error)
	// Recorder records the Events of an admission out of the queue and of an eviction; nil records none.
	Recorder recorder.EventRecorder
}

// Reconcile admits a claim that holds no namespace and is not refused to every budget that covers it
// (internal/budget.Covering, by name), and records the reservations in Slots. At the first budget that
// does not admit it, the reservations taken are given back and the refusal is recorded: Queued (with
// the position and what is requested and available), BudgetExhausted or QueueWaitExceeded; for
// EvictIdle, the requester's least recently active idle claim is deleted too. A claim with no budget,
// or already admitted, is let through untouched.
func (p *Phase) Reconcile(ctx context.Context, c *Claim) error {
	if c.Held || c.Refusal != nil || c.Class == nil {
		return nil
	}
	budgets := &tenancyv1alpha1.NamespaceBudgetList{}
	if err := p.Reader.List(ctx, budgets); err != nil {
		return fmt.Errorf("listing NamespaceBudgets: %w", err)
	}
	covering := policy.Covering(budgets.Items, c.Claim, c.RequesterLabels)
	if len(covering) == 0 {
		return nil
	}
	claims := &tenancyv1alpha1.NamespaceClaimList{}
	// Read-only: the cached claims themselves, not a deep copy of every claim for each one admitted
	// (nothing below changes a claim of the list; an eviction deletes one as it is).
	if err := p.Reader.List(ctx, claims, client.UnsafeDisableDeepCopy); err != nil {
		return fmt.Errorf("listing NamespaceClaims: %w", err)
	}
	q := &queue{phase: p, claims: claims.Items, labels: map[string]map[string]string{c.Claim.Namespace: c.RequesterLabels}}
	charge := policy.ChargeOf(c.Claim, c.Class)
	for _, b := range covering {
		slot, refusal, err := q.admit(ctx, c, b, charge)
		if err != nil || slot == nil {
			c.Slots.Release()
			c.Slots, c.Refusal = nil, refusal
			if refusal != nil && refusal.Reason == tenancyv1alpha1.QueuedReason && b.Spec.MaxQueueWait != nil {
				c.GiveUpAt = c.Claim.CreationTimestamp.Add(b.Spec.MaxQueueWait.Duration)
			}
			return err
		}
		c.Slots = append(c.Slots, slot)
	}
	for _, b := range covering {
		monitoring.BudgetAdmitted(b.Name)
	}
	if Queued(c.Claim) {
		p.event(c.Claim, corev1.EventTypeNormal, tenancyv1alpha1.AdmittedReason, "Admit", "Left the queue of its NamespaceBudgets: its namespace is being made")
	}
	return nil
}

// Queued reports whether claim's Ready condition says it waits for a budget.
func Queued(claim *tenancyv1alpha1.NamespaceClaim) bool {
	ready := meta.FindStatusCondition(claim.Status.Conditions, tenancyv1alpha1.ReadyCondition)
	return ready != nil && ready.Reason == tenancyv1alpha1.QueuedReason
}

// waits reports whether claim, which holds no namespace, is in line for a budget: not refused for
// another reason (a claim no budget would admit must not hold the line), not being deleted.
func waits(claim *tenancyv1alpha1.NamespaceClaim) bool {
	if claim.Status.Namespace != "" || !claim.DeletionTimestamp.IsZero() {
		return false
	}
	ready := meta.FindStatusCondition(claim.Status.Conditions, tenancyv1alpha1.ReadyCondition)
	if ready == nil {
		return true
	}
	switch ready.Reason {
	case tenancyv1alpha1.QueuedReason, tenancyv1alpha1.PendingReason, tenancyv1alpha1.ProvisioningReason:
		return true
	}
	return false
}

// queue is what one reconcile knows of the claims in line: every claim in the cache and the labels
// of the requester namespaces read so far.
type queue struct {
	phase  *Phase
	claims []tenancyv1alpha1.NamespaceClaim
	labels map[string]map[string]string
	// classes are the classes by name, listed once when a claim's line is charged (aheadCharges).
	classes map[string]*tenancyv1alpha1.NamespaceClass
	// charges are the charges of a claim of each class, made once per class (aheadCharges): the
	// claims ahead share them (read only) with their own requester.
	charges map[*tenancyv1alpha1.NamespaceClass]policy.Charge
}

// requesterLabels are the labels of requester namespace ns, read from the cache once.
func (q *queue) requesterLabels(ctx context.Context, ns string) map[string]string {
	if l, ok := q.labels[ns]; ok {
		return l
	}
	n := &corev1.Namespace{}
	if err := q.phase.Reader.Get(ctx, client.ObjectKey{Name: ns}, n); err != nil {
		n.Labels = nil
	}
	q.labels[ns] = n.Labels
	return n.Labels
}

// waiting are the claims in line for b other than those the ledger counts already.
func (q *queue) waiting(ctx context.Context, b *tenancyv1alpha1.NamespaceBudget, counted map[string]bool) []*tenancyv1alpha1.NamespaceClaim {
	var out []*tenancyv1alpha1.NamespaceClaim
	coverage := policy.CoverageOf(b)
	for i := range q.claims {
		w := &q.claims[i]
		if waits(w) && !counted[string(w.UID)] && coverage.Covers(w, q.requesterLabels(ctx, w.Namespace)) {
			out = append(out, w)
		}
	}
	return out
}

// aheadCharges are the charges of the claims in waiting that come before c in admission order, each
// by its class from the cache; known is false when one's class cannot be told (not in the cache, or a
// default class c does not share), and c then waits its turn.
func (q *queue) aheadCharges(ctx context.Context, c *Claim, waiting []*tenancyv1alpha1.NamespaceClaim) ([]policy.Charge, bool, error) {
	if q.classes == nil {
		classes := &tenancyv1alpha1.NamespaceClassList{}
		if err := q.phase.Reader.List(ctx, classes); err != nil {
			return nil, false, fmt.Errorf("listing NamespaceClasses: %w", err)
		}
		q.classes = make(map[string]*tenancyv1alpha1.NamespaceClass, len(classes.Items))
		for i := range classes.Items {
			q.classes[classes.Items[i].Name] = &classes.Items[i]
		}
	}
	var out []policy.Charge
	for _, w := range waiting {
		if w.UID == c.Claim.UID || !policy.Before(w, c.Claim) {
			continue
		}
		name := claimpolicy.ClassOf(w)
		class := q.classes[name]
		if name == "" && claimpolicy.ClassOf(c.Claim) == "" {
			// Both ask for the default class: the one c resolved to.
			class = c.Class
		}
		if class == nil {
			return nil, false, nil
		}
		ch, ok := q.charges[class]
		if !ok {
			if q.charges == nil {
				q.charges = map[*tenancyv1alpha1.NamespaceClass]policy.Charge{}
			}
			ch = policy.ChargeOf(w, class)
			q.charges[class] = ch
		}
		ch.Requester = policy.Requester(w)
		out = append(out, ch)
	}
	return out, true, nil
}

// admit admits c to budget b with charge through the ledger, or returns the refusal that says why not
// (and evicts, for EvictIdle).
func (q *queue) admit(ctx context.Context, c *Claim, b *tenancyv1alpha1.NamespaceBudget, charge policy.Charge) (*admission.Reservation, *claimpolicy.Refusal, error) {
	key := admission.Key{Budget: b.Name}
	counted := map[string]bool{}
	for _, ch := range q.phase.Ledger.Charges(key) {
		counted[string(ch.Claim)] = true
	}
	waiting := q.waiting(ctx, b, counted)
	position := policy.Position(c.Claim, waiting)
	var ahead []policy.Charge
	aheadKnown := false
	if position > 1 && b.Spec.Queueing != tenancyv1alpha1.BudgetQueueingBestEffortFIFO {
		var err error
		if ahead, aheadKnown, err = q.aheadCharges(ctx, c, waiting); err != nil {
			return nil, nil, err
		}
	}
	waited := c.Now.Sub(c.Claim.CreationTimestamp.Time)
	decision, why := policy.Queue, ""
	check := func(counted []admission.Charged) bool {
		charges := make([]policy.Charge, len(counted))
		for i := range counted {
			charges[i] = counted[i].Charge
		}
		decision, why = policy.Judge(b, charges, ahead, aheadKnown, charge, position, waited)
		return decision == policy.Admit
	}
	live := func(ctx context.Context) ([]admission.Holding, error) { return q.live(ctx, b) }
	slot, err := q.phase.Ledger.AdmitCharged(ctx, key, c.Claim.UID, charge, check, live)
	if err != nil || slot != nil {
		return slot, nil, err
	}
	switch decision {
	case policy.Reject:
		monitoring.BudgetExhausted(b.Name, monitoring.OutcomeRejected)
		reason, msg := policy.Rejection(b, waited, why)
		return nil, &claimpolicy.Refusal{Reason: reason, Message: msg}, nil
	case policy.Evict:
		if err := q.evict(ctx, c.Claim, b); err != nil {
			return nil, nil, err
		}
	}
	if !Queued(c.Claim) {
		monitoring.BudgetExhausted(b.Name, monitoring.OutcomeQueued)
	}
	return nil, &claimpolicy.Refusal{Reason: tenancyv1alpha1.QueuedReason, Message: policy.QueuedMessage(b.Name, position, why)}, nil
}

// evict deletes the least recently active idle claim of claim's requester (internal/budget.Victim)
// unless one of its claims is being deleted already (an eviction under way: its namespace is still
// charged until it is gone, and a second one would evict twice for one claim).
func (q *queue) evict(ctx context.Context, claim *tenancyv1alpha1.NamespaceClaim, b *tenancyv1alpha1.NamespaceBudget) error {
	classes := &tenancyv1alpha1.NamespaceClassList{}
	if err := q.phase.Reader.List(ctx, classes); err != nil {
		return fmt.Errorf("listing NamespaceClasses: %w", err)
	}
	idle := map[string]bool{}
	for i := range classes.Items {
		idle[classes.Items[i].Name] = classes.Items[i].Spec.Lifetime.IdleTTL != nil
	}
	requester := policy.Requester(claim)
	var candidates []policy.Candidate
	for i := range q.claims {
		v := &q.claims[i]
		if policy.Requester(v) != requester || v.Status.Namespace == "" {
			continue
		}
		if !v.DeletionTimestamp.IsZero() {
			return nil
		}
		candidates = append(candidates, policy.Candidate{Claim: v, IdleTTL: idle[claimpolicy.ClassOf(v)]})
	}
	victim := policy.Victim(claim, candidates)
	if victim == nil {
		return nil
	}
	err := q.phase.Writer.Delete(ctx, victim, client.Preconditions{UID: &victim.UID})
	if client.IgnoreNotFound(err) != nil && !apierrors.IsConflict(err) {
		return fmt.Errorf("evicting claim %s/%s for NamespaceBudget %s: %w", victim.Namespace, victim.Name, b.Name, err)
	}
	if err == nil {
		monitoring.BudgetEvicted(b.Name)
		monitoring.BudgetExhausted(b.Name, monitoring.OutcomeEvicting)
		q.phase.event(victim, corev1.EventTypeNormal, tenancyv1alpha1.EvictedReason, "Evict", fmt.Sprintf(
			"Deleted to make room in NamespaceBudget %s for claim %s, the newer claim of the same requester (onExhausted: EvictIdle)", b.Name, claim.Name))
	}
	return nil
}

func (p *Phase) event(claim *tenancyv1alpha1.NamespaceClaim, eventType, reason, action, note string) {
	if p.Recorder != nil {
		p.Recorder.Eventf(claim, nil, eventType, reason, action, "%s", note)
	}
}
