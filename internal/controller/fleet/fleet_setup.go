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

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
	"github.com/nsclaim/nsclaim-operator/internal/kube"
)

// The hub's rights on the hub: its claims (and their finalizer and status), the classes, the
// credentials Secrets it writes next to claims (server-side apply: patch), and the member Secrets in its
// own namespace (config/fleet/hub_role.yaml, a Role: get, list, watch).
// +kubebuilder:rbac:groups=tenancy.nsclaim.dev,resources=namespaceclaims,verbs=get;list;watch;update;delete
// +kubebuilder:rbac:groups=tenancy.nsclaim.dev,resources=namespaceclaims/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=tenancy.nsclaim.dev,resources=namespaceclaims/finalizers,verbs=update

// SetupWithManager registers the hub's claim reconciler: claims, and the member Secrets (a member that
// appears, changes or goes looks again at the claims placed there and those still waiting), and the
// mirrors on the members (Mirrors).
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, workers int) error {
	isMember := predicate.NewPredicateFuncs(func(o client.Object) bool {
		return o.GetNamespace() == r.Registry.Namespace && o.GetLabels()[MemberLabel] == "true"
	})
	b := ctrl.NewControllerManagedBy(mgr).
		Named("fleet").
		For(&tenancyv1alpha1.NamespaceClaim{}, builder.WithPredicates(kube.NotOwnWrites(Finalizer))).
		Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(r.memberToClaims), builder.WithPredicates(isMember)).
		WithOptions(controller.Options{MaxConcurrentReconciles: workers})
	if r.Mirrors != nil {
		b = b.WatchesRawSource(r.Mirrors.Source())
	}
	return b.Complete(r)
}

// memberToClaims maps a member Secret to the claims placed on that member and those waiting for one.
func (r *Reconciler) memberToClaims(ctx context.Context, o client.Object) []reconcile.Request {
	var claims tenancyv1alpha1.NamespaceClaimList
	if err := r.Client.List(ctx, &claims); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing claims for a member Secret", "secret", o.GetName())
		return nil
	}
	var out []reconcile.Request
	for i := range claims.Items {
		c := &claims.Items[i]
		if c.Status.Cluster == "" || c.Status.Cluster == o.GetName() {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(c)})
		}
	}
	return out
}
