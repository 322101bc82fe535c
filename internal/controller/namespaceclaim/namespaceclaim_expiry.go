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

	"k8s.io/apimachinery/pkg/api/meta"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
	"github.com/nsclaim/nsclaim-operator/internal/claimpolicy"
)

// reconcileExpiry deletes the namespace once the claim's hard TTL or its idle TTL (see
// reconcileActivity) has passed, whichever ends first, and marks the claim expired for good. It runs
// even when the claim is refused, so a namespace whose class disappeared still expires.
func (r *NamespaceClaimReconciler) reconcileExpiry(ctx context.Context, s *claimScope) error {
	hard := !s.expiresAt.IsZero() && !s.now.Before(s.expiresAt)
	idle := !s.idleExpiresAt.IsZero() && !s.now.Before(s.idleExpiresAt)
	already := claimpolicy.IsExpired(s.claim)
	if !already && !hard && !idle {
		return nil
	}
	s.expired = true
	s.refusal = nil
	if already {
		c := meta.FindStatusCondition(s.claim.Status.Conditions, tenancyv1alpha1.ExpiredCondition)
		s.idleExpired = c != nil && c.Reason == tenancyv1alpha1.IdleExpiredReason
	} else {
		// The earlier of the two clocks ends the claim.
		s.idleExpired = idle && (!hard || s.idleExpiresAt.Before(s.expiresAt))
		s.found.PodsActive.Set(false)
		if !s.idleExpired {
			s.found.IdleExpiresAt.Set(nil)
		}
	}
	name := s.claim.Status.Namespace
	if name == "" {
		return nil
	}
	if err := r.deleteOwnedNamespace(ctx, s, name); err != nil {
		return err
	}
	return r.deleteCredentials(ctx, s)
}
