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

// Package fencegate holds the claim reconciler's fence phase and the gate it reads: nothing is
// provisioned while the admission fence is not in place (Reconcile over Claim, the part of a reconcile
// it reads and records), and the sleep phase writes only under this release's own fence (CoversSleep).
package fencegate

import (
	"sigs.k8s.io/controller-runtime/pkg/event"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
	"github.com/nsclaim/nsclaim-operator/internal/claimpolicy"
	"github.com/nsclaim/nsclaim-operator/internal/claimstatus"
	"github.com/nsclaim/nsclaim-operator/internal/fence/instruction"
)

// Gate tells whether the admission fence allows provisioning. nil: not required.
type Gate interface {
	// FenceProblem returns checked=false until the first fence check completed, and a non-empty
	// problem when the fence is missing or altered.
	FenceProblem() (checked bool, problem string)
}

// IntactEvents is a Gate that also says when the fence turns intact: each event makes every
// claim held by the fence go on at once, instead of at its next poll.
type IntactEvents interface {
	FenceIntactEvents() <-chan event.GenericEvent
}

// Current is a Gate that also tells whether the fence in force is this release's own, not the
// previous release's (accepted during an upgrade). Sleep and wake need it: only this release's fence
// keeps the operator's writes of scale subresources and CronJobs inside the namespaces it created.
type Current interface {
	FenceIsCurrent() bool
}

// CoversSleep reports whether the sleep phase may write: the fence is not required (g is nil: the
// operator runs with RBAC as its only limit, by the admin's choice), or this release's fence is intact.
func CoversSleep(g Gate) bool {
	if g == nil {
		return true
	}
	if c, ok := g.(Current); ok {
		return c.FenceIsCurrent()
	}
	checked, problem := g.FenceProblem()
	return checked && problem == ""
}

// Claim is the part of a claim's reconcile the fence phase reads and writes.
type Claim struct {
	Claim *tenancyv1alpha1.NamespaceClaim
	// FencePending is set when a Ready claim waits, status unchanged, for the first check of the fence.
	FencePending bool
	// Refusal is the claim's refusal so far; the fence's replaces it.
	Refusal *claimpolicy.Refusal
}

// Reconcile holds the claim back while the admission fence is not in place: a claim that was
// Ready waits, status unchanged, for the fence's first check (FencePending); any other is refused.
func Reconcile(g Gate, s *Claim) {
	if ref := Refusal(g); ref != nil {
		if WaitFor(ref, s.Claim) {
			s.FencePending = true
			return
		}
		s.Refusal = ref
	}
}

// Refusal holds provisioning back while the admission fence is required and not known to be
// intact. Expiry and deletion never wait for it: they only ever remove what nsclaim made.
func Refusal(g Gate) *claimpolicy.Refusal {
	if g == nil {
		return nil
	}
	return Decision(g.FenceProblem())
}

// WaitFor reports whether a claim held back by the fence should keep its status while it waits:
// a Ready claim that the operator looks at before its first check of the fence (it just started, after
// an upgrade or a restart) stays Ready, and is looked at again shortly, instead of flapping to Pending.
// Nothing is created, repaired or issued for it until the check is done.
func WaitFor(ref *claimpolicy.Refusal, claim *tenancyv1alpha1.NamespaceClaim) bool {
	return ref.Reason == tenancyv1alpha1.PendingReason && claimstatus.ReadyFor(claim)
}

// Decision turns a fence check into a refusal: Pending before the first check, FenceNotIntact
// while the fence is missing or altered, nil when it is intact.
func Decision(checked bool, problem string) *claimpolicy.Refusal {
	switch {
	case !checked:
		return &claimpolicy.Refusal{Reason: tenancyv1alpha1.PendingReason, Message: "Waiting for the operator's first check of the admission fence"}
	case problem != "":
		return &claimpolicy.Refusal{Reason: tenancyv1alpha1.FenceNotIntactReason, Message: "The admission fence (the ValidatingAdmissionPolicies of the release's fence.yaml) is missing or altered: " +
			problem + ". Nothing to change on the claim: it goes on by itself within seconds once a cluster admin acts: " + instruction.Instruction(instruction.PartValidating, "") +
			" (docs/troubleshooting.md), or opts out with NSCLAIM_REQUIRE_FENCE=false"}
	}
	return nil
}
