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
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
)

// watchSeeds adds the seed caches' watches to b (none when seeds are off): a source's change reaches
// the claims of every class that names it (a rotation, a deletion, a withdrawn consent), a ConfigMap
// copy's change its claim (a tenant's edit or delete is reverted).
func (r *NamespaceClaimReconciler) watchSeeds(b *builder.Builder) *builder.Builder {
	if r.Seeds == nil {
		return b
	}
	for _, src := range r.Seeds.Watches(r.seedSourceToClaims, r.childToClaim) {
		b = b.WatchesRawSource(src)
	}
	return b
}

// seedSourceToClaims maps a source object of the seed namespace to the claims of the classes whose
// seeds name it (by kind and name), whatever its label says now: a class that may no longer copy it
// must learn so too.
func (r *NamespaceClaimReconciler) seedSourceToClaims(ctx context.Context, obj client.Object) []reconcile.Request {
	kind := tenancyv1alpha1.SeedKindConfigMap
	if _, ok := obj.(*corev1.Secret); ok {
		kind = tenancyv1alpha1.SeedKindSecret
	}
	classes := &tenancyv1alpha1.NamespaceClassList{}
	if err := r.List(ctx, classes); err != nil {
		return nil
	}
	var reqs []reconcile.Request
	for i := range classes.Items {
		c := &classes.Items[i]
		for _, s := range c.Spec.Seeds {
			if s.Kind == kind && s.Name == obj.GetName() {
				reqs = append(reqs, r.classToClaims(ctx, c)...)
				break
			}
		}
	}
	return reqs
}
