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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	authorizationclient "k8s.io/client-go/kubernetes/typed/authorization/v1"
	"k8s.io/client-go/rest"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/nsclaim/nsclaim-operator/internal/claimpolicy"
	"github.com/nsclaim/nsclaim-operator/internal/monitoring"
	"github.com/nsclaim/nsclaim-operator/internal/watchcache"
)

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
// class binds to it there (the class's ClusterRole, the shared release ClusterRole, extra bindings naming
// it) and of its namespace watcher. A ClusterRole that does not exist is a missing permission in itself.
func classRules(ctx context.Context, d *claimpolicy.Desired, roles *roleRules) ([]rbacv1.PolicyRule, Result, error) {
	var must []rbacv1.PolicyRule
	var res Result
	for _, rb := range d.RoleBindings {
		if !namesTenant(rb.Subjects, *d) {
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
func sharedRules(ctx context.Context, roles *roleRules, shared []watchcache.SharedGrant, ns string) ([]rbacv1.PolicyRule, error) {
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
func explain(ctx context.Context, roles *roleRules, tenant []watchcache.SharedGrant, rule rbacv1.PolicyRule, ns string) (string, error) {
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
func (t *Tester) reportSharedGrants(ctx context.Context, shared []watchcache.SharedGrant) string {
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
