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
	"slices"
	"strings"
	"sync"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	authorizationclient "k8s.io/client-go/kubernetes/typed/authorization/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	"github.com/nsclaim/nsclaim-operator/internal/claimpolicy"
	"github.com/nsclaim/nsclaim-operator/internal/informers"
	"github.com/nsclaim/nsclaim-operator/internal/kube"
	"github.com/nsclaim/nsclaim-operator/internal/monitoring"
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
	Bindings *informers.BindingIndex
	// Server is the API server's address and CA; its credentials are never used (the rules reviews
	// are sent with the tenant's token alone).
	Server *rest.Config
	// Concurrency bounds the SubjectAccessReviews in flight for one self-test.
	Concurrency int
}

// Subject is the identity under test, as the claim's desired objects describe it.
type Subject struct {
	// Desired are the claim's desired objects: the namespace, the tenant's user and groups, the
	// RoleBindings, the release Role, the namespace watcher and the tenant's ClusterRole.
	Desired *claimpolicy.Desired
	// Requester is the claim's own namespace, which the identity must not reach.
	Requester string
}

// Token proves the identity of token, the tenant of subj: it enumerates what the token may do with two SelfSubjectRulesReviews: one in the claim's
// namespace (it must hold what the class grants and nothing more) and one in the requester's
// namespace, where the tenant has no binding (it shows what cluster-wide bindings give it). Every
// rule beyond that is checked against what every identity of the cluster has anyway (see
// sharedRules). A rules review cannot see a RoleBinding in a third namespace: the binding index
// finds those. Where a rules review answers incomplete (an authorizer that cannot list rules, such as
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

// rulesReview is the answer of one SelfSubjectRulesReview.
type rulesReview struct {
	namespace string
	status    authorizationv1.SubjectRulesReviewStatus
}

