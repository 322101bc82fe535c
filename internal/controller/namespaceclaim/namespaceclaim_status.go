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

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
	"github.com/nsclaim/nsclaim-operator/internal/claimstatus"
	"github.com/nsclaim/nsclaim-operator/internal/kube"
)

// setStatus writes into the claim what the reconcile recorded in s: the status fields the phases found
// and the conditions, phase and observedGeneration derived from them (claimstatus.Derive, pure). err is the
// reconcile's error. patchStatus sends what it wrote.
func setStatus(s *claimScope, err error) {
	f := &claimstatus.Facts{Fields: &s.found, Now: s.now, Deleting: s.deleting, Expired: s.expired, IdleExpired: s.idleExpired,
		ExpiresAt: s.expiresAt, Terminating: s.terminating, Released: s.released, Refusal: s.refusal,
		ChildrenReady: s.childrenReady, Unusable: s.unusable, CreatorBound: s.creatorBound, CredentialsReady: s.credentialsReady,
		SelfTest: s.selfTest, SelfTestSkipped: s.selfTestSkipped, Repaired: s.repaired, Pooled: s.pooled,
		SeedsSynced: s.seedsSynced, SeedsBlock: s.seedsBlock}
	if s.pooled != "" {
		f.Namespace, f.Class = s.desired.Namespace.Name, s.class.Name
	}
	claimstatus.Derive(s.claim, f, err)
}

// patchStatus writes the status setStatus derived, once, and only if it changed; written reports that
// the API server took the write (claim then carries the resourceVersion it returned). It is the one
// write of a claim's status: Reconcile's at the end of every reconcile, and the deletion branch's
// (reconcileDelete) while it waits for its namespaces. The sleep phase's record of a sleep is the one
// exception (see claimstatus.Fields); TestStatusIsWrittenOnlyByTheListedWriters keeps that list closed.
func (r *NamespaceClaimReconciler) patchStatus(ctx context.Context, before, claim *tenancyv1alpha1.NamespaceClaim) (written bool, err error) {
	if equality.Semantic.DeepEqual(before.Status, claim.Status) {
		return false, nil
	}
	if err := r.Status().Patch(ctx, claim, client.MergeFrom(before), client.FieldOwner(kube.FieldOwner)); err != nil {
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return false, fmt.Errorf("patching status: %w", err)
	}
	return true, nil
}
