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
	"context"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
	"github.com/nsclaim/nsclaim-operator/internal/admission"
)

// Releases is the namespace watch of the budgets, event-driven so a queued claim goes on within a
// moment of a namespace being gone: a deleted namespace nsclaim made for a claim frees its charge in
// every budget (admission.Ledger.GoneFromBudgets; a Terminating one stays charged), and the creation or
// deletion of such a namespace wakes the claims waiting for a budget (the next in line may fit now, or
// be first in line).
func Releases(reader client.Reader, ledger *admission.Ledger) handler.EventHandler {
	wake := func(ctx context.Context, q workqueue.TypedRateLimitingInterface[ctrl.Request]) {
		for _, req := range QueuedClaims(ctx, reader) {
			q.Add(req)
		}
	}
	claimOf := func(o client.Object) string { return o.GetLabels()[tenancyv1alpha1.ClaimUIDLabel] }
	return handler.Funcs{
		CreateFunc: func(ctx context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[ctrl.Request]) {
			if claimOf(e.Object) != "" {
				wake(ctx, q)
			}
		},
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[ctrl.Request]) {
			if e.Object == nil || claimOf(e.Object) == "" {
				return
			}
			ledger.GoneFromBudgets(types.UID(claimOf(e.Object)), e.Object.GetName())
			wake(ctx, q)
		},
	}
}

// Budgets is the watch of NamespaceBudgets: a budget made, changed or deleted wakes the claims waiting
// for one.
func Budgets(reader client.Reader) handler.EventHandler {
	return handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, _ client.Object) []ctrl.Request {
		return QueuedClaims(ctx, reader)
	})
}

// QueuedClaims are the requests of the claims, in the cache, that wait for a budget (Queued). With no
// budget there is no queue, and the claims are not listed (a namespace event costs nothing then).
func QueuedClaims(ctx context.Context, reader client.Reader) []ctrl.Request {
	budgets := &tenancyv1alpha1.NamespaceBudgetList{}
	if err := reader.List(ctx, budgets, client.Limit(1), client.UnsafeDisableDeepCopy); err != nil || len(budgets.Items) == 0 {
		return nil
	}
	claims := &tenancyv1alpha1.NamespaceClaimList{}
	// Read-only: the cached claims themselves, not a deep copy of each at every namespace event.
	if err := reader.List(ctx, claims, client.UnsafeDisableDeepCopy); err != nil {
		return nil
	}
	var out []ctrl.Request
	for i := range claims.Items {
		if c := &claims.Items[i]; Queued(c) && c.DeletionTimestamp.IsZero() {
			out = append(out, ctrl.Request{NamespacedName: types.NamespacedName{Namespace: c.Namespace, Name: c.Name}})
		}
	}
	return out
}
