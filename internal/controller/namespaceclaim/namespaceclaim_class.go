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

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
	"github.com/nsclaim/nsclaim-operator/internal/claimpolicy"
	"github.com/nsclaim/nsclaim-operator/internal/credentials"
	"github.com/nsclaim/nsclaim-operator/internal/lifecycle"
)

// reconcileClass resolves the claim's class and checks the claim against it: who may use it, the claim
// limit, labels, TTL and token policy, and whether the operator may provision the class at all. It
// records the class, the namespace name, the desired objects, the expiry, and a refusal if the claim
// may not proceed. A claim that holds a namespace keeps the class it was made from and its recorded
// expiry whatever happens to its spec or class: a refusal then stops new credentials, not the
// namespace's expiry nor the repair of its objects.
func (r *NamespaceClaimReconciler) reconcileClass(ctx context.Context, s *claimScope) error {
	claim := s.claim
	s.owner = claimpolicy.OwnerOf(claim)
	s.request = r.Requests != nil && r.Requests.IsRequest(claim)
	if claim.Status.ExpiresAt != nil {
		s.expiresAt = claim.Status.ExpiresAt.Time
	}
	classes := &tenancyv1alpha1.NamespaceClassList{}
	if err := r.List(ctx, classes); err != nil {
		return fmt.Errorf("listing NamespaceClasses: %w", err)
	}
	class, refusal := claimpolicy.ResolveClass(claim, classes.Items)
	if refusal != nil {
		s.refusal = refusal
		return nil
	}
	s.class = class
	s.found.ClassName.Set(class.Name)

	requester := &corev1.Namespace{}
	if err := r.Get(ctx, client.ObjectKey{Name: claim.Namespace}, requester); err != nil {
		return fmt.Errorf("reading requester namespace %s: %w", claim.Namespace, err)
	}
	held := s.held()
	limitRefusal, err := r.enterLimit(ctx, s, class, held)
	if err != nil {
		return err
	}
	// A protocol request is named exactly after its ConfigMap, without the class's prefix: only in a
	// requests namespace the protocol may serve (made by nsclaim or labelled by an admin, never one
	// provisioned for a claim, whose tenant could forge request claims there).
	request := s.request && r.Requests.MayServe(requester)
	ttl, ttlRefusal := claimpolicy.TTL(claim, class)
	_, _, keepRefusal := lifecycle.IdleTTL(claim, class)
	once, policyRefusal := claimpolicy.TokenOnlyOnce(claim)
	s.tokenOnce = once
	for _, ref := range []*claimpolicy.Refusal{
		claimpolicy.CheckPodSecurity(class, r.MinimumPodSecurity),
		classRefusal(class),
		claimpolicy.CheckPrefix(class, request),
		claimpolicy.CheckAccess(class, requester.Labels),
		limitRefusal,
		claimpolicy.CheckLabels(claim, class),
		ttlRefusal,
		keepRefusal,
		policyRefusal,
	} {
		if ref != nil {
			s.refusal = ref
			break
		}
	}
	if err := r.reconcileBudget(ctx, s, requester); err != nil {
		return err
	}
	if s.refusal != nil && !held {
		return nil
	}
	if s.refusal == nil {
		s.expiresAt = claim.CreationTimestamp.Add(ttl)
		s.found.ExpiresAt.Set(credentials.ExpiryTime(s.expiresAt))
	}
	name, err := r.namespaceName(ctx, s, requester, request, held)
	if err != nil {
		return err
	}
	s.desired = claimpolicy.Build(name, s.owner, class, claimpolicy.AllowedLabels(claim, class))
	return nil
}

// namespaceName is the name of the claim's namespace: the one its status records (held), else one
// given to it before (a pooled namespace, see givenNamespace), else the name derived from the claim,
// without the class's prefix for a request the protocol may serve (request) in requester.
func (r *NamespaceClaimReconciler) namespaceName(ctx context.Context, s *claimScope, requester *corev1.Namespace, request, held bool) (string, error) {
	claim, class := s.claim, s.class
	if held {
		r.mem.Recorded(claim.UID)
		return claim.Status.Namespace, nil
	}
	prefix := class.Spec.Naming.Prefix
	if request {
		prefix = ""
	}
	name := claimpolicy.NamespaceName(prefix, claim.Spec.NamespaceName, claim.Namespace, claim.Name, string(requester.UID))
	if claimpolicy.MayUsePool(claim, class, s.request) {
		given, err := r.givenNamespace(ctx, claim)
		if err != nil {
			return "", err
		}
		if given != "" {
			name, s.given = given, true
		}
	}
	return name, nil
}

// classRefusal is the refusal a class's own status reports for its current generation (a ClusterRole
// the operator may not bind), or nil.
func classRefusal(class *tenancyv1alpha1.NamespaceClass) *claimpolicy.Refusal {
	c := meta.FindStatusCondition(class.Status.Conditions, tenancyv1alpha1.ReadyCondition)
	if c == nil || c.Status == metav1.ConditionTrue || class.Status.ObservedGeneration != class.Generation ||
		c.Reason != tenancyv1alpha1.ClusterRoleNotBindableReason {
		return nil
	}
	return &claimpolicy.Refusal{Reason: c.Reason, Message: c.Message}
}
