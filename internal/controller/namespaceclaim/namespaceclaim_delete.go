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
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
	"github.com/nsclaim/nsclaim-operator/internal/claimpolicy"
	"github.com/nsclaim/nsclaim-operator/internal/claimstatus"
	"github.com/nsclaim/nsclaim-operator/internal/kube"
	"github.com/nsclaim/nsclaim-operator/internal/monitoring"
)

// reconcileDelete deletes every namespace that carries the claim's ownership marks (found through the
// cache's label index, so a namespace created just before a crash that kept it out of status is found
// too) and the credentials Secret at once, then keeps the finalizer until each namespace is gone: while
// one is terminating the claim says what blocks it (Ready=False, NamespaceTerminating) and the
// stuck-terminating alert sees it. The deletion-duration metric measures the whole wait.
func (r *NamespaceClaimReconciler) reconcileDelete(ctx context.Context, s *claimScope) (ctrl.Result, error) {
	claim := s.claim
	// Nothing remembered of the claim outlives it; a claim deleted before its status recorded the
	// namespace it was given has its namespaces found by their labels below.
	r.mem.Forget(claim.UID)
	if !controllerutil.ContainsFinalizer(claim, tenancyv1alpha1.ClaimFinalizer) {
		return ctrl.Result{}, nil
	}
	before := claim.DeepCopy()
	s.owner = claimpolicy.OwnerOf(claim)
	names, err := r.ownedNamespaceNames(ctx, claim)
	if err != nil {
		return ctrl.Result{}, err
	}
	var waiting []string
	for _, name := range names {
		s.terminating = ""
		if err := r.deleteOwnedNamespace(ctx, s, name); err != nil {
			return ctrl.Result{}, err
		}
		if s.terminating != "" {
			waiting = append(waiting, fmt.Sprintf("namespace %s: %s", name, s.terminating))
		}
	}
	// The token dies with its ServiceAccount when the namespace is finalised; the Secret holding it
	// goes now rather than with the claim.
	if err := r.deleteCredentials(ctx, s); err != nil {
		return ctrl.Result{}, err
	}
	if len(waiting) > 0 {
		s.deleting = strings.Join(waiting, "; ")
		setStatus(s, nil)
		if _, err := r.patchStatus(ctx, before, claim); err != nil {
			return ctrl.Result{}, err
		}
		return ctrl.Result{RequeueAfter: terminatingPoll}, nil
	}
	// A JSON patch that tests the finalizer at its index before removing it: it needs no
	// resourceVersion (the cached claim may lag its last status write) and never drops a finalizer
	// someone else added meanwhile.
	i := slices.Index(claim.Finalizers, tenancyv1alpha1.ClaimFinalizer)
	patch := fmt.Sprintf(`[{"op":"test","path":"/metadata/finalizers/%d","value":%q},{"op":"remove","path":"/metadata/finalizers/%d"}]`, i, tenancyv1alpha1.ClaimFinalizer, i)
	err = r.Patch(ctx, claim, client.RawPatch(types.JSONPatchType, []byte(patch)), client.FieldOwner(kube.FieldOwner))
	if apierrors.IsNotFound(err) {
		// An earlier reconcile removed the finalizer, and observed the deletion.
		return ctrl.Result{}, nil
	}
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("removing finalizer: %w", err)
	}
	monitoring.ObserveDeletion(claimstatus.ClassName(claim), s.now.Sub(claim.DeletionTimestamp.Time))
	return ctrl.Result{}, nil
}

// ownedNamespaceNames lists, sorted, the namespaces carrying the claim's UID label and the one its status
// names.
func (r *NamespaceClaimReconciler) ownedNamespaceNames(ctx context.Context, claim *tenancyv1alpha1.NamespaceClaim) ([]string, error) {
	owned := &corev1.NamespaceList{}
	if err := r.List(ctx, owned, client.MatchingLabels{tenancyv1alpha1.ClaimUIDLabel: string(claim.UID)}); err != nil {
		return nil, fmt.Errorf("listing namespaces of claim: %w", err)
	}
	names := []string{}
	for _, ns := range owned.Items {
		names = append(names, ns.Name)
	}
	if claim.Status.Namespace != "" {
		names = append(names, claim.Status.Namespace)
	}
	slices.Sort(names)
	return slices.Compact(names), nil
}
