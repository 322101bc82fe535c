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

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
	"github.com/nsclaim/nsclaim-operator/internal/claimpolicy"
)

// classIndex indexes claims by the class they use or would use ("" for the default class).
const classIndex = "nsclaim.classOf"

// indexClaims registers the field indexes the map functions use.
func indexClaims(ctx context.Context, idx client.FieldIndexer) error {
	return idx.IndexField(ctx, &tenancyv1alpha1.NamespaceClaim{}, classIndex, func(o client.Object) []string {
		claim := o.(*tenancyv1alpha1.NamespaceClaim)
		if c := claimpolicy.ClassOf(claim); c != claim.Spec.ClassName {
			return []string{claim.Spec.ClassName, c}
		}
		return []string{claim.Spec.ClassName}
	})
}

// markedToClaim maps an object carrying nsclaim's ownership marks to its claim.
func markedToClaim(_ context.Context, obj client.Object) []reconcile.Request {
	o, ok := claimpolicy.OwnerFromMarks(obj)
	if !ok {
		return nil
	}
	return []reconcile.Request{requestFor(o.Namespace, o.Name)}
}

// childToClaim maps a child of a claim to the claim, through the child's namespace (whose ownership
// marks name it): a namespaced child's own, or for a namespace watcher (cluster-scoped, named
// NamespaceWatcherPrefix+namespace) the one its name gives. A child made before children lost the
// claim-name annotation names its claim itself.
func (r *NamespaceClaimReconciler) childToClaim(ctx context.Context, obj client.Object) []reconcile.Request {
	if reqs := markedToClaim(ctx, obj); reqs != nil {
		return reqs
	}
	ns := obj.GetNamespace()
	if ns == "" {
		var ok bool
		if ns, ok = claimpolicy.WatchedNamespace(obj.GetName()); !ok {
			return nil
		}
	}
	return r.namespaceNameToClaim(ctx, ns)
}

// namespaceToClaims maps a namespace nsclaim made to its claim, and any namespace to the claims that
// live in it (a requester namespace's labels decide which classes its claims may use).
func (r *NamespaceClaimReconciler) namespaceToClaims(ctx context.Context, obj client.Object) []reconcile.Request {
	reqs := markedToClaim(ctx, obj)
	claims := &tenancyv1alpha1.NamespaceClaimList{}
	if err := r.List(ctx, claims, client.InNamespace(obj.GetName())); err != nil {
		return reqs
	}
	for _, c := range claims.Items {
		reqs = append(reqs, requestFor(c.Namespace, c.Name))
	}
	return reqs
}

// namespaceNameToClaim maps the name of a namespace nsclaim made to its claim, through the ownership
// marks of the cached namespace.
func (r *NamespaceClaimReconciler) namespaceNameToClaim(ctx context.Context, name string) []reconcile.Request {
	ns := &corev1.Namespace{}
	if err := r.Get(ctx, client.ObjectKey{Name: name}, ns); err != nil {
		return nil
	}
	return markedToClaim(ctx, ns)
}

// classToClaims maps a class to the claims that use it or name no class (the default may have moved).
func (r *NamespaceClaimReconciler) classToClaims(ctx context.Context, obj client.Object) []reconcile.Request {
	var reqs []reconcile.Request
	for _, key := range []string{obj.GetName(), ""} {
		claims := &tenancyv1alpha1.NamespaceClaimList{}
		// Only the names are read: no deep copy of every claim of the class.
		if err := r.List(ctx, claims, client.MatchingFields{classIndex: key}, client.UnsafeDisableDeepCopy); err != nil {
			continue
		}
		for _, c := range claims.Items {
			reqs = append(reqs, requestFor(c.Namespace, c.Name))
		}
	}
	return reqs
}

// requestFor is the reconcile request for a claim key.
func requestFor(namespace, name string) ctrl.Request {
	return ctrl.Request{NamespacedName: types.NamespacedName{Namespace: namespace, Name: name}}
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
