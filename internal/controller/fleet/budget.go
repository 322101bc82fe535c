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

package fleet

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
	policy "github.com/nsclaim/nsclaim-operator/internal/budget"
	"github.com/nsclaim/nsclaim-operator/internal/claimpolicy"
)

// NamespaceBudgets on a hub: one allocation ledger for the fleet. A hub claim is charged to the budgets
// on the hub that cover it once it is placed (status.cluster, or this process's ledger of assignments
// the cache does not show yet): the very counts placement uses, whatever member holds it. A claim not
// placed yet is admitted to every budget that covers it before a member is chosen (the hub admits,
// then places); the decisions are internal/budget's, as on a single cluster.

// +kubebuilder:rbac:groups=tenancy.nsclaim.dev,resources=namespacebudgets,verbs=get;list;watch

// budgetLine is what the hub knows of one budget's line for a claim: the charges of the claims placed
// under it (the claim's own excluded) and those of the claims waiting before it, in admission order.
type budgetLine struct {
	counted []policy.Charge
	ahead   []policy.Charge
	// position is the claim's place among the waiting claims the budget covers (1: first).
	position int
}

// budgetVerdict is what budget b does with claim, charged charge, given its line at now: admitted
// (empty reason), or the Ready reason and message of a claim that waits (Queued) or is refused
// (BudgetExhausted, QueueWaitExceeded). EvictIdle waits on a hub: the hub deletes no claim to make room.
func budgetVerdict(b *tenancyv1alpha1.NamespaceBudget, claim *tenancyv1alpha1.NamespaceClaim, charge policy.Charge, line budgetLine, now time.Time) (string, string) {
	waited := now.Sub(claim.CreationTimestamp.Time)
	switch d, why := policy.Judge(b, line.counted, line.ahead, true, charge, line.position, waited); d {
	case policy.Admit:
		return "", ""
	case policy.Reject:
		return policy.Rejection(b, waited, why)
	default:
		return tenancyv1alpha1.QueuedReason, policy.QueuedMessage(b.Name, line.position, why)
	}
}

// waitsForPlacement reports whether a hub claim is in line: not placed, not being deleted, and not
// refused (a claim no budget would admit must not hold the line).
func waitsForPlacement(c *tenancyv1alpha1.NamespaceClaim, placed map[types.UID]assignment) bool {
	if _, ok := placed[c.UID]; ok || c.Status.Cluster != "" || !c.DeletionTimestamp.IsZero() {
		return false
	}
	ready := meta.FindStatusCondition(c.Status.Conditions, tenancyv1alpha1.ReadyCondition)
	return ready == nil || !tenancyv1alpha1.IsRefusalReason(ready.Reason)
}

// budgetGate admits claim of class to every NamespaceBudget on the hub that covers it, in name order;
// at the first that does not, it returns that budget's reason and message. claims are the hub's claims
// (the cache) and placed the assignments placement counts. Called under placeMu, so two claims are
// never admitted against the same room.
func (r *Reconciler) budgetGate(ctx context.Context, claim *tenancyv1alpha1.NamespaceClaim, class *tenancyv1alpha1.NamespaceClass,
	claims []tenancyv1alpha1.NamespaceClaim, placed map[types.UID]assignment, classes []tenancyv1alpha1.NamespaceClass) (string, string, error) {
	var budgets tenancyv1alpha1.NamespaceBudgetList
	if err := r.Client.List(ctx, &budgets); err != nil {
		return "", "", fmt.Errorf("listing NamespaceBudgets: %w", err)
	}
	if len(budgets.Items) == 0 {
		return "", "", nil
	}
	labels := map[string]map[string]string{}
	requesterLabels := func(ns string) map[string]string {
		if l, ok := labels[ns]; ok {
			return l
		}
		n := &corev1.Namespace{}
		if err := r.Client.Get(ctx, ctrl.ObjectKey{Name: ns}, n); err != nil {
			n.Labels = nil
		}
		labels[ns] = n.Labels
		return n.Labels
	}
	byName := map[string]*tenancyv1alpha1.NamespaceClass{}
	for i := range classes {
		byName[classes[i].Name] = &classes[i]
	}
	charge := policy.ChargeOf(claim, class)
	for _, b := range policy.Covering(budgets.Items, claim, requesterLabels(claim.Namespace)) {
		line := budgetLine{position: 1}
		var waiting []*tenancyv1alpha1.NamespaceClaim
		for i := range claims {
			c := &claims[i]
			if c.UID == claim.UID || !policy.Covers(b, c, requesterLabels(c.Namespace)) {
				continue
			}
			if a, ok := placed[c.UID]; ok {
				line.counted = append(line.counted, policy.ChargeOf(c, byName[a.class]))
			} else if waitsForPlacement(c, placed) && policy.Before(c, claim) {
				waiting = append(waiting, c)
				line.ahead = append(line.ahead, policy.ChargeOf(c, byName[claimpolicy.ClassOf(c)]))
			}
		}
		line.position = policy.Position(claim, waiting)
		if reason, msg := budgetVerdict(b, claim, charge, line, r.Clock.Now()); reason != "" {
			return reason, msg, nil
		}
	}
	return "", "", nil
}
