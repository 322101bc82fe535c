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

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nsclaim/nsclaim-operator/internal/access"
	"github.com/nsclaim/nsclaim-operator/internal/fence"
	"github.com/nsclaim/nsclaim-operator/internal/monitoring"
	"github.com/nsclaim/nsclaim-operator/internal/provision"
)

// creatorBound reports whether the claim's creator was bound before: status.boundUser names it.
func creatorBound(s *claimScope) bool {
	c := s.claim
	return c.Spec.Creator != nil && c.Status.BoundUser != "" && c.Status.BoundUser == c.Spec.Creator.Username
}

// reconcileCreator, for a class of credentials mode Requester, checks that the claim's creator was
// recorded by the API server and is admitted by the class, and turns the desired objects into ones that
// bind the creator (no ServiceAccount, no token). A claim whose creator may not be bound is refused with
// CreatorNotStamped or CreatorNotAdmitted, and a namespace it holds keeps its objects with nobody bound.
// The creator stamp is read only until the creator was bound once.
func (r *NamespaceClaimReconciler) reconcileCreator(ctx context.Context, s *claimScope) error {
	if s.class == nil || s.expired || !provision.IsRequesterMode(s.class) {
		return nil
	}
	bound := creatorBound(s)
	var stamp provision.StampState
	if !bound && s.refusal == nil && s.claim.Spec.Creator != nil {
		st, err := fence.CheckShippedStamp(ctx, r.APIReader)
		if err != nil {
			return err
		}
		stamp = provision.StampState(st)
	}
	ref := provision.CheckCreator(s.claim, s.class, stamp, bound, s.request)
	if ref != nil && s.refusal == nil {
		s.refusal = ref
	}
	if s.desired.Namespace == nil {
		return nil
	}
	if ref == nil && (bound || s.refusal == nil) {
		provision.BindCreator(&s.desired, s.claim.Spec.Creator, s.class)
	} else {
		provision.Unbind(&s.desired)
		s.claim.Status.BoundUser = ""
	}
	return nil
}

// reconcileRequesterAccess takes the place of the self-test and credentials phases for a class of
// credentials mode Requester: it proves through SubjectAccessReviews, as the creator (username, groups,
// UID and extra as stamped), that the creator can do in the namespace what the class grants and nothing
// outside it, then records the creator in status.boundUser. No token is minted, no Secret written.
func (r *NamespaceClaimReconciler) reconcileRequesterAccess(ctx context.Context, s *claimScope) error {
	if err := r.reconcileCreatorSelfTest(ctx, s); err != nil {
		return err
	}
	if s.selfTest != nil && !s.selfTest.OK() {
		return nil
	}
	s.claim.Status.BoundUser = s.claim.Spec.Creator.Username
	s.creatorBound = true
	return nil
}

// reconcileCreatorSelfTest is the self-test of the creator's identity. It is skipped when the claim is
// Ready for its current generation and nothing was created or changed in this reconcile.
func (r *NamespaceClaimReconciler) reconcileCreatorSelfTest(ctx context.Context, s *claimScope) error {
	if s.repaired == 0 && readyFor(s.claim) && creatorBound(s) {
		s.selfTestSkipped = true
		return nil
	}
	creator := s.claim.Spec.Creator
	ns := s.desired.Namespace.Name
	role := &rbacv1.ClusterRole{}
	var grants []rbacv1.PolicyRule
	if err := r.Get(ctx, types.NamespacedName{Name: s.desired.TenantClusterRole}, role); err == nil {
		grants = role.Rules
	} else if !apierrors.IsNotFound(err) {
		return fmt.Errorf("reading ClusterRole %s: %w", s.desired.TenantClusterRole, err)
	}
	// The claim's own namespace is foreign too: the creator may make claims there, nothing more.
	checks := access.Checks(ns, grants, []string{s.claim.Namespace, metav1.NamespaceDefault, metav1.NamespaceSystem})
	ctx, cancel := context.WithTimeout(ctx, tokenTimeout)
	defer cancel()
	id := access.Identity{User: creator.Username, Groups: creator.Groups, UID: creator.UID, Extra: creator.Extra}
	res, err := access.Verify(ctx, r.Client, id, checks, max(r.SelfTestConcurrency, 1))
	if err != nil {
		return err
	}
	if r.Bindings != nil {
		// Bindings a sample of SubjectAccessReviews cannot see, in any other namespace or cluster-wide.
		grants, err := r.Bindings.UserGrants(ctx, creator.Username, ns, s.claim.Namespace)
		if err != nil {
			return err
		}
		for _, g := range grants {
			res.Excess = append(res.Excess, access.Failure{Grant: g.String()})
		}
	}
	s.selfTest = &res
	if len(res.Excess) > 0 || (len(res.Missing) > 0 && s.repaired == 0) {
		monitoring.SelfTestFailed(s.class.Name)
		s.selfTestBackoff = r.selfTestRetryAfter(s)
	} else if res.OK() {
		r.selfTestFailures.Delete(s.claim.UID)
	}
	return nil
}
