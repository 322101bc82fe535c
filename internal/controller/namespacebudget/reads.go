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

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
)

// inputs is what one budget's status is derived from, read from the cache by the requesters the
// budget may cover: not every claim and namespace of the cluster at each reconcile.
type inputs struct {
	// requesters are the labels of the requester namespaces read, by name: those the namespace
	// selector matches, and those of the claims of the creators the budget names.
	requesters map[string]map[string]string
	// claims are the claims of those requesters' namespaces (every claim of a selected namespace, the
	// creators' claims of the others), by UID.
	claims map[types.UID]*tenancyv1alpha1.NamespaceClaim
	// namespaces are the namespaces nsclaim made for claims of those requester namespaces.
	namespaces []*corev1.Namespace
}

// read lists, from the cache and without deep copies (nothing changes them), the requester namespaces
// b's namespaceSelector matches and the claims in them, the claims of the creators b names
// (creatorIndex), and the namespaces nsclaim made for claims of all those requester namespaces
// (requesterIndex). Reconcile still decides coverage with policy.Covers; what is not read here is what
// b cannot cover. An invalid selector selects nothing, as policy.Covers says.
func (r *BudgetReconciler) read(ctx context.Context, b *tenancyv1alpha1.NamespaceBudget) (inputs, error) {
	in := inputs{requesters: map[string]map[string]string{}, claims: map[types.UID]*tenancyv1alpha1.NamespaceClaim{}}
	addClaims := func(list *tenancyv1alpha1.NamespaceClaimList) {
		for i := range list.Items {
			in.claims[list.Items[i].UID] = &list.Items[i]
		}
	}
	if sel := b.Spec.Requesters.NamespaceSelector; sel != nil {
		if s, err := metav1.LabelSelectorAsSelector(sel); err == nil {
			selected := &corev1.NamespaceList{}
			if err := r.List(ctx, selected, client.MatchingLabelsSelector{Selector: s}, client.UnsafeDisableDeepCopy); err != nil {
				return in, fmt.Errorf("listing the requester namespaces of NamespaceBudget %s: %w", b.Name, err)
			}
			for i := range selected.Items {
				name := selected.Items[i].Name
				in.requesters[name] = selected.Items[i].Labels
				claims := &tenancyv1alpha1.NamespaceClaimList{}
				if err := r.List(ctx, claims, client.InNamespace(name), client.UnsafeDisableDeepCopy); err != nil {
					return in, fmt.Errorf("listing the NamespaceClaims of %s: %w", name, err)
				}
				addClaims(claims)
			}
		}
	}
	for _, m := range b.Spec.Requesters.Creators {
		claims := &tenancyv1alpha1.NamespaceClaimList{}
		if err := r.List(ctx, claims, client.MatchingFields{creatorIndex: creatorKey(m)}, client.UnsafeDisableDeepCopy); err != nil {
			return in, fmt.Errorf("listing the NamespaceClaims of creator %s: %w", creatorKey(m), err)
		}
		addClaims(claims)
		for i := range claims.Items {
			if ns := claims.Items[i].Namespace; in.requesters[ns] == nil {
				in.requesters[ns] = r.labelsOf(ctx, ns)
			}
		}
	}
	for requester := range in.requesters {
		made := &corev1.NamespaceList{}
		if err := r.List(ctx, made, client.MatchingFields{requesterIndex: requester}, client.UnsafeDisableDeepCopy); err != nil {
			return in, fmt.Errorf("listing the namespaces made for claims of %s: %w", requester, err)
		}
		for i := range made.Items {
			in.namespaces = append(in.namespaces, &made.Items[i])
		}
	}
	return in, nil
}