// rulesReviews sends the rules reviews, one per namespace and in parallel, with the tenant's token.
func (t *Tester) rulesReviews(ctx context.Context, token string, namespaces ...string) ([]rulesReview, error) {
	c, err := authorizationclient.NewForConfig(t.tokenConfig(token))
	if err != nil {
		return nil, fmt.Errorf("client for the self-test: %w", err)
	}
	out := make([]rulesReview, len(namespaces))
	errs := make([]error, len(namespaces))
	var wg sync.WaitGroup
	for i, ns := range namespaces {
		wg.Add(1)
		go func() {
			defer wg.Done()
			monitoring.SelfTestRequest(monitoring.ReviewRules)
			rev, err := c.SelfSubjectRulesReviews().Create(ctx, &authorizationv1.SelfSubjectRulesReview{
				Spec: authorizationv1.SelfSubjectRulesReviewSpec{Namespace: ns}}, metav1.CreateOptions{})
			if err != nil {
				errs[i] = fmt.Errorf("SelfSubjectRulesReview in namespace %s with the tenant's token: %w", ns, err)
				return
			}
			out[i] = rulesReview{namespace: ns, status: rev.Status}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// tokenConfig connects as the tenant: the operator's API server address and CA (Server, without its
// credentials), the tenant's token, none of the operator's own credentials.
func (t *Tester) tokenConfig(token string) *rest.Config {
	cfg := rest.AnonymousClientConfig(t.Server)
	cfg.BearerToken = token
	return cfg
}

// incompleteReview says why the rules reviews cannot be trusted to be complete, or "" if they can.
func incompleteReview(reviews []rulesReview) string {
	for _, rv := range reviews {
		if rv.status.Incomplete {
			msg := "the SelfSubjectRulesReview in namespace " + rv.namespace + " answered incomplete"
			if rv.status.EvaluationError != "" {
				msg += ": " + rv.status.EvaluationError
			}
			return msg
		}
	}
	return ""
}

// compareRules compares the rules reviews' answers with what the class grants and what every identity
// has, and names the bindings that explain an excess where the index knows them.
func (t *Tester) compareRules(ctx context.Context, subj Subject, reviews []rulesReview) (Result, error) {
	roles := roleRules{t: t, memo: map[rbacv1.RoleRef]map[string][]rbacv1.PolicyRule{}}
	must, res, err := classRules(ctx, subj.Desired, &roles)
	if err != nil {
		return Result{}, err
	}
	shared, err := t.Bindings.SharedGrants(ctx)
	if err != nil {
		return Result{}, err
	}
	res.Note = t.reportSharedGrants(ctx, shared)
	tenant, err := t.Bindings.TenantBindings(ctx, subj.Desired.Namespace.Name)
	if err != nil {
		return Result{}, err
	}
	excess := map[string][]string{} // rule -> namespaces where it is in excess
	var order []string
	for _, rv := range reviews {
		got := RulesOf(rv.status)
		allowed, err := sharedRules(ctx, &roles, shared, rv.namespace)
		if err != nil {
			return Result{}, err
		}
		var cmp Comparison
		if rv.namespace == subj.Desired.Namespace.Name {
			cmp = Compare(got, must, allowed)
			for _, m := range cmp.Missing {
				res.Missing = append(res.Missing, Failure{Rule: RuleString(m) + " in namespace " + rv.namespace})
			}
		} else {
			// The tenant's own namespace watcher is cluster-scoped: it shows in every namespace.
			cmp = Compare(got, nil, append(allowed, subj.Desired.NamespaceWatcher.Rules...))
		}
		for _, x := range cmp.Excess {
			key := RuleString(x)
			if from, err := explain(ctx, &roles, tenant, x, rv.namespace); err != nil {
				return Result{}, err
			} else if from != "" {
				key += " (" + from + ")"
			}
			if _, seen := excess[key]; !seen {
				order = append(order, key)
			}
			excess[key] = append(excess[key], rv.namespace)
		}
	}
	for _, key := range order {
		where := " in namespace " + excess[key][0]
		if len(excess[key]) == len(reviews) && len(reviews) > 1 {
			where = " in every namespace"
		}
		rule, from, _ := strings.Cut(key, " (")
		if from != "" {
			from = " (" + from
		}
		res.Excess = append(res.Excess, Failure{Rule: rule + where + from})
	}
	return res, nil
}

// classRules returns the rules the tenant must have in its namespace: the rules of every role the
// class binds to it there (the class's ClusterRole, the release Role, extra bindings naming it) and of
// its namespace watcher. A ClusterRole that does not exist is a missing permission in itself.
func classRules(ctx context.Context, d *claimpolicy.Desired, roles *roleRules) ([]rbacv1.PolicyRule, Result, error) {
	var must []rbacv1.PolicyRule
	var res Result
	for _, rb := range d.RoleBindings {
		if !namesTenant(rb.Subjects, *d) {
			continue
		}
		if rb.RoleRef.Kind == roleKind && rb.RoleRef.Name == d.ReleaseRole.Name {
			must = append(must, d.ReleaseRole.Rules...)
			continue
		}
		rules, found, err := roles.get(ctx, rb.RoleRef, d.Namespace.Name)
		if err != nil {
			return nil, Result{}, err
		}
		if !found {
			res.Missing = append(res.Missing, Failure{Rule: fmt.Sprintf("%s %s, bound by RoleBinding %s/%s, does not exist", rb.RoleRef.Kind, rb.RoleRef.Name, d.Namespace.Name, rb.Name)})
		}
		must = append(must, rules...)
	}
	return append(must, d.NamespaceWatcher.Rules...), res, nil
}

// namesTenant reports whether subjects include the tenant: its ServiceAccount, its user, or one of its
// groups.
func namesTenant(subjects []rbacv1.Subject, d claimpolicy.Desired) bool {
	for _, sub := range subjects {
		switch sub.Kind {
		case rbacv1.ServiceAccountKind:
			if "system:serviceaccount:"+sub.Namespace+":"+sub.Name == d.TenantUser {
				return true
			}
		case rbacv1.UserKind:
			if sub.Name == d.TenantUser {
				return true
			}
		case rbacv1.GroupKind:
			if slices.Contains(d.TenantGroups, sub.Name) {
				return true
			}
		}
	}
	return false
}

// sharedRules returns what every issued identity has in namespace ns whatever its claim: the rules of
// the bindings that name system:serviceaccounts or system:authenticated, cluster-wide or in ns. These
// groups are in every ServiceAccount token, so this is the baseline any fresh identity of this cluster
// gets (the API server's own system:basic-user, system:discovery, ... and whatever an admin granted to
// every ServiceAccount). It is computed from the bindings themselves, not from a rules review of some
// reference identity: the operator has no identity with nothing (its own has its RBAC, and it may not
// impersonate), and a reference would hide the very grants to every identity that are to be reported.
func sharedRules(ctx context.Context, roles *roleRules, shared []informers.SharedGrant, ns string) ([]rbacv1.PolicyRule, error) {
	var out []rbacv1.PolicyRule
	for _, g := range shared {
		if g.Namespace != "" && g.Namespace != ns {
			continue
		}
		rules, _, err := roles.get(ctx, g.RoleRef, g.Namespace)
		if err != nil {
			return nil, err
		}
		out = append(out, rules...)
	}
	return out, nil
}

// explain names the tenant binding that grants an excess rule in namespace ns, or "" if none of the
// bindings the index knows does.
func explain(ctx context.Context, roles *roleRules, tenant []informers.SharedGrant, rule rbacv1.PolicyRule, ns string) (string, error) {
	for _, b := range tenant {
		if b.Namespace != "" && b.Namespace != ns {
			continue
		}
		rules, _, err := roles.get(ctx, b.RoleRef, b.Namespace)
		if err != nil {
			return "", err
		}
		if Uncovered([]rbacv1.PolicyRule{rule}, rules) == nil {
			return b.Binding() + " grants " + b.RoleRef.Kind + " " + b.RoleRef.Name, nil
		}
	}
	return "", nil
}

// reportSharedGrants reports, once per binding and process, each binding other than the API server's
// defaults that grants something to every ServiceAccount or every user: a Warning Event on the
// binding, a log line, and the nsclaim_cluster_wide_grants gauge. Such a grant is not one claim's
// doing, and every identity of the cluster has it (the requester's pipeline included), so claims are
// not failed for it: failing every claim would turn the service off for a cluster-wide decision of an
// admin while the tenant gains nothing its requester lacks. It returns a note for the claims'
// condition, so whoever reads a claim learns it too.
func (t *Tester) reportSharedGrants(ctx context.Context, shared []informers.SharedGrant) string {
	var names []string
	for _, g := range shared {
		if g.Default {
			continue
		}
		names = append(names, g.Binding())
		if !t.Bindings.ReportOnce(g) {
			continue
		}
		group := strings.TrimPrefix(g.Subject, "Group:")
		logf.FromContext(ctx).Info("A binding grants something to every identity of a group every tenant is in; not counted against claims",
			"binding", g.Binding(), "role", g.RoleRef.Kind+" "+g.RoleRef.Name, "group", group)
		if t.Recorder != nil {
			t.Recorder.Eventf(g.Object(), nil, corev1.EventTypeWarning, "GrantsEveryIdentity", "SelfTest",
				"%s grants %s %s to group %s: every identity nsclaim issues has it, so the self-test of claims does not count it", g.Binding(), g.RoleRef.Kind, g.RoleRef.Name, group)
		}
	}
	monitoring.SetClusterWideGrants(len(names))
	if len(names) == 0 {
		return ""
	}
	if len(names) > MaxListedFailures {
		names = append(names[:MaxListedFailures], fmt.Sprintf("and %d more", len(names)-MaxListedFailures))
	}
	return "; not counted, as every identity has them: grants to every ServiceAccount or user by " + strings.Join(names, ", ")
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

// roleRules resolves the rules of roles, once per self-test.
type roleRules struct {
	t    *Tester
	memo map[rbacv1.RoleRef]map[string][]rbacv1.PolicyRule
}

// get returns the rules of the role ref names (a Role in namespace ns), and whether it exists. A
// ClusterRole with an aggregation rule holds the rules of the ClusterRoles it selects: the rules
// the aggregation is meant to give, which the authorizer only sees once kube-controller-manager copied
// them.
func (rr *roleRules) get(ctx context.Context, ref rbacv1.RoleRef, ns string) ([]rbacv1.PolicyRule, bool, error) {
	key := ns
	if ref.Kind != roleKind {
		key = ""
	}
	if byNS, ok := rr.memo[ref]; ok {
		if rules, ok := byNS[key]; ok {
			return rules, rules != nil, nil
		}
	} else {
		rr.memo[ref] = map[string][]rbacv1.PolicyRule{}
	}
	rules, found, err := rr.fetch(ctx, ref, ns)
	if err != nil {
		return nil, false, err
	}
	if found && rules == nil {
		rules = []rbacv1.PolicyRule{}
	}
	rr.memo[ref][key] = rules
	return rules, found, nil
}

func (rr *roleRules) fetch(ctx context.Context, ref rbacv1.RoleRef, ns string) ([]rbacv1.PolicyRule, bool, error) {
	if ref.Kind == roleKind {
		// Roles are cached only when nsclaim made them: read the others directly (rare: a binding
		// not made by nsclaim that names a tenant or every identity, with a Role).
		role := &rbacv1.Role{}
		if err := rr.t.APIReader.Get(ctx, client.ObjectKey{Namespace: ns, Name: ref.Name}, role); err != nil {
			ok, err := kube.Found(err)
			return nil, ok, err
		}
		return role.Rules, true, nil
	}
	role := &rbacv1.ClusterRole{}
	if err := rr.t.Client.Get(ctx, client.ObjectKey{Name: ref.Name}, role); err != nil {
		ok, err := kube.Found(err)
		if err != nil {
			err = fmt.Errorf("reading ClusterRole %s: %w", ref.Name, err)
		}
		return nil, ok, err
	}
	rules := role.Rules
	if role.AggregationRule != nil {
		for _, sel := range role.AggregationRule.ClusterRoleSelectors {
			s, err := metav1.LabelSelectorAsSelector(&sel)
			if err != nil || s.Empty() {
				continue
			}
			list := &rbacv1.ClusterRoleList{}
			if err := rr.t.Client.List(ctx, list, client.MatchingLabelsSelector{Selector: s}); err != nil {
				return nil, false, fmt.Errorf("listing the ClusterRoles aggregated into %s: %w", ref.Name, err)
			}
			for i := range list.Items {
				if list.Items[i].Name != role.Name {
					rules = append(slices.Clip(rules), list.Items[i].Rules...)
				}
			}
		}
	}
	return rules, true, nil
}
