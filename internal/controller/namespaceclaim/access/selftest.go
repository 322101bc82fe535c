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
	"time"

	"github.com/nsclaim/nsclaim-operator/internal/claimstatus"
	"github.com/nsclaim/nsclaim-operator/internal/credentials/tokensecret"
	"github.com/nsclaim/nsclaim-operator/internal/monitoring"
	"github.com/nsclaim/nsclaim-operator/internal/selftest"
)

// selfTestTokenTTL is the lifetime of a token minted only for a self-test (the TokenRequest API's
// minimum). Such a token is used for two rules reviews and never written anywhere.
const selfTestTokenTTL = 10 * time.Minute

// reconcileSelfTest proves the tenant identity before any token of it is written. It is skipped when
// the claim is Ready for its current generation, nothing was created or changed in this reconcile and
// no new token is to be handed out, so steady state asks the API server nothing. It runs with the token
// planCredentials minted when one is due (new claim, renewal, lost Secret), so the very token handed
// out is the one proven; otherwise (repaired objects of a Ready claim, a new generation) with a
// short-lived token minted for it alone.
func (r *Phase) reconcileSelfTest(ctx context.Context, s *Claim, plan *credentialsPlan) error {
	if s.Repaired == 0 && claimstatus.ReadyFor(s.Claim) && plan.token == nil {
		s.SelfTestSkipped = true
		return nil
	}
	token := plan.token
	if token == nil {
		tok, err := tokensecret.Issue(ctx, r.Client, plan.sa, selfTestTokenTTL, tokenTimeout)
		if err != nil {
			return err
		}
		monitoring.SelfTestRequest(monitoring.ReviewToken)
		token = &tok
	}
	ctx, cancel := context.WithTimeout(ctx, tokenTimeout)
	defer cancel()
	res, err := r.Tester.Token(ctx, selfTestSubject(s), token.Value)
	if err != nil {
		return err
	}
	r.recordSelfTest(s, res)
	return nil
}

// reconcileCreatorSelfTest is the self-test of the creator's identity (selftest.Tester.Creator). It is
// skipped when the claim is Ready for its current generation and nothing was created or changed in
// this reconcile.
func (r *Phase) reconcileCreatorSelfTest(ctx context.Context, s *Claim) error {
	if s.Repaired == 0 && claimstatus.ReadyFor(s.Claim) && s.CreatorBoundBefore {
		s.SelfTestSkipped = true
		return nil
	}
	creator := s.Claim.Spec.Creator
	ctx, cancel := context.WithTimeout(ctx, tokenTimeout)
	defer cancel()
	id := selftest.Identity{User: creator.Username, Groups: creator.Groups, UID: creator.UID, Extra: creator.Extra}
	res, err := r.Tester.Creator(ctx, selfTestSubject(s), id)
	if err != nil {
		return err
	}
	r.recordSelfTest(s, res)
	return nil
}

// selfTestSubject is the claim's identity under test, as its desired objects describe it.
func selfTestSubject(s *Claim) selftest.Subject {
	return selftest.Subject{Desired: s.Desired, Requester: s.Claim.Namespace}
}

// recordSelfTest records the self-test's result in the scope. A failure that is not waiting for new
// RoleBindings (an excess, or a missing permission when nothing was just created or changed) counts
// towards the claim's retry backoff; a pass clears it.
func (r *Phase) recordSelfTest(s *Claim, res selftest.Result) {
	s.SelfTest = &res
	if len(res.Excess) > 0 || (len(res.Missing) > 0 && s.Repaired == 0) {
		monitoring.SelfTestFailed(s.Class.Name)
		s.SelfTestBackoff = r.selfTestRetryAfter(s)
	} else if res.OK() {
		r.Memory.SelfTestPassed(s.Claim.UID)
	}
}

// selfTestRetryAfter records a failed self-test of the claim and returns the wait before the next one
// (selftest.Backoff).
func (r *Phase) selfTestRetryAfter(s *Claim) time.Duration {
	b, _ := r.Memory.SelfTestBackoff(s.Claim.UID)
	b, wait := b.Failed(s.Now)
	r.Memory.SelfTestFailed(s.Claim.UID, b)
	return wait
}
