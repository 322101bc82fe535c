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
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
	policy "github.com/nsclaim/nsclaim-operator/internal/budget"
)

const (
	// requesterIndex indexes the namespaces nsclaim made by the requester namespace of their claim
	// (the ClaimNamespaceLabel): a budget reads the namespaces of the requesters it covers only.
	requesterIndex = "nsclaim.budget.requester"
	// creatorIndex indexes claims by their creator, as a budget's requesters.creators match it
	// (creatorKeys): a budget that covers creators reads their claims only.
	creatorIndex = "nsclaim.budget.creator"
)

// creatorKeys are the creatorIndex keys of a claim's creator: its username, and each extra value.
func creatorKeys(claim *tenancyv1alpha1.NamespaceClaim) []string {
	cr := claim.Spec.Creator
	if cr == nil {
		return nil
	}
	var keys []string
	if cr.Username != "" {
		keys = append(keys, creatorKey(tenancyv1alpha1.BudgetCreator{Username: cr.Username}))
	}
	for k, values := range cr.Extra {
		for _, v := range values {
			keys = append(keys, creatorKey(tenancyv1alpha1.BudgetCreator{ExtraKey: k, ExtraValue: v}))
		}
	}
	return keys
}

// creatorKey is the creatorIndex key a budget's creators entry m looks claims up by.
func creatorKey(m tenancyv1alpha1.BudgetCreator) string {
	if m.Username != "" {
		return "user:" + m.Username
	}
	return "extra:" + m.ExtraKey + "=" + m.ExtraValue
}

// IndexFields registers the field indexes the reconciler lists with.
func IndexFields(ctx context.Context, idx client.FieldIndexer) error {
	if err := idx.IndexField(ctx, &corev1.Namespace{}, requesterIndex, func(o client.Object) []string {
		if r := o.GetLabels()[tenancyv1alpha1.ClaimNamespaceLabel]; r != "" && o.GetLabels()[tenancyv1alpha1.ManagedByLabel] == tenancyv1alpha1.ManagedByValue {
			return []string{r}
		}
		return nil
	}); err != nil {
		return fmt.Errorf("indexing namespaces by requester: %w", err)
	}
	if err := idx.IndexField(ctx, &tenancyv1alpha1.NamespaceClaim{}, creatorIndex, func(o client.Object) []string {
		return creatorKeys(o.(*tenancyv1alpha1.NamespaceClaim))
	}); err != nil {
		return fmt.Errorf("indexing claims by creator: %w", err)
	}
	return nil
}

// gathered enqueues, statusInterval after an event of a claim or a namespace, the budgets that cover
// it (budgetsOf); the work queue keeps one entry per budget, so the events of an interval make one
// reconcile of each budget they concern, and a team's burst leaves other teams' budgets alone.
func (r *BudgetReconciler) gathered() handler.EventHandler {
	add := func(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request], objs ...client.Object) {
		for _, o := range objs {
			for _, req := range r.budgetsOf(ctx, o) {
				q.AddAfter(req, statusInterval)
			}
		}
	}
	return handler.Funcs{
		CreateFunc: func(ctx context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			add(ctx, q, e.Object)
		},
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			add(ctx, q, e.ObjectOld, e.ObjectNew)
		},
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			add(ctx, q, e.Object)
		},
	}
}

// budgetsOf are the budgets whose status a claim or a namespace nsclaim made may change: those that
// cover the claim (for a namespace, its claim as the cache has it, else the requester namespace its
// labels name: what Reconcile charges it by), by policy.Covers, sorted by name.
func (r *BudgetReconciler) budgetsOf(ctx context.Context, obj client.Object) []reconcile.Request {
	claim, ok := obj.(*tenancyv1alpha1.NamespaceClaim)
	if !ok {
		claim = r.claimOfNamespace(ctx, obj)
		if claim == nil {
			return nil
		}
	}
	budgets := &tenancyv1alpha1.NamespaceBudgetList{}
	if err := r.List(ctx, budgets, client.UnsafeDisableDeepCopy); err != nil || len(budgets.Items) == 0 {
		return nil
	}
	requesterLabels := r.labelsOf(ctx, claim.Namespace)
	var out []reconcile.Request
	for i := range budgets.Items {
		if policy.Covers(&budgets.Items[i], claim, requesterLabels) {
			out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Name: budgets.Items[i].Name}})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// claimOfNamespace is the claim a namespace nsclaim made is charged by: its claim from the cache when
// it is there with the UID the namespace names, else a claim of the requester namespace its labels
// name (how Reconcile charges a namespace whose claim is gone). Nil for a namespace of no requester.
func (r *BudgetReconciler) claimOfNamespace(ctx context.Context, ns client.Object) *tenancyv1alpha1.NamespaceClaim {
	l, a := ns.GetLabels(), ns.GetAnnotations()
	requester := l[tenancyv1alpha1.ClaimNamespaceLabel]
	if requester == "" {
		return nil
	}
	if name := a[tenancyv1alpha1.ClaimNameAnnotation]; name != "" {
		claim := &tenancyv1alpha1.NamespaceClaim{}
		if err := r.Get(ctx, client.ObjectKey{Namespace: requester, Name: name}, claim, client.UnsafeDisableDeepCopy); err == nil &&
			string(claim.UID) == l[tenancyv1alpha1.ClaimUIDLabel] {
			return claim
		}
	}
	stub := &tenancyv1alpha1.NamespaceClaim{}
	stub.Namespace = requester
	return stub
}

// labelsOf are the labels of namespace name in the cache (nil when it is not there).
func (r *BudgetReconciler) labelsOf(ctx context.Context, name string) map[string]string {
	ns := &corev1.Namespace{}
	if err := r.Get(ctx, client.ObjectKey{Name: name}, ns, client.UnsafeDisableDeepCopy); err != nil {
		return nil
	}
	return ns.Labels
}
