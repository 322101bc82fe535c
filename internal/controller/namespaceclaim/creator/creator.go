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

// Package creator holds the claim reconciler's creator phase (Phase.Reconcile over Claim, the part of
// a reconcile it reads and records): for a class of credentials mode Requester, whether the claim's
// creator was recorded by the API server and is admitted by the class, and the desired objects turned
// into ones that bind the creator.
package creator

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
	"github.com/nsclaim/nsclaim-operator/internal/claimpolicy"
	"github.com/nsclaim/nsclaim-operator/internal/claimstatus"
	"github.com/nsclaim/nsclaim-operator/internal/fence"
)

// Claim is the part of a claim's reconcile the creator phase reads and writes.
type Claim struct {
	Claim *tenancyv1alpha1.NamespaceClaim
	// Class is the resolved class; nil when refused before it was found.
	Class *tenancyv1alpha1.NamespaceClass
	// Expired is set once a TTL passed; Request when the claim serves a ConfigMap request.
	Expired bool
	Request bool
	// BoundBefore is set when the claim's creator was bound before (Bound).
	BoundBefore bool
	// Desired is what the namespace and its objects should be; the phase binds the creator in it, or
	// nobody.
	Desired *claimpolicy.Desired
	// Found are the status fields the phases found; the phase clears boundUser when nobody is bound.
	Found *claimstatus.Fields

	// Refusal is the claim's refusal so far; the phase records its own if there is none.
	Refusal *claimpolicy.Refusal
}

// Phase is the creator phase over the reader of the creator stamp.
type Phase struct {
	// APIReader reads the shipped creator stamp (fence.CheckShippedStamp), uncached.
	APIReader client.Reader
}

// Bound reports whether the claim's creator was bound before: boundUser, the creator the claim's
// RoleBindings name (status.boundUser, or found in this reconcile), names it.
func Bound(c *tenancyv1alpha1.NamespaceClaim, boundUser string) bool {
	return c.Spec.Creator != nil && boundUser != "" && boundUser == c.Spec.Creator.Username
}

// Reconcile, for a class of credentials mode Requester, checks that the claim's creator was
// recorded by the API server and is admitted by the class, and turns the desired objects into ones that
// bind the creator (no ServiceAccount, no token). A claim whose creator may not be bound is refused with
// CreatorNotStamped or CreatorNotAdmitted, and a namespace it holds keeps its objects with nobody bound.
// The creator stamp is read only until the creator was bound once.
func (r *Phase) Reconcile(ctx context.Context, s *Claim) error {
	if s.Class == nil || s.Expired || !claimpolicy.IsRequesterMode(s.Class) {
		return nil
	}
	bound := s.BoundBefore
	var stamp claimpolicy.StampState
	if !bound && s.Refusal == nil && s.Claim.Spec.Creator != nil {
		st, err := fence.CheckShippedStamp(ctx, r.APIReader)
		if err != nil {
			return err
		}
		stamp = claimpolicy.StampState(st)
	}
	ref := claimpolicy.CheckCreator(s.Claim, s.Class, stamp, bound, s.Request)
	if ref != nil && s.Refusal == nil {
		s.Refusal = ref
	}
	if s.Desired.Namespace == nil {
		return nil
	}
	if ref == nil && (bound || s.Refusal == nil) {
		claimpolicy.BindCreator(s.Desired, s.Claim.Spec.Creator, s.Class)
	} else {
		claimpolicy.Unbind(s.Desired)
		s.Found.BoundUser.Set("")
	}
	return nil
}
