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

package budget

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
	"github.com/nsclaim/nsclaim-operator/internal/admission"
	"github.com/nsclaim/nsclaim-operator/internal/claimpolicy"
)

// Charge is what one claim takes from a budget: one claim, its requester (for the per-requester
// limits) and, per resource, its class's ResourceQuota hard. It is the admission ledger's charge, so
// the ledger's slots carry it.
type Charge = admission.Charge

// Requester is the requester a claim is charged to in a budget's perRequester limits: its creator's
// username for a keyless claim (spec.creator), else its requester namespace.
func Requester(claim *tenancyv1alpha1.NamespaceClaim) string {
	if claim.Spec.Creator != nil && claim.Spec.Creator.Username != "" {
		return "user:" + claim.Spec.Creator.Username
	}
	return "namespace:" + claim.Namespace
}

// ChargeOf is the charge of a claim of class: its requester, and the class's ResourceQuota hard (none
// when the class sets no quota).
func ChargeOf(claim *tenancyv1alpha1.NamespaceClaim, class *tenancyv1alpha1.NamespaceClass) Charge {
	c := Charge{Requester: Requester(claim), Resources: corev1.ResourceList{}}
	if class != nil && class.Spec.ResourceQuota != nil {
		for name, q := range class.Spec.ResourceQuota.Hard {
			c.Resources[name] = q.DeepCopy()
		}
	}
	return c
}

// Covers reports whether budget b covers claim, made in a requester namespace labelled
// requesterLabels: its namespaceSelector matches them, or one of its creators matches the claim's
// creator. An invalid selector covers nothing. CoverageOf(b).Covers is the same test for many claims.
func Covers(b *tenancyv1alpha1.NamespaceBudget, claim *tenancyv1alpha1.NamespaceClaim, requesterLabels map[string]string) bool {
	return CoverageOf(b).Covers(claim, requesterLabels)
}

// Coverage is a budget's requesters made ready to test many claims: its namespaceSelector is parsed
// once, not once per claim (a queue's line is every claim that waits, at each admission).
type Coverage struct {
	b *tenancyv1alpha1.NamespaceBudget
	// selector is b's namespaceSelector; nil when b has none or an invalid one (it selects nothing).
	selector labels.Selector
}

// CoverageOf returns the Coverage of budget b.
func CoverageOf(b *tenancyv1alpha1.NamespaceBudget) Coverage {
	c := Coverage{b: b}
	if sel := b.Spec.Requesters.NamespaceSelector; sel != nil {
		if s, err := metav1.LabelSelectorAsSelector(sel); err == nil {
			c.selector = s
		}
	}
	return c
}

// Covers reports whether the budget covers claim, made in a requester namespace labelled
// requesterLabels (see the function Covers).
func (c Coverage) Covers(claim *tenancyv1alpha1.NamespaceClaim, requesterLabels map[string]string) bool {
	if c.selector != nil && c.selector.Matches(labels.Set(requesterLabels)) {
		return true
	}
	cr := claim.Spec.Creator
	if cr == nil {
		return false
	}
	for _, m := range c.b.Spec.Requesters.Creators {
		if m.Username != "" && m.Username == cr.Username {
			return true
		}
		if m.ExtraKey != "" && slices.Contains(cr.Extra[m.ExtraKey], m.ExtraValue) {
			return true
		}
	}
	return false
}

