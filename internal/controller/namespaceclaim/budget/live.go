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
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
	"github.com/nsclaim/nsclaim-operator/internal/admission"
	policy "github.com/nsclaim/nsclaim-operator/internal/budget"
)

// live lists the holdings of budget b from the API server: every namespace nsclaim made for a claim
// (owned by its record, Phase.Owned), Terminating ones included (a namespace is charged until it is
// gone), whose claim b covers, charged by the class its label names. A claim deleted while its
// namespace terminates is judged by its requester namespace (its creator is gone with it).
func (q *queue) live(ctx context.Context, b *tenancyv1alpha1.NamespaceBudget) ([]admission.Holding, error) {
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("NamespaceList"))
	if err := q.phase.APIReader.List(ctx, list, client.MatchingLabels{tenancyv1alpha1.ManagedByLabel: tenancyv1alpha1.ManagedByValue},
		client.HasLabels{tenancyv1alpha1.ClaimUIDLabel}); err != nil {
		return nil, fmt.Errorf("listing the namespaces of NamespaceBudget %s: %w", b.Name, err)
	}
	classes := &tenancyv1alpha1.NamespaceClassList{}
	if err := q.phase.Reader.List(ctx, classes); err != nil {
		return nil, fmt.Errorf("listing NamespaceClasses: %w", err)
	}
	byLabel := policy.ClassesByLabel(classes.Items)
	byUID := map[string]*tenancyv1alpha1.NamespaceClaim{}
	for i := range q.claims {
		byUID[string(q.claims[i].UID)] = &q.claims[i]
	}
	var holdings []admission.Holding
	for i := range list.Items {
		ns := &list.Items[i]
		uid, owned, err := q.phase.Owned(ctx, ns)
		if err != nil {
			return nil, err
		}
		if !owned {
			continue
		}
		claim := byUID[string(uid)]
		requester := ns.Labels[tenancyv1alpha1.ClaimNamespaceLabel]
		charge, covered := policy.Held(b, ns, claim, byLabel, q.requesterLabels(ctx, requester))
		if !covered {
			continue
		}
		holdings = append(holdings, admission.Holding{Claim: uid, Namespace: ns.Name, Charge: charge})
	}
	return holdings, nil
}
