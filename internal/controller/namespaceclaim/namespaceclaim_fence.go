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
	"context"

	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
	"github.com/nsclaim/nsclaim-operator/internal/claimpolicy"
	"github.com/nsclaim/nsclaim-operator/internal/claimstatus"
	"github.com/nsclaim/nsclaim-operator/internal/fence/instruction"
)

// FenceGate tells whether the admission fence allows provisioning. nil: not required.
type FenceGate interface {
	// FenceProblem returns checked=false until the first fence check completed, and a non-empty
	// problem when the fence is missing or altered.
	FenceProblem() (checked bool, problem string)
}

// FenceIntactEvents is a FenceGate that also says when the fence turns intact: each event makes every
// claim held by the fence go on at once, instead of at its next poll (fencePoll).
type FenceIntactEvents interface {
	FenceIntactEvents() <-chan event.GenericEvent
}

// FenceCurrent is a FenceGate that also tells whether the fence in force is this release's own, not the
// previous release's (accepted during an upgrade). Sleep and wake need it: only this release's fence
// keeps the operator's writes of scale subresources and CronJobs inside the namespaces it created.
type FenceCurrent interface {
	FenceIsCurrent() bool
}

// fenceCoversSleep reports whether the sleep phase may write: the fence is not required (the operator
// runs with RBAC as its only limit, by the admin's choice), or this release's fence is intact.
func (r *NamespaceClaimReconciler) fenceCoversSleep() bool {
	if r.Fence == nil {
		return true
	}
	if c, ok := r.Fence.(FenceCurrent); ok {
		return c.FenceIsCurrent()
	}
	checked, problem := r.Fence.FenceProblem()
	return checked && problem == ""
}

// reconcileFence holds the claim back while the admission fence is not in place: a claim that was
// Ready waits, status unchanged, for the fence's first check (fencePending); any other is refused.
func (r *NamespaceClaimReconciler) reconcileFence(_ context.Context, s *claimScope) error {
	if ref := r.fenceRefusal(); ref != nil {
		if waitForFence(ref, s.claim) {
			s.fencePending = true
			return nil
		}
		s.refusal = ref
	}
	return nil
}

// fenceHeldClaims maps a fence event to the claims held by the fence (Ready reason FenceNotIntact, or
// Pending), read from the cache.
func (r *NamespaceClaimReconciler) fenceHeldClaims(ctx context.Context, _ client.Object) []reconcile.Request {
	claims := &tenancyv1alpha1.NamespaceClaimList{}
	if err := r.List(ctx, claims); err != nil {
		logf.FromContext(ctx).Error(err, "Listing NamespaceClaims held by the admission fence")
		return nil
	}
	var out []reconcile.Request
	for i := range claims.Items {
		ready := meta.FindStatusCondition(claims.Items[i].Status.Conditions, tenancyv1alpha1.ReadyCondition)
		if ready == nil || ready.Reason == tenancyv1alpha1.FenceNotIntactReason || ready.Reason == tenancyv1alpha1.PendingReason {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&claims.Items[i])})
		}
	}
	return out
}

// fenceRefusal holds provisioning back while the admission fence is required and not known to be
// intact. Expiry and deletion never wait for it: they only ever remove what nsclaim made.
func (r *NamespaceClaimReconciler) fenceRefusal() *claimpolicy.Refusal {
	if r.Fence == nil {
		return nil
	}
	return fenceDecision(r.Fence.FenceProblem())
}

// fenceDecision turns a fence check into a refusal: Pending before the first check, FenceNotIntact
// while the fence is missing or altered, nil when it is intact.
// waitForFence reports whether a claim held back by the fence should keep its status while it waits:
// a Ready claim that the operator looks at before its first check of the fence (it just started, after
// an upgrade or a restart) stays Ready, and is looked at again shortly, instead of flapping to Pending.
// Nothing is created, repaired or issued for it until the check is done.
func waitForFence(ref *claimpolicy.Refusal, claim *tenancyv1alpha1.NamespaceClaim) bool {
	return ref.Reason == tenancyv1alpha1.PendingReason && claimstatus.ReadyFor(claim)
}

func fenceDecision(checked bool, problem string) *claimpolicy.Refusal {
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
