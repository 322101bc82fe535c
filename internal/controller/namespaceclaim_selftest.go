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

package controller

import (
	"context"
	"fmt"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nsclaim/nsclaim-operator/internal/access"
	"github.com/nsclaim/nsclaim-operator/internal/monitoring"
)

// reconcileSelfTest runs the SubjectAccessReview self-test of the tenant identity, before any token
// of it is written. It is skipped when the claim is Ready for its current generation and nothing was
// created or changed in this reconcile, so steady state asks the API server nothing.
func (r *NamespaceClaimReconciler) reconcileSelfTest(ctx context.Context, s *claimScope) error {
	if s.repaired == 0 && readyFor(s.claim) {
		s.selfTestSkipped = true
		return nil
	}
	ns := s.desired.Namespace.Name
	role := &rbacv1.ClusterRole{}
	var grants []rbacv1.PolicyRule
	if err := r.Get(ctx, types.NamespacedName{Name: s.desired.TenantClusterRole}, role); err == nil {
		grants = role.Rules
	} else if !apierrors.IsNotFound(err) {
		return fmt.Errorf("reading ClusterRole %s: %w", s.desired.TenantClusterRole, err)
	}
	checks := access.Checks(ns, grants, []string{s.claim.Namespace, metav1.NamespaceDefault, metav1.NamespaceSystem})
	ctx, cancel := context.WithTimeout(ctx, tokenTimeout)
	defer cancel()
	res, err := access.Verify(ctx, r.Client, access.Identity{User: s.desired.TenantUser, Groups: s.desired.TenantGroups}, checks, max(r.SelfTestConcurrency, 1))
	if err != nil {
		return err
	}
	if r.Bindings != nil {
		// Grants a sample of SubjectAccessReviews cannot see: a binding made ahead of time, in some
		// other namespace or cluster-wide, for the tenant's user or its namespace's group.
		grants, err := r.Bindings.ForeignGrants(ctx, ns)
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

// selfTestBackoffState is a claim's run of failed self-tests: how many, and when the next retry is due.
type selfTestBackoffState struct {
	failures int
	next     time.Time
}

// selfTestRetryAfter records a failed self-test of the claim and returns the wait before the next one.
// A failure before the scheduled retry (a reconcile caused by some event) keeps the schedule, so the
// backoff grows with retries, not with events.
func (r *NamespaceClaimReconciler) selfTestRetryAfter(s *claimScope) time.Duration {
	st := selfTestBackoffState{}
	if v, ok := r.selfTestFailures.Load(s.claim.UID); ok {
		st = v.(selfTestBackoffState)
		if s.now.Before(st.next) {
			return st.next.Sub(s.now)
		}
	}
	st.failures++
	st.next = s.now.Add(selfTestDelay(st.failures))
	r.selfTestFailures.Store(s.claim.UID, st)
	return st.next.Sub(s.now)
}
