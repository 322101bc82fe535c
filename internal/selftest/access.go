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

// The fallback self-test and the creator's: a sample of SubjectAccessReviews (Checks, Verify), for an
// authorizer that cannot list rules and for an identity the operator holds no token of.

package selftest

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"

	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Check is one question to the authorizer and the answer the self-test expects.
type Check struct {
	Attributes authorizationv1.ResourceAttributes
	Allowed    bool
}

// String describes the check for a condition message, for example
// "create configmaps in namespace kube-system".
func (c Check) String() string {
	a := c.Attributes
	res := a.Resource
	if a.Group != "" {
		res += "." + a.Group
	}
	if a.Subresource != "" {
		res += "/" + a.Subresource
	}
	if a.Name != "" {
		res += " " + a.Name
	}
	where := "cluster-wide"
	if a.Namespace != "" {
		where = "in namespace " + a.Namespace
	}
	return fmt.Sprintf("%s %s %s", a.Verb, res, where)
}

// Identity is the user and groups a token authenticates as (and, for a claim's stamped creator, its
// UID and extra information, which authorizers such as webhooks may consult).
type Identity struct {
	User   string
	Groups []string
	UID    string
	Extra  map[string][]string
}

// Checks returns the self-test for an identity in namespace ns holding the rules of its ClusterRole
// (grants) there. foreign are namespaces that the identity must not reach (for example the claim's own
// namespace, default and kube-system). Positive checks take one verb on one resource of each rule
// (a RoleBinding grants a role's rules whole, so one question per rule proves each rule reached the
// authorizer; one per resource cost ten times the SubjectAccessReviews and proved nothing more), plus
// reading and deleting ns itself; negative checks cover reading Secrets and writing
// objects in each foreign namespace, and writing cluster-scoped objects, other namespaces included.
func Checks(ns string, grants []rbacv1.PolicyRule, foreign []string) []Check {
	var out []Check
	for _, r := range grants {
		if c, ok := ruleCheck(ns, r); ok {
			out = append(out, c)
		}
	}
	out = append(out,
		Check{Allowed: true, Attributes: authorizationv1.ResourceAttributes{Namespace: ns, Verb: "get", Resource: "namespaces", Name: ns}},
		Check{Allowed: true, Attributes: authorizationv1.ResourceAttributes{Namespace: ns, Verb: "delete", Resource: "namespaces", Name: ns}},
		// Watching its own namespace by name (cluster-scoped, as kubectl's wait for a deletion does).
		Check{Allowed: true, Attributes: authorizationv1.ResourceAttributes{Verb: "watch", Resource: "namespaces", Name: ns}},
	)
	for _, f := range foreign {
		if f == "" || f == ns {
			continue
		}
		for _, a := range []authorizationv1.ResourceAttributes{
			{Verb: "get", Resource: "secrets"},
			{Verb: "list", Resource: "secrets"},
			{Verb: "create", Resource: "configmaps"},
			{Verb: "create", Resource: "pods"},
			{Verb: "create", Resource: "rolebindings", Group: rbacv1.GroupName},
			{Verb: "create", Resource: "serviceaccounts", Subresource: "token"},
			{Verb: "delete", Resource: "namespaces", Name: f},
		} {
			a.Namespace = f
			out = append(out, Check{Allowed: false, Attributes: a})
		}
	}
	for _, a := range []authorizationv1.ResourceAttributes{
		{Verb: "create", Resource: "namespaces"},
		{Verb: "update", Resource: "namespaces", Name: ns},
		{Verb: "list", Resource: "namespaces"},
		{Verb: "create", Resource: "clusterrolebindings", Group: rbacv1.GroupName},
		{Verb: "create", Resource: "clusterroles", Group: rbacv1.GroupName},
		{Verb: "create", Resource: "customresourcedefinitions", Group: "apiextensions.k8s.io"},
		{Verb: "create", Resource: "persistentvolumes"},
		{Verb: "update", Resource: "nodes"},
		{Verb: "list", Resource: "secrets"},
		{Verb: "create", Resource: "namespaceclaims", Group: "tenancy.nsclaim.dev"},
		{Verb: "update", Resource: "namespaceclasses", Group: "tenancy.nsclaim.dev"},
	} {
		out = append(out, Check{Allowed: false, Attributes: a})
	}
	return dedupe(out)
}

