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

	"github.com/nsclaim/nsclaim-operator/internal/claimpolicy"
	"github.com/nsclaim/nsclaim-operator/internal/fence"
)

// creatorBound reports whether the claim's creator was bound before: status.boundUser names it.
func creatorBound(s *claimScope) bool {
	c, user := s.claim, s.boundUser()
	return c.Spec.Creator != nil && user != "" && user == c.Spec.Creator.Username
}

// reconcileCreator, for a class of credentials mode Requester, checks that the claim's creator was
// recorded by the API server and is admitted by the class, and turns the desired objects into ones that
// bind the creator (no ServiceAccount, no token). A claim whose creator may not be bound is refused with
// CreatorNotStamped or CreatorNotAdmitted, and a namespace it holds keeps its objects with nobody bound.
// The creator stamp is read only until the creator was bound once.
func (r *NamespaceClaimReconciler) reconcileCreator(ctx context.Context, s *claimScope) error {
	if s.class == nil || s.expired || !claimpolicy.IsRequesterMode(s.class) {
		return nil
	}
	bound := creatorBound(s)
	var stamp claimpolicy.StampState
	if !bound && s.refusal == nil && s.claim.Spec.Creator != nil {
		st, err := fence.CheckShippedStamp(ctx, r.APIReader)
		if err != nil {
			return err
		}
		stamp = claimpolicy.StampState(st)
	}
	ref := claimpolicy.CheckCreator(s.claim, s.class, stamp, bound, s.request)
	if ref != nil && s.refusal == nil {
		s.refusal = ref
	}
	if s.desired.Namespace == nil {
		return nil
	}
	if ref == nil && (bound || s.refusal == nil) {
		claimpolicy.BindCreator(&s.desired, s.claim.Spec.Creator, s.class)
	} else {
		claimpolicy.Unbind(&s.desired)
		s.found.BoundUser.Set("")
	}
	return nil
}
