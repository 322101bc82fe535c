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

package lifetime

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
	"github.com/nsclaim/nsclaim-operator/internal/claimpolicy"
	"github.com/nsclaim/nsclaim-operator/internal/claimstatus"
)

// ExpiryClaim is the part of a claim's reconcile the expiry phase reads and writes.
type ExpiryClaim struct {
	Claim *tenancyv1alpha1.NamespaceClaim
	Now   time.Time
	// ExpiresAt is when the namespace is to be deleted by the hard TTL, IdleExpiresAt for idleness
	// (the activity phase); zero when unknown or none.
	ExpiresAt     time.Time
	IdleExpiresAt time.Time
	// Found are the status fields the phases found.
	Found *claimstatus.Fields
	// Refusal is the claim's refusal so far; an expired claim has none.
	Refusal *claimpolicy.Refusal

	// Expired is set once a TTL passed; IdleExpired when it was the idle TTL.
	Expired     bool
	IdleExpired bool
}

// Ender deletes what an expired claim held: its namespace (if it is the claim's) and its credentials.
type Ender interface {
	DeleteNamespace(ctx context.Context, name string) error
	DeleteCredentials(ctx context.Context) error
}

// Expiry is the expiry phase over what ends a claim.
type Expiry struct {
	Ender Ender
}

// Reconcile deletes the namespace once the claim's hard TTL or its idle TTL (see the activity
// phase) has passed, whichever ends first, and marks the claim expired for good. It runs
// even when the claim is refused, so a namespace whose class disappeared still expires.
func (r *Expiry) Reconcile(ctx context.Context, s *ExpiryClaim) error {
	hard := !s.ExpiresAt.IsZero() && !s.Now.Before(s.ExpiresAt)
	idle := !s.IdleExpiresAt.IsZero() && !s.Now.Before(s.IdleExpiresAt)
	already := claimpolicy.IsExpired(s.Claim)
	if !already && !hard && !idle {
		return nil
	}
	s.Expired = true
	s.Refusal = nil
	if already {
		c := meta.FindStatusCondition(s.Claim.Status.Conditions, tenancyv1alpha1.ExpiredCondition)
		s.IdleExpired = c != nil && c.Reason == tenancyv1alpha1.IdleExpiredReason
	} else {
		// The earlier of the two clocks ends the claim.
		s.IdleExpired = idle && (!hard || s.IdleExpiresAt.Before(s.ExpiresAt))
		s.Found.PodsActive.Set(false)
		if !s.IdleExpired {
			s.Found.IdleExpiresAt.Set(nil)
		}
	}
	name := s.Claim.Status.Namespace
	if name == "" {
		return nil
	}
	if err := r.Ender.DeleteNamespace(ctx, name); err != nil {
		return err
	}
	return r.Ender.DeleteCredentials(ctx)
}