// ruleCheck is the positive check for one rule: its first verb on its first concrete group and
// resource. Rules naming resourceNames, and wildcard-only rules, are skipped.
func ruleCheck(ns string, r rbacv1.PolicyRule) (Check, bool) {
	if len(r.ResourceNames) > 0 || len(r.Verbs) == 0 || r.Verbs[0] == rbacv1.VerbAll {
		return Check{}, false
	}
	for _, g := range r.APIGroups {
		if g == rbacv1.APIGroupAll {
			continue
		}
		for _, res := range r.Resources {
			if res == rbacv1.ResourceAll {
				continue
			}
			name, sub, _ := strings.Cut(res, "/")
			return Check{Allowed: true, Attributes: authorizationv1.ResourceAttributes{
				Namespace: ns, Verb: r.Verbs[0], Group: g, Resource: name, Subresource: sub}}, true
		}
	}
	return Check{}, false
}

func dedupe(in []Check) []Check {
	seen := map[Check]bool{}
	out := in[:0]
	for _, c := range in {
		if !seen[c] {
			seen[c] = true
			out = append(out, c)
		}
	}
	return out
}

// Failure is a check whose answer was not the expected one, or (Grant set) a binding that gives the
// identity rights outside its namespace.
type Failure struct {
	Check
	Reason string
	// Grant describes a binding found outside the identity's namespace, for example
	// "RoleBinding team-b/x grants ClusterRole edit to User:system:serviceaccount:ns:nsclaim-tenant".
	Grant string
	// Rule describes a rule a rules review found in excess or missing, for example
	// "get,list secrets in namespace team-a (ClusterRoleBinding x)".
	Rule string
}

// String describes the failure for a condition message.
func (f Failure) String() string {
	switch {
	case f.Grant != "":
		return f.Grant
	case f.Rule != "":
		return f.Rule
	}
	return f.Check.String()
}

// Result of a self-test: Missing are permissions the identity should have and lacks; Excess are
// permissions it must not have and has.
type Result struct {
	Missing []Failure
	Excess  []Failure
	// Fallback says why the self-test used SubjectAccessReviews instead of rules reviews; empty when
	// the rules reviews answered.
	Fallback string
	// Note is said in the condition of a passing self-test (grants to every identity, not counted).
	Note string
}

// Method says how the result was reached, for a condition message.
func (r Result) Method() string {
	if r.Fallback != "" {
		return "a sample of SubjectAccessReviews (" + r.Fallback + ")"
	}
	return "SelfSubjectRulesReviews made with the issued token"
}

// OK reports whether every check gave the expected answer.
func (r Result) OK() bool { return len(r.Missing) == 0 && len(r.Excess) == 0 }

// Summary lists up to max failures of a kind for a condition message.
func Summary(fs []Failure, max int) string {
	var parts []string
	for i, f := range fs {
		if i == max {
			parts = append(parts, fmt.Sprintf("and %d more", len(fs)-max))
			break
		}
		parts = append(parts, f.String())
	}
	return strings.Join(parts, "; ")
}

// Verify asks the API server a SubjectAccessReview for every check, concurrency at a time, and returns
// the checks that did not answer as expected, in a stable order.
func Verify(ctx context.Context, c client.Client, id Identity, checks []Check, concurrency int) (Result, error) {
	var (
		mu     sync.Mutex
		res    Result
		first  error
		wg     sync.WaitGroup
		tokens = make(chan struct{}, max(concurrency, 1))
	)
	for _, chk := range checks {
		wg.Add(1)
		tokens <- struct{}{}
		go func() {
			defer func() { <-tokens; wg.Done() }()
			attrs := chk.Attributes
			sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
				User: id.User, Groups: id.Groups, UID: id.UID, Extra: extraValues(id.Extra), ResourceAttributes: &attrs}}
			err := c.Create(ctx, sar)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil:
				if first == nil {
					first = fmt.Errorf("SubjectAccessReview for %q: %w", chk.String(), err)
				}
			case sar.Status.Allowed && !chk.Allowed:
				res.Excess = append(res.Excess, Failure{Check: chk, Reason: sar.Status.Reason})
			case !sar.Status.Allowed && chk.Allowed:
				res.Missing = append(res.Missing, Failure{Check: chk, Reason: sar.Status.Reason})
			}
		}()
	}
	wg.Wait()
	if first != nil {
		return Result{}, first
	}
	for _, fs := range [][]Failure{res.Missing, res.Excess} {
		sort.Slice(fs, func(i, j int) bool { return fs[i].String() < fs[j].String() })
	}
	return res, nil
}

// extraValues converts an identity's extra information to a SubjectAccessReview's.
func extraValues(extra map[string][]string) map[string]authorizationv1.ExtraValue {
	if len(extra) == 0 {
		return nil
	}
	out := make(map[string]authorizationv1.ExtraValue, len(extra))
	for k, v := range extra {
		out[k] = authorizationv1.ExtraValue(v)
	}
	return out
}
