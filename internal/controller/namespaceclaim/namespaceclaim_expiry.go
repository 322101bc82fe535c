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
	"time"

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
		s.found.podsActive.set(false)
		if !s.idleExpired {
			s.found.idleExpiresAt.set(nil)
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

// expiredMessage is the Expired condition's reason and message: the hard TTL's, or the idle TTL's.
func expiredMessage(s *claimScope) (reason, msg string) {
	again := fmt.Sprintf(". Delete this claim (kubectl delete namespaceclaim %s) before creating a claim of the same name again", s.claim.Name)
	if !s.idleExpired {
		return tenancyv1alpha1.ExpiredReason, fmt.Sprintf("The claim's TTL ended at %s; its namespace is deleted", s.expiresAt.UTC().Format(time.RFC3339)) +
			again + "; for more time, create a claim with another name"
	}
	st := s.claim.Status
	var since, at string
	if st.LastActivity != nil {
		since = st.LastActivity.UTC().Format(time.RFC3339)
	}
	if st.IdleExpiresAt != nil {
		at = st.IdleExpiresAt.UTC().Format(time.RFC3339)
	}
	return tenancyv1alpha1.IdleExpiredReason, fmt.Sprintf(
		"The namespace was idle (no Pod Pending or Running, no heartbeat) from %s until its idle TTL ended at %s; it is deleted", since, at) +
		again + "; to keep the next one longer while idle, send heartbeats (kubectl nsclaim heartbeat) or claim with --keep"
}
