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
	"slices"
	"strings"
	"sync"
	"time"

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

	"github.com/nsclaim/nsclaim-operator/internal/access"
	"github.com/nsclaim/nsclaim-operator/internal/informers"
	"github.com/nsclaim/nsclaim-operator/internal/kube"
	"github.com/nsclaim/nsclaim-operator/internal/monitoring"
	"github.com/nsclaim/nsclaim-operator/internal/provision"
)

// selfTestTokenTTL is the lifetime of a token minted only for a self-test (the TokenRequest API's
// minimum). Such a token is used for two rules reviews and never written anywhere.
const selfTestTokenTTL = 10 * time.Minute

// roleKind is the roleRef kind of a binding to a Role.
const roleKind = "Role"

// reconcileSelfTest proves the tenant identity before any token of it is written. It is skipped when
// the claim is Ready for its current generation, nothing was created or changed in this reconcile and
// no new token is to be handed out, so steady state asks the API server nothing. It runs with the token
// planCredentials minted when one is due (new claim, renewal, lost Secret), so the very token handed
// out is the one proven; otherwise (repaired objects of a Ready claim, a new generation) with a
// short-lived token minted for it alone.
func (r *NamespaceClaimReconciler) reconcileSelfTest(ctx context.Context, s *claimScope, plan *credentialsPlan) error {
	if s.repaired == 0 && readyFor(s.claim) && plan.token == nil {
		s.selfTestSkipped = true
		return nil
	}
	token := plan.token
	if token == nil {
		tok, err := r.issueToken(ctx, plan.sa, selfTestTokenTTL)
		if err != nil {
			return err
		}
		monitoring.SelfTestRequest(monitoring.ReviewToken)
		token = &tok
	}
	ctx, cancel := context.WithTimeout(ctx, tokenTimeout)
	defer cancel()
	res, err := r.selfTest(ctx, s, token.Value)
	if err != nil {
		return err
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

// selfTest enumerates what the token may do with two SelfSubjectRulesReviews: one in the claim's
// namespace (it must hold what the class grants and nothing more) and one in the requester's
// namespace, where the tenant has no binding (it shows what cluster-wide bindings give it). Every
// rule beyond that is checked against what every identity of the cluster has anyway (see
// sharedRules). A rules review cannot see a RoleBinding in a third namespace: the binding index
// finds those. Where a rules review answers incomplete (an authorizer that cannot list rules, such as
// a webhook), the self-test falls back to the SubjectAccessReview sample and says so.
func (r *NamespaceClaimReconciler) selfTest(ctx context.Context, s *claimScope, token string) (access.Result, error) {
	own, other := s.desired.Namespace.Name, s.claim.Namespace
	reviews, err := r.rulesReviews(ctx, token, own, other)
	if err != nil {
		return access.Result{}, err
	}
	var res access.Result
	if why := incompleteReview(reviews); why != "" || r.Bindings == nil {
		if why == "" {
			why = "no binding index to tell what every identity has"
		}
		res, err = r.accessReviews(ctx, s)
		res.Fallback = why
	} else {
		res, err = r.compareRules(ctx, s, reviews)
	}
	if err != nil {
		return access.Result{}, err
	}
	if r.Bindings != nil {
		// Grants a rules review of two namespaces cannot see: a binding made ahead of time, in some
		// other namespace or cluster-wide, for the tenant's user or its namespace's group.
		grants, err := r.Bindings.ForeignGrants(ctx, own)
		if err != nil {
			return access.Result{}, err
		}
		var fs []access.Failure
		for _, g := range grants {
			fs = append(fs, access.Failure{Grant: g.String()})
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
func (r *NamespaceClaimReconciler) rulesReviews(ctx context.Context, token string, namespaces ...string) ([]rulesReview, error) {
	c, err := authorizationclient.NewForConfig(r.tokenConfig(token))
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

// tokenConfig connects as the tenant: the operator's API server address and CA, the tenant's token,
// none of the operator's own credentials.
func (r *NamespaceClaimReconciler) tokenConfig(token string) *rest.Config {
	var cfg *rest.Config
	if r.restConfig != nil {
		cfg = rest.AnonymousClientConfig(r.restConfig)
	} else {
		cfg = &rest.Config{Host: r.Endpoint.Server, TLSClientConfig: rest.TLSClientConfig{CAData: r.Endpoint.CAData}}
	}
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
func (r *NamespaceClaimReconciler) compareRules(ctx context.Context, s *claimScope, reviews []rulesReview) (access.Result, error) {
	roles := roleRules{r: r, memo: map[rbacv1.RoleRef]map[string][]rbacv1.PolicyRule{}}
	must, res, err := r.classRules(ctx, s, &roles)
	if err != nil {
		return access.Result{}, err
	}
	shared, err := r.Bindings.SharedGrants(ctx)
	if err != nil {
		return access.Result{}, err
	}
	res.Note = r.reportSharedGrants(ctx, shared)
	tenant, err := r.Bindings.TenantBindings(ctx, s.desired.Namespace.Name)
	if err != nil {
		return access.Result{}, err
	}
	excess := map[string][]string{} // rule -> namespaces where it is in excess
	var order []string
	for _, rv := range reviews {
		got := access.RulesOf(rv.status)
		allowed, err := sharedRules(ctx, &roles, shared, rv.namespace)
		if err != nil {
			return access.Result{}, err
		}
		var cmp access.Comparison
		if rv.namespace == s.desired.Namespace.Name {
			cmp = access.Compare(got, must, allowed)
			for _, m := range cmp.Missing {
				res.Missing = append(res.Missing, access.Failure{Rule: access.RuleString(m) + " in namespace " + rv.namespace})
			}
		} else {
			// The tenant's own namespace watcher is cluster-scoped: it shows in every namespace.
			cmp = access.Compare(got, nil, append(allowed, s.desired.NamespaceWatcher.Rules...))
		}
		for _, x := range cmp.Excess {
			key := access.RuleString(x)
			if from, err := explain(ctx, &roles, tenant, x, rv.namespace); err != nil {
				return access.Result{}, err
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
		res.Excess = append(res.Excess, access.Failure{Rule: rule + where + from})
	}
	return res, nil
}

// classRules returns the rules the tenant must have in its namespace: the rules of every role the
// class binds to it there (the class's ClusterRole, the release Role, extra bindings naming it) and of
// its namespace watcher. A ClusterRole that does not exist is a missing permission in itself.
func (r *NamespaceClaimReconciler) classRules(ctx context.Context, s *claimScope, roles *roleRules) ([]rbacv1.PolicyRule, access.Result, error) {
	d := s.desired
	var must []rbacv1.PolicyRule
	var res access.Result
	for _, rb := range d.RoleBindings {
		if !namesTenant(rb.Subjects, d) {
			continue
		}
		if rb.RoleRef.Kind == roleKind && rb.RoleRef.Name == d.ReleaseRole.Name {
			must = append(must, d.ReleaseRole.Rules...)
			continue
		}
		rules, found, err := roles.get(ctx, rb.RoleRef, d.Namespace.Name)
		if err != nil {
			return nil, access.Result{}, err
		}
		if !found {
			res.Missing = append(res.Missing, access.Failure{Rule: fmt.Sprintf("%s %s, bound by RoleBinding %s/%s, does not exist", rb.RoleRef.Kind, rb.RoleRef.Name, d.Namespace.Name, rb.Name)})
		}
		must = append(must, rules...)
	}
	return append(must, d.NamespaceWatcher.Rules...), res, nil
}

// namesTenant reports whether subjects include the tenant: its ServiceAccount, its user, or one of its
// groups.
func namesTenant(subjects []rbacv1.Subject, d provision.Desired) bool {
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
		if access.Uncovered([]rbacv1.PolicyRule{rule}, rules) == nil {
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
func (r *NamespaceClaimReconciler) reportSharedGrants(ctx context.Context, shared []informers.SharedGrant) string {
	var names []string
	for _, g := range shared {
		if g.Default {
			continue
		}
		names = append(names, g.Binding())
		if !r.Bindings.ReportOnce(g) {
			continue
		}
		group := strings.TrimPrefix(g.Subject, "Group:")
		logf.FromContext(ctx).Info("A binding grants something to every identity of a group every tenant is in; not counted against claims",
			"binding", g.Binding(), "role", g.RoleRef.Kind+" "+g.RoleRef.Name, "group", group)
		if r.Recorder != nil {
			r.Recorder.Eventf(g.Object(), nil, corev1.EventTypeWarning, "GrantsEveryIdentity", "SelfTest",
				"%s grants %s %s to group %s: every identity nsclaim issues has it, so the self-test of claims does not count it", g.Binding(), g.RoleRef.Kind, g.RoleRef.Name, group)
		}
	}
	monitoring.SetClusterWideGrants(len(names))
	if len(names) == 0 {
		return ""
	}
	if len(names) > maxListedFailures {
		names = append(names[:maxListedFailures], fmt.Sprintf("and %d more", len(names)-maxListedFailures))
	}
	return "; not counted, as every identity has them: grants to every ServiceAccount or user by " + strings.Join(names, ", ")
}

// accessReviews is the fallback self-test: a sample of SubjectAccessReviews of the tenant's user and
// groups, for an authorizer that cannot list rules.
func (r *NamespaceClaimReconciler) accessReviews(ctx context.Context, s *claimScope) (access.Result, error) {
	ns := s.desired.Namespace.Name
	role := &rbacv1.ClusterRole{}
	var grants []rbacv1.PolicyRule
	if err := r.Get(ctx, types.NamespacedName{Name: s.desired.TenantClusterRole}, role); err == nil {
		grants = role.Rules
	} else if !apierrors.IsNotFound(err) {
		return access.Result{}, fmt.Errorf("reading ClusterRole %s: %w", s.desired.TenantClusterRole, err)
	}
	checks := access.Checks(ns, grants, []string{s.claim.Namespace, metav1.NamespaceDefault, metav1.NamespaceSystem})
	for range checks {
		monitoring.SelfTestRequest(monitoring.ReviewAccess)
	}
	return access.Verify(ctx, r.Client, access.Identity{User: s.desired.TenantUser, Groups: s.desired.TenantGroups}, checks, max(r.SelfTestConcurrency, 1))
}

// roleRules resolves the rules of roles, once per self-test.
type roleRules struct {
	r    *NamespaceClaimReconciler
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
		if err := rr.r.APIReader.Get(ctx, client.ObjectKey{Namespace: ns, Name: ref.Name}, role); err != nil {
			ok, err := kube.Found(err)
			return nil, ok, err
		}
		return role.Rules, true, nil
	}
	role := &rbacv1.ClusterRole{}
	if err := rr.r.Get(ctx, client.ObjectKey{Name: ref.Name}, role); err != nil {
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
			if err := rr.r.List(ctx, list, client.MatchingLabelsSelector{Selector: s}); err != nil {
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
