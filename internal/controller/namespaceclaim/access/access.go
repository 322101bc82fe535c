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

package access

import (
	"context"

	"github.com/nsclaim/nsclaim-operator/internal/claimpolicy"
)

// Reconcile gives the claim's identity its access once the namespace is usable. In mode
// Requester the creator is bound: no token, no Secret. In mode Token the identity is proven before any
// credential is written: the token due (if any) is minted first, the self-test runs with it, and it is
// written only if the self-test passes. A claim whose self-test fails never exposes a token, and a
// token already handed out is not renewed while it fails.
func (r *Phase) Reconcile(ctx context.Context, s *Claim) error {
	if claimpolicy.IsRequesterMode(s.Class) {
		return r.reconcileRequesterAccess(ctx, s)
	}
	plan, err := r.planCredentials(ctx, s)
	if err != nil || plan == nil {
		return err
	}
	if err := r.reconcileSelfTest(ctx, s, plan); err != nil {
		return err
	}
	if s.SelfTest != nil && !s.SelfTest.OK() {
		return nil
	}
	return r.writeCredentials(ctx, s, plan)
}

// reconcileRequesterAccess takes the place of the self-test and credentials phases for a class of
// credentials mode Requester: it proves through SubjectAccessReviews, as the creator (username, groups,
// UID and extra as stamped), that the creator can do in the namespace what the class grants and nothing
// outside it, then records the creator in status.boundUser. No token is minted, no Secret written.
func (r *Phase) reconcileRequesterAccess(ctx context.Context, s *Claim) error {
	if err := r.reconcileCreatorSelfTest(ctx, s); err != nil {
		return err
	}
	if s.SelfTest != nil && !s.SelfTest.OK() {
		return nil
	}
	s.Found.BoundUser.Set(s.Claim.Spec.Creator.Username)
	s.CreatorBound = true
	return nil
}
