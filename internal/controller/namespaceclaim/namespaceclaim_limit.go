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
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
	"github.com/nsclaim/nsclaim-operator/internal/admission"
	"github.com/nsclaim/nsclaim-operator/internal/claimpolicy"
	"github.com/nsclaim/nsclaim-operator/internal/monitoring"
)

// The class's maxClaimsPerNamespace is admitted by the leader's ledger (internal/admission, which says
// why it holds under races, restarts and leader changes): a claim that holds no namespace yet reserves
// its slot under the ledger's short lock, then creates or is handed its namespace with no lock held,
// so the claims of one requester namespace are made in parallel. The slot is held once the namespace
// exists (holdLimit), given back when the reconcile ends without making it (leaveLimit), and freed
// when the namespace is seen terminating or gone (limitReleases, which also wakes the claims waiting
// for a slot).

// enterLimit admits, for a claim of class that does not hold a namespace yet (held is false) and whose
// class limits the claims per namespace, the claim to its requester namespace's limit, and returns the
// limit's refusal (ClaimLimitExceeded) or nil. An admitted claim's slot is s.limitSlot. The check is
// claimpolicy.CheckClaimLimit: the claim ranks among the claims of its namespace (the cache) and every
// claim the ledger counts. Any other claim is not ranked: nil, nil.
func (r *NamespaceClaimReconciler) enterLimit(ctx context.Context, s *claimScope, class *tenancyv1alpha1.NamespaceClass, held bool) (*claimpolicy.Refusal, error) {
	limit := class.Spec.Access.MaxClaimsPerNamespace
	if limit <= 0 || held {
		return nil, nil
	}
	ns := s.claim.Namespace
	list := &tenancyv1alpha1.NamespaceClaimList{}
	if err := r.List(ctx, list, client.InNamespace(ns)); err != nil {
		return nil, fmt.Errorf("listing claims in %s: %w", ns, err)
	}
	var refusal *claimpolicy.Refusal
	check := func(counted []types.UID) bool {
		refusal = claimpolicy.CheckClaimLimit(s.claim, class.Name, limit, list.Items, counted)
		return refusal == nil
	}
	live := func(ctx context.Context) ([]admission.Holding, error) { return r.liveLimitHolders(ctx, ns, class.Name) }
	slot, err := r.limits.Admit(ctx, limitKey(ns, class.Name), s.claim.UID, check, live)
	if err != nil {
		return nil, err
	}
	s.limitSlot = slot
	return refusal, nil
}

// limitKey is a claim limit: one class in one requester namespace, as the namespaces made for it are
// labelled.
func limitKey(requesterNamespace, class string) admission.Key {
	return admission.Key{Namespace: requesterNamespace, Class: claimpolicy.Label(class)}
}

// holdLimit records that the claim's admitted slot is held by namespace, which exists (or may: a write
// whose outcome is unknown, then namespace may be ""). A no-op for a claim not admitted in this reconcile.
func (s *claimScope) holdLimit(namespace string) {
	s.limitSlot.Hold(namespace)
	s.budgetSlots.Hold(namespace)
}

// leaveLimit gives back the slot this reconcile reserved and did not hold (its namespace was not made).
func (s *claimScope) leaveLimit() {
	s.limitSlot.Release()
	s.budgetSlots.Release()
}

// settleLimit holds or gives back the slot after the write that makes or hands out namespace returned
// err: given back only when the API server certainly made nothing.
func (s *claimScope) settleLimit(err error, namespace string) {
	if err != nil && madeNothing(err) {
		s.leaveLimit()
		return
	}
	s.holdLimit(namespace)
}

// madeNothing reports whether a failed write certainly changed nothing (the API server refused it). A
// timeout or a lost connection may have made the object: the slot stays counted until a live list
// says otherwise.
func madeNothing(err error) bool {
	return apierrors.IsConflict(err) || apierrors.IsInvalid(err) || apierrors.IsForbidden(err) ||
		apierrors.IsBadRequest(err) || apierrors.IsNotFound(err) || apierrors.IsUnauthorized(err)
}

