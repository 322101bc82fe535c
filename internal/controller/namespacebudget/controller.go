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

package namespacebudget

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
	policy "github.com/nsclaim/nsclaim-operator/internal/budget"
	"github.com/nsclaim/nsclaim-operator/internal/claimpolicy"
	"github.com/nsclaim/nsclaim-operator/internal/controller/namespaceclaim/budget"
	"github.com/nsclaim/nsclaim-operator/internal/ownership"
)

// +kubebuilder:rbac:groups=tenancy.nsclaim.dev,resources=namespacebudgets,verbs=get;list;watch
// +kubebuilder:rbac:groups=tenancy.nsclaim.dev,resources=namespacebudgets/status,verbs=get;update;patch

// BudgetReconciler writes the status of NamespaceBudgets from the cache.
type BudgetReconciler struct {
	client.Client
	// Clock is the time source of the conditions' transitions; nil is the real clock.
	Clock clock.PassiveClock
	// Ownership proves that nsclaim made a namespace for the claim its marks name: a namespace that
	// carries a claim's labels without nsclaim's record is not counted (labels are what another
	// identity could write). Nil counts nothing.
	Ownership *ownership.Verifier
}

// Reconcile derives one budget's status (internal/budget.Status) from the namespaces nsclaim made for
// the claims it covers and the claims that wait for it, and patches it once, only when it changed.
// A namespace is counted only when nsclaim's ownership record proves its claim's marks, as the
// admission ledger counts it: the status reports, the ledger enforces.
func (r *BudgetReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	b := &tenancyv1alpha1.NamespaceBudget{}
	if err := r.Get(ctx, req.NamespacedName, b); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	classes := &tenancyv1alpha1.NamespaceClassList{}
	if err := r.List(ctx, classes, client.UnsafeDisableDeepCopy); err != nil {
		return ctrl.Result{}, fmt.Errorf("listing NamespaceClasses: %w", err)
	}
	in, err := r.read(ctx, b)
	if err != nil {
		return ctrl.Result{}, err
	}
	var queued []*tenancyv1alpha1.NamespaceClaim
	coverage := policy.CoverageOf(b)
	for _, c := range in.claims {
		if budget.Queued(c) && c.DeletionTimestamp.IsZero() && coverage.Covers(c, in.requesters[c.Namespace]) {
			queued = append(queued, c)
		}
	}
	byLabel := policy.ClassesByLabel(classes.Items)
	var allocated []policy.Charge
	for _, ns := range in.namespaces {
		uid, owned, err := r.Ownership.ClaimOf(ctx, ns)
		if err != nil {
			return ctrl.Result{}, err
		} else if !owned {
			continue
		}
		requester := ns.Labels[tenancyv1alpha1.ClaimNamespaceLabel]
		if charge, ok := policy.Held(b, ns, in.claims[uid], byLabel, in.requesters[requester]); ok {
			allocated = append(allocated, charge)
		}
	}
	st := policy.Status(b, allocated, queued, r.now())
	if equality.Semantic.DeepEqual(sameTransitions(st, b.Status), b.Status) {
		return ctrl.Result{}, nil
	}
	patch := client.MergeFrom(b.DeepCopy())
	b.Status = st
	if err := r.Status().Patch(ctx, b, patch); err != nil {
		return ctrl.Result{}, fmt.Errorf("patching the status of NamespaceBudget %s: %w", b.Name, err)
	}
	return ctrl.Result{}, nil
}

func (r *BudgetReconciler) now() time.Time {
	if r.Clock == nil {
		return time.Now()
	}
	return r.Clock.Now()
}

// sameTransitions is st with the transition times of old's conditions where nothing else changed, so
// that comparing it with old tells a real change.
func sameTransitions(st, old tenancyv1alpha1.NamespaceBudgetStatus) tenancyv1alpha1.NamespaceBudgetStatus {
	out := st
	out.Conditions = append(out.Conditions[:0:0], st.Conditions...)
	for i := range out.Conditions {
		for _, o := range old.Conditions {
			if o.Type == out.Conditions[i].Type && o.Status == out.Conditions[i].Status {
				out.Conditions[i].LastTransitionTime = o.LastTransitionTime
			}
		}
	}
	return out
}

// statusInterval is how long the events of claims and namespaces are gathered before the budgets'
// statuses are derived again: a burst of hundreds of claims costs a few reconciles of each budget (each
// reads every claim and namespace from the cache), not one per event. The status is a report: the
// admission ledger enforces the budget at once.
const statusInterval = time.Second

// SetupWithManager registers the field indexes (IndexFields) and watches budgets (their spec), claims
// and the namespaces nsclaim made: a claim's or namespace's event reaches the budgets that cover it
// after statusInterval, gathered with the others of that interval (gathered).
func (r *BudgetReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if err := IndexFields(context.Background(), mgr.GetFieldIndexer()); err != nil {
		return err
	}
	managed := builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool { return claimpolicy.IsManaged(o) }))
	return ctrl.NewControllerManagedBy(mgr).
		For(&tenancyv1alpha1.NamespaceBudget{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&tenancyv1alpha1.NamespaceClaim{}, r.gathered()).
		Watches(&corev1.Namespace{}, r.gathered(), managed).
		Named("namespacebudget").
		Complete(r)
}
