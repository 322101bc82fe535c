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

	"github.com/nsclaim/nsclaim-operator/internal/controller/namespaceclaim/access"
)

// reconcileAccess gives the claim's identity its access once the namespace is usable (access.Phase):
// it hands the phase the part of the scope it reads and takes back what it recorded.
func (r *NamespaceClaimReconciler) reconcileAccess(ctx context.Context, s *claimScope) error {
	c := &access.Claim{Claim: s.claim, Now: s.now, Class: s.class, Desired: &s.desired, Namespace: s.namespace,
		TokenOnce: s.tokenOnce, ExpiresAt: s.expiresAt, CreatorBoundBefore: creatorBound(s),
		Repaired: s.repaired, Refusal: s.refusal, Found: &s.found, RenewAt: s.renewAt, CredentialsCheckAt: s.credentialsCheckAt}
	err := r.accessPhase().Reconcile(ctx, c)
	s.repaired, s.refusal, s.renewAt, s.credentialsCheckAt = c.Repaired, c.Refusal, c.RenewAt, c.CredentialsCheckAt
	s.credentialsReady, s.tokenIssued, s.creatorBound = c.CredentialsReady, c.TokenIssued, c.CreatorBound
	s.selfTest, s.selfTestSkipped, s.selfTestBackoff = c.SelfTest, c.SelfTestSkipped, c.SelfTestBackoff
	return err
}

// accessPhase is the access phase over the reconciler's collaborators.
func (r *NamespaceClaimReconciler) accessPhase() *access.Phase {
	return &access.Phase{Client: r.Client, Recorder: r.Recorder, Endpoint: r.Endpoint, CheckInterval: r.CredentialsCheckInterval,
		Tester: r.tester, Memory: &r.mem}
}