// limitReleases frees the slot of a namespace nsclaim made for a limited claim once it is terminating or
// gone, and wakes the claims of its requester namespace and class that wait for a slot.
func (r *NamespaceClaimReconciler) limitReleases() handler.EventHandler {
	gone := func(ctx context.Context, obj client.Object, q workqueue.TypedRateLimitingInterface[ctrl.Request]) {
		labels := obj.GetLabels()
		uid, requester := labels[tenancyv1alpha1.ClaimUIDLabel], labels[tenancyv1alpha1.ClaimNamespaceLabel]
		if uid == "" || requester == "" {
			return
		}
		key := admission.Key{Namespace: requester, Class: labels[tenancyv1alpha1.ClassLabel]}
		r.limits.Gone(key, types.UID(uid), obj.GetName())
		claims := &tenancyv1alpha1.NamespaceClaimList{}
		if err := r.List(ctx, claims, client.InNamespace(requester)); err != nil {
			return
		}
		for _, c := range limitWaiters(claims.Items, key.Class) {
			q.Add(requestFor(c.Namespace, c.Name))
		}
	}
	return handler.Funcs{
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[ctrl.Request]) {
			if e.ObjectOld.GetDeletionTimestamp().IsZero() && !e.ObjectNew.GetDeletionTimestamp().IsZero() {
				gone(ctx, e.ObjectNew, q)
			}
		},
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[ctrl.Request]) {
			if e.Object != nil {
				gone(ctx, e.Object, q)
			}
		},
	}
}

// limitWaiters are the claims among claims, of the class labelled class, that hold no namespace and
// are not being deleted: those a freed slot may admit.
func limitWaiters(claims []tenancyv1alpha1.NamespaceClaim, class string) []*tenancyv1alpha1.NamespaceClaim {
	var out []*tenancyv1alpha1.NamespaceClaim
	for i := range claims {
		c := &claims[i]
		if c.Status.Namespace == "" && c.DeletionTimestamp.IsZero() && claimpolicy.Label(claimpolicy.ClassOf(c)) == class {
			out = append(out, c)
		}
	}
	return out
}

// liveLimitHolders returns the claims of requesterNamespace that own a namespace of class which the API
// server has and which is not being deleted, with that namespace. Owning is nsclaim's record
// (internal/ownership), not the labels the list selects by: a namespace someone else marked for a
// claim is not counted. It reads the API server, not the cache (metadata only): the cache may not have
// seen a namespace created an instant ago.
func (r *NamespaceClaimReconciler) liveLimitHolders(ctx context.Context, requesterNamespace, class string) ([]admission.Holding, error) {
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("NamespaceList"))
	if err := r.APIReader.List(ctx, list, client.MatchingLabels{
		tenancyv1alpha1.ManagedByLabel:      tenancyv1alpha1.ManagedByValue,
		tenancyv1alpha1.ClaimNamespaceLabel: requesterNamespace,
		tenancyv1alpha1.ClassLabel:          claimpolicy.Label(class),
	}); err != nil {
		return nil, fmt.Errorf("listing the namespaces of class %s held from %s: %w", class, requesterNamespace, err)
	}
	var holdings []admission.Holding
	for i := range list.Items {
		ns := &list.Items[i]
		if !ns.DeletionTimestamp.IsZero() {
			continue
		}
		uid, owned, err := r.ownedByClaim(ctx, ns)
		if err != nil {
			return nil, err
		}
		if owned {
			holdings = append(holdings, admission.Holding{Claim: uid, Namespace: ns.Name})
		}
	}
	return holdings, nil
}

// ownedByClaim returns the claim that owns ns by nsclaim's record (ownership.Verifier.ClaimOf), and
// whether one does: a namespace that carries a claim's UID label without the record is reported
// (counted with ActionCount) and not counted.
func (r *NamespaceClaimReconciler) ownedByClaim(ctx context.Context, ns *metav1.PartialObjectMetadata) (types.UID, bool, error) {
	uid, owned, err := r.Ownership.ClaimOf(ctx, ns)
	if err != nil || owned || ns.Labels[tenancyv1alpha1.ClaimUIDLabel] == "" {
		return uid, owned, err
	}
	r.Ownership.Refused(ctx, ns, nil, monitoring.ActionCount)
	return "", false, nil
}
