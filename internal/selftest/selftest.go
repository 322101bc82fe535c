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

// Package selftest proves that an identity a claim hands out can do what its class grants in its
// namespace and nothing more, before the claim is Ready. For an issued token (Token): the rules a
// SelfSubjectRulesReview made with the token answers, in the claim's namespace and in the requester's,
// compared with the rules its class grants and with what every identity of the cluster has (rules.go),
// plus the bindings made ahead of time elsewhere that the binding index finds; where a rules review
// answers incomplete (a webhook authorizer), a sample of SubjectAccessReviews instead (Checks, Verify).
// For a claim's creator, who keeps its own credentials (Creator): that sample, as the creator. Tester
// holds what it needs; the claim reconciler decides when to run it and what the result means.
package selftest

import (
	"context"
	"fmt"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	"github.com/nsclaim/nsclaim-operator/internal/claimpolicy"
	"github.com/nsclaim/nsclaim-operator/internal/monitoring"
	"github.com/nsclaim/nsclaim-operator/internal/watchcache"
)

// MaxListedFailures bounds how many failed checks or bindings a message lists.
const MaxListedFailures = 5

// roleKind is the roleRef kind of a binding to a Role.
const roleKind = "Role"

// Tester runs self-tests. It is safe for concurrent use.
type Tester struct {
	// Client reads ClusterRoles from the cache and sends SubjectAccessReviews as the operator.
	Client client.Client
	// APIReader reads the Roles that are not cached (those nsclaim did not make).
	APIReader client.Reader
	// Recorder emits the Warning Event on a binding that grants something to every identity; nil
	// emits none.
	Recorder recorder.EventRecorder
	// Bindings finds bindings nsclaim did not make that name a tenant; nil skips that part of the
	// self-test, and a token's self-test falls back to the SubjectAccessReview sample.
	Bindings *watchcache.BindingIndex
	// Server is the API server's address and CA; its credentials are never used (the rules reviews
	// are sent with the tenant's token alone).
	Server *rest.Config
	// Concurrency bounds the SubjectAccessReviews in flight for one self-test.
	Concurrency int
}

// Subject is the identity under test, as the claim's desired objects describe it.
type Subject struct {
	// Desired are the claim's desired objects: the namespace, the tenant's user and groups, the
	// RoleBindings (the release one binds the shared release ClusterRole), the namespace watcher and the
	// tenant's ClusterRole.
	Desired *claimpolicy.Desired
	// Requester is the claim's own namespace, which the identity must not reach.
	Requester string
}

// Token proves the identity of token, the tenant of subj: it enumerates what the token may do with two
// SelfSubjectRulesReviews (rules_review.go), one in the claim's namespace (it must hold what the class
// grants and nothing more) and one in the requester's namespace, where the tenant has no binding (it
// shows what cluster-wide bindings give it). Every rule beyond that is checked against what every
// identity of the cluster has anyway (see sharedRules). A rules review cannot see a RoleBinding in a
// third namespace: the binding index finds those. Where a rules review answers incomplete (an authorizer that cannot list rules, such as
// a webhook), the self-test falls back to the SubjectAccessReview sample and says so.
func (t *Tester) Token(ctx context.Context, subj Subject, token string) (Result, error) {
	own, other := subj.Desired.Namespace.Name, subj.Requester
	reviews, err := t.rulesReviews(ctx, token, own, other)
	if err != nil {
		return Result{}, err
	}
	var res Result
	if why := incompleteReview(reviews); why != "" || t.Bindings == nil {
		if why == "" {
			why = "no binding index to tell what every identity has"
		}
		res, err = t.accessReviews(ctx, subj)
		res.Fallback = why
	} else {
		res, err = t.compareRules(ctx, subj, reviews)
	}
	if err != nil {
		return Result{}, err
	}
	if t.Bindings != nil {
		// Grants a rules review of two namespaces cannot see: a binding made ahead of time, in some
		// other namespace or cluster-wide, for the tenant's user or its namespace's group.
		grants, err := t.Bindings.ForeignGrants(ctx, own)
		if err != nil {
			return Result{}, err
		}
		var fs []Failure
		for _, g := range grants {
			fs = append(fs, Failure{Grant: g.String()})
		}
		res.Excess = append(fs, res.Excess...)
	}
	return res, nil
}

// accessReviews is the fallback self-test: a sample of SubjectAccessReviews of the tenant's user and
// groups, for an authorizer that cannot list rules. Each review is counted.
func (t *Tester) accessReviews(ctx context.Context, subj Subject) (Result, error) {
	checks, err := t.sample(ctx, subj)
	if err != nil {
		return Result{}, err
	}
	for range checks {
		monitoring.SelfTestRequest(monitoring.ReviewAccess)
	}
	return Verify(ctx, t.Client, Identity{User: subj.Desired.TenantUser, Groups: subj.Desired.TenantGroups}, checks, max(t.Concurrency, 1))
}

// sample is the sample of SubjectAccessReviews (Checks) for an identity bound to the tenant's
// ClusterRole in its namespace: what that role grants there, and nothing in the claim's own
// namespace (the requester may make claims there, nothing more), default or kube-system. A ClusterRole
// that does not exist grants nothing.
func (t *Tester) sample(ctx context.Context, subj Subject) ([]Check, error) {
	role := &rbacv1.ClusterRole{}
	var grants []rbacv1.PolicyRule
	if err := t.Client.Get(ctx, types.NamespacedName{Name: subj.Desired.TenantClusterRole}, role); err == nil {
		grants = role.Rules
	} else if !apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("reading ClusterRole %s: %w", subj.Desired.TenantClusterRole, err)
	}
	return Checks(subj.Desired.Namespace.Name, grants, []string{subj.Requester, metav1.NamespaceDefault, metav1.NamespaceSystem}), nil
}

// Creator proves the identity of a claim's stamped creator, who uses its own credentials (credentials
// mode Requester): a sample of SubjectAccessReviews as the creator (username, groups, UID and extra),
// that it can do in the namespace what the class grants and nothing outside it, and, through the
// binding index when there is one, the bindings such a sample cannot see, in any other namespace or
// cluster-wide.
func (t *Tester) Creator(ctx context.Context, subj Subject, creator Identity) (Result, error) {
	checks, err := t.sample(ctx, subj)
	if err != nil {
		return Result{}, err
	}
	res, err := Verify(ctx, t.Client, creator, checks, max(t.Concurrency, 1))
	if err != nil {
		return Result{}, err
	}
	if t.Bindings != nil {
		grants, err := t.Bindings.UserGrants(ctx, creator.User, subj.Desired.Namespace.Name, subj.Requester)
		if err != nil {
			return Result{}, err
		}
		for _, g := range grants {
			res.Excess = append(res.Excess, Failure{Grant: g.String()})
		}
	}
	return res, nil
}
