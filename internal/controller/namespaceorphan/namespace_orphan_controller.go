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

package namespaceorphan

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
	"github.com/nsclaim/nsclaim-operator/internal/claimpolicy"
	"github.com/nsclaim/nsclaim-operator/internal/monitoring"
	"github.com/nsclaim/nsclaim-operator/internal/ownership"
)

// OrphanReconciler deletes a namespace that carries nsclaim's ownership marks when the claim the marks
// name no longer exists: its finalizer was removed by someone else and it was deleted, it was deleted
// while the operator was down, or the operator crashed between steps. "No longer exists" is the API
// server's answer, never only the cache's: a claim missing from a lagging cache keeps its namespace.
// It never touches a namespace without the marks, nor one whose marks nsclaim's ownership record does
// not prove (someone else marked it: it is reported, never deleted).
type OrphanReconciler struct {
	client.Client
	// Ownership proves that nsclaim made the namespace for the claim its marks name.
	Ownership *ownership.Verifier
	// APIReader confirms, at the API server, that a claim is gone.
	APIReader client.Reader
	Recorder  recorder.EventRecorder
}

// Reconcile checks one namespace.
func (r *OrphanReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	ns := &corev1.Namespace{}
	if err := r.Get(ctx, req.NamespacedName, ns); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !ns.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	owner, ok := claimpolicy.OwnerFromMarks(ns)
	if !ok {
		// nsclaim never makes a namespace whose marks name no whole claim, other than a pool's: someone
		// else put its managed-by label there (an admission fence trusts that label). Reported, never
		// touched.
		if !claimpolicy.IsPooled(ns) {
			r.Ownership.Refused(ctx, ns, nil, monitoring.ActionDelete)
		}
		return ctrl.Result{}, nil
	}
	key := types.NamespacedName{Namespace: owner.Namespace, Name: owner.Name}
	claim := &tenancyv1alpha1.NamespaceClaim{}
	if err := r.Get(ctx, key, claim); err == nil && string(claim.UID) == owner.UID {
		return ctrl.Result{}, nil
	}
	// The cache says the claim is gone or replaced: only the API server's word counts.
	err := r.APIReader.Get(ctx, key, claim)
	switch {
	case err == nil && string(claim.UID) == owner.UID:
		return ctrl.Result{}, nil
	case err != nil && !apierrors.IsNotFound(err):
		return ctrl.Result{}, fmt.Errorf("reading NamespaceClaim %s: %w", key, err)
	}
	owned, err := r.Ownership.Owns(ctx, ns, ownership.Claim(owner.Namespace, owner.Name, owner.UID))
	if err != nil {
		return ctrl.Result{}, err
	}
	if !owned {
		r.Ownership.Refused(ctx, ns, nil, monitoring.ActionDelete)
		return ctrl.Result{}, nil
	}
	uid, rv := ns.UID, ns.ResourceVersion
	if err := r.Delete(ctx, ns, client.Preconditions{UID: &uid, ResourceVersion: &rv}); err != nil {
		if apierrors.IsNotFound(err) {
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, fmt.Errorf("deleting orphaned namespace %s: %w", ns.Name, err)
	}
	monitoring.OrphanDeleted()
	logf.FromContext(ctx).Info("Deleted a namespace whose claim no longer exists", "claimNamespace", klog.KObj(ns), "claim", key, "claimUID", owner.UID)
	if r.Recorder != nil {
		r.Recorder.Eventf(ns, nil, corev1.EventTypeWarning, tenancyv1alpha1.OrphanedNamespaceReason, "Delete",
			"NamespaceClaim %s (UID %s) no longer exists; its namespace is deleted", key, owner.UID)
	}
	return ctrl.Result{}, nil
}

// SetupWithManager watches the namespaces nsclaim made (all of them at start, so orphans made while
// the operator was down are found) and the deletion of claims, which maps to their namespaces.
func (r *OrphanReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&corev1.Namespace{}, builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool { return claimpolicy.IsManaged(o) }))).
		Watches(&tenancyv1alpha1.NamespaceClaim{}, handler.EnqueueRequestsFromMapFunc(r.claimToNamespaces),
			builder.WithPredicates(predicate.Funcs{
				CreateFunc:  func(event.CreateEvent) bool { return false },
				UpdateFunc:  func(event.UpdateEvent) bool { return false },
				GenericFunc: func(event.GenericEvent) bool { return false },
			})).
		Named("orphan").
		Complete(r)
}

// claimToNamespaces maps a deleted claim to the namespaces that carry its UID.
func (r *OrphanReconciler) claimToNamespaces(ctx context.Context, obj client.Object) []reconcile.Request {
	var reqs []reconcile.Request
	if name := obj.(*tenancyv1alpha1.NamespaceClaim).Status.Namespace; name != "" {
		reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Name: name}})
	}
	list := &corev1.NamespaceList{}
	if err := r.List(ctx, list, client.MatchingLabels{tenancyv1alpha1.ClaimUIDLabel: string(obj.GetUID())}); err == nil {
		for _, ns := range list.Items {
			reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Name: ns.Name}})
		}
	}
	return reqs
}