// Covering returns the budgets among budgets that cover claim, sorted by name (the order a claim is
// admitted to them, so two claims never hold one budget each while waiting for the other's).
func Covering(budgets []tenancyv1alpha1.NamespaceBudget, claim *tenancyv1alpha1.NamespaceClaim, requesterLabels map[string]string) []*tenancyv1alpha1.NamespaceBudget {
	var out []*tenancyv1alpha1.NamespaceBudget
	for i := range budgets {
		if budgets[i].DeletionTimestamp.IsZero() && Covers(&budgets[i], claim, requesterLabels) {
			out = append(out, &budgets[i])
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Usage sums charges: the number of claims and, per resource, their quantities. With requester set,
// only the charges of that requester count.
func Usage(charges []Charge, requester string) tenancyv1alpha1.BudgetUsage {
	u := tenancyv1alpha1.BudgetUsage{Resources: corev1.ResourceList{}}
	for _, c := range charges {
		if requester != "" && c.Requester != requester {
			continue
		}
		u.Claims++
		for name, q := range c.Resources {
			sum := u.Resources[name]
			sum.Add(q)
			u.Resources[name] = sum
		}
	}
	return u
}

// Available is limits minus used, per limit set (never below zero). Claims is -1 when limits sets no
// claims limit.
func Available(limits tenancyv1alpha1.BudgetLimits, used tenancyv1alpha1.BudgetUsage) tenancyv1alpha1.BudgetUsage {
	a := tenancyv1alpha1.BudgetUsage{Claims: -1, Resources: corev1.ResourceList{}}
	if limits.Claims != nil {
		a.Claims = max(*limits.Claims-used.Claims, 0)
	}
	for name, limit := range limits.Resources {
		left := limit.DeepCopy()
		left.Sub(used.Resources[name])
		if left.Sign() < 0 {
			left = resource.Quantity{}
		}
		a.Resources[name] = left
	}
	return a
}

// Shortfall lists what charge asks for beyond available: "claims" when no claim is left, and every
// capped resource whose request exceeds what is left (a class that sets no value for a capped
// resource asks for none of it). Empty when the charge fits.
func Shortfall(available tenancyv1alpha1.BudgetUsage, charge Charge) []string {
	var short []string
	if available.Claims == 0 {
		short = append(short, "claims")
	}
	for name, left := range available.Resources {
		if q, ok := charge.Resources[name]; ok && q.Cmp(left) > 0 {
			short = append(short, string(name))
		}
	}
	slices.Sort(short)
	return short
}

// Fits reports whether charge fits budget b beside the charges counted already (the claim's own
// excluded), in its limits and in its requester's perRequester limits; when it does not, the message
// says what is requested and what is available, e.g. "requested: requests.cpu=2, available: 1".
func Fits(b *tenancyv1alpha1.NamespaceBudget, counted []Charge, charge Charge) (bool, string) {
	available := Available(b.Spec.Limits, Usage(counted, ""))
	short := Shortfall(available, charge)
	scope := ""
	if len(short) == 0 && b.Spec.PerRequester != nil {
		available = Available(*b.Spec.PerRequester, Usage(counted, charge.Requester))
		short, scope = Shortfall(available, charge), " for "+charge.Requester
	}
	if len(short) == 0 {
		return true, ""
	}
	var req, avail []string
	for _, name := range short {
		if name == "claims" {
			req, avail = append(req, "claims=1"), append(avail, "0")
			continue
		}
		q, left := charge.Resources[corev1.ResourceName(name)], available.Resources[corev1.ResourceName(name)]
		req, avail = append(req, name+"="+q.String()), append(avail, left.String())
	}
	return false, fmt.Sprintf("requested: %s, available%s: %s", strings.Join(req, ", "), scope, strings.Join(avail, ", "))
}

// Before reports whether claim a comes before claim b in admission order: creation time, then name
// (then namespace, so the order is total).
func Before(a, b *tenancyv1alpha1.NamespaceClaim) bool {
	if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return a.CreationTimestamp.Before(&b.CreationTimestamp)
	}
	if a.Name != b.Name {
		return a.Name < b.Name
	}
	return a.Namespace < b.Namespace
}

// Position is claim's place in the queue of waiting (1 for the first): one more than the waiting
// claims before it in admission order. claim itself may be among waiting.
func Position(claim *tenancyv1alpha1.NamespaceClaim, waiting []*tenancyv1alpha1.NamespaceClaim) int {
	pos := 1
	for _, w := range waiting {
		if w.UID != claim.UID && Before(w, claim) {
			pos++
		}
	}
	return pos
}

// RoomForTheLine reports whether charge fits budget b beside the charges counted already and the
// charges of every claim waiting ahead of it (ahead) at once. A StrictFIFO claim for which there is
// room for the whole line ahead as well is admitted before its turn (Decide sees it first in line):
// it keeps no older claim waiting, since each of them still fits beside it when its own turn comes.
// Without it a burst into a budget with room to spare would be admitted one claim per wake-up, each
// claim waiting for every older one to be counted first.
func RoomForTheLine(b *tenancyv1alpha1.NamespaceBudget, counted, ahead []Charge, charge Charge) bool {
	// The limits and charge's own requester's perRequester limits, with the line counted: then each
	// claim ahead fits beside charge too (its own check counts a part of the same sum), and another
	// requester's perRequester usage does not grow with charge.
	all := make([]Charge, 0, len(counted)+len(ahead))
	all = append(append(all, counted...), ahead...)
	fits, _ := Fits(b, all, charge)
	return fits
}

// Decision is what a budget does with a claim that asks to be admitted.
type Decision string

const (
	// Admit: the claim takes its charge now.
	Admit Decision = "Admit"
	// Queue: the claim waits (Ready=False, reason Queued).
	Queue Decision = "Queue"
	// Reject: the claim is refused (reason BudgetExhausted, or QueueWaitExceeded).
	Reject Decision = "Reject"
	// Evict: the claim waits, and the budget deletes an idle claim of the same requester to make room.
	Evict Decision = "Evict"
)

// Decide is what budget b does with a claim at position in its queue that fits (or not), having
// waited waited: a claim that fits is admitted unless StrictFIFO puts an older waiting claim first;
// one that does not fit (or must wait its turn) is queued, refused (onExhausted Reject, or maxQueueWait
// passed) or makes room (EvictIdle; only a claim that does not fit evicts).
func Decide(b *tenancyv1alpha1.NamespaceBudget, position int, fits bool, waited time.Duration) Decision {
	if fits && (position == 1 || b.Spec.Queueing == tenancyv1alpha1.BudgetQueueingBestEffortFIFO) {
		return Admit
	}
	if b.Spec.MaxQueueWait != nil && waited >= b.Spec.MaxQueueWait.Duration {
		return Reject
	}
	switch b.Spec.OnExhausted {
	case tenancyv1alpha1.BudgetExhaustedReject:
		if !fits {
			return Reject
		}
	case tenancyv1alpha1.BudgetExhaustedEvictIdle:
		if !fits {
			return Evict
		}
	}
	return Queue
}

// Judge is what budget b does with a claim charged charge at position in its line, having waited
// waited, with counted charged to b already: Decide over Fits, the claim taken as first in line when
// there is room for the whole line ahead of it as well (RoomForTheLine; aheadKnown false: the charges
// ahead are not known, and the claim keeps its place). why says what does not fit.
func Judge(b *tenancyv1alpha1.NamespaceBudget, counted, ahead []Charge, aheadKnown bool, charge Charge, position int, waited time.Duration) (Decision, string) {
	fits, why := Fits(b, counted, charge)
	if fits && aheadKnown && position > 1 && RoomForTheLine(b, counted, ahead, charge) {
		// Room for the whole line ahead too: going first keeps no older claim waiting.
		position = 1
	}
	return Decide(b, position, fits, waited), why
}

// Rejection is the Ready reason and message of a claim budget b refuses (Decide said Reject) after it
// waited waited; why says what does not fit.
func Rejection(b *tenancyv1alpha1.NamespaceBudget, waited time.Duration, why string) (reason, message string) {
	if b.Spec.MaxQueueWait != nil && waited >= b.Spec.MaxQueueWait.Duration {
		return tenancyv1alpha1.QueueWaitExceededReason, fmt.Sprintf("Waited %s for NamespaceBudget %s, longer than its maxQueueWait (%s): %s",
			waited.Round(time.Second), b.Name, b.Spec.MaxQueueWait.Duration, why)
	}
	return tenancyv1alpha1.BudgetExhaustedReason, fmt.Sprintf("NamespaceBudget %s is exhausted and refuses claims that do not fit (onExhausted: Reject): %s", b.Name, why)
}

// Candidate is a claim that holds a namespace, as an eviction sees it.
type Candidate struct {
	Claim *tenancyv1alpha1.NamespaceClaim
	// IdleTTL is whether the claim's class has an idle TTL (only those may be evicted).
	IdleTTL bool
}

// Victim is the claim an eviction for claim deletes: among candidates, the least recently active
// (status.lastActivity, else creation) claim of claim's own requester that holds a namespace, is not
// being deleted and whose class has an idle TTL; ties go to admission order. Nil when there is none:
// a budget never evicts another requester's claim.
func Victim(claim *tenancyv1alpha1.NamespaceClaim, candidates []Candidate) *tenancyv1alpha1.NamespaceClaim {
	requester := Requester(claim)
	var victim *tenancyv1alpha1.NamespaceClaim
	for _, c := range candidates {
		v := c.Claim
		if !c.IdleTTL || v.UID == claim.UID || v.Status.Namespace == "" || !v.DeletionTimestamp.IsZero() || Requester(v) != requester {
			continue
		}
		if victim == nil || lastActive(v).Before(lastActive(victim)) || (lastActive(v).Equal(lastActive(victim)) && Before(v, victim)) {
			victim = v
		}
	}
	return victim
}

// lastActive is when claim was last seen active: status.lastActivity, else its creation.
func lastActive(claim *tenancyv1alpha1.NamespaceClaim) time.Time {
	if claim.Status.LastActivity != nil {
		return claim.Status.LastActivity.Time
	}
	return claim.CreationTimestamp.Time
}

// QueuedMessage is a queued claim's Ready message: its position, the budget, and why it waits.
func QueuedMessage(budget string, position int, why string) string {
	if why == "" {
		why = "claims created before it are admitted first (StrictFIFO)"
	}
	return fmt.Sprintf("Waiting in NamespaceBudget %s at position %d: %s", budget, position, why)
}

// Held is the charge to budget b of namespace ns that nsclaim made for a claim (its owner proven by the
// caller): claim is the claim when it still exists (nil once deleted: it is judged by the requester
// namespace the namespace's labels name), classByLabel the classes by their label value, and
// requesterLabels the labels of the requester namespace. False when b does not cover it.
func Held(b *tenancyv1alpha1.NamespaceBudget, ns metav1.Object, claim *tenancyv1alpha1.NamespaceClaim,
	classByLabel map[string]*tenancyv1alpha1.NamespaceClass, requesterLabels map[string]string) (Charge, bool) {
	l := ns.GetLabels()
	if claim == nil {
		claim = &tenancyv1alpha1.NamespaceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: l[tenancyv1alpha1.ClaimNamespaceLabel]}}
	}
	if !Covers(b, claim, requesterLabels) {
		return Charge{}, false
	}
	return ChargeOf(claim, classByLabel[l[tenancyv1alpha1.ClassLabel]]), true
}

// ClassesByLabel indexes classes by the value of the class label of the namespaces they make.
func ClassesByLabel(classes []tenancyv1alpha1.NamespaceClass) map[string]*tenancyv1alpha1.NamespaceClass {
	out := make(map[string]*tenancyv1alpha1.NamespaceClass, len(classes))
	for i := range classes {
		out[claimpolicy.Label(classes[i].Name)] = &classes[i]
	}
	return out
}
