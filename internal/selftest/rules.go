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
	"slices"
	"sort"
	"strings"

	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
)

// RulesOf turns the answer of a SelfSubjectRulesReview into policy rules (resource rules first, then
// non-resource rules), so it compares with the rules of Roles and ClusterRoles.
func RulesOf(st authorizationv1.SubjectRulesReviewStatus) []rbacv1.PolicyRule {
	out := make([]rbacv1.PolicyRule, 0, len(st.ResourceRules)+len(st.NonResourceRules))
	for _, r := range st.ResourceRules {
		out = append(out, rbacv1.PolicyRule{Verbs: r.Verbs, APIGroups: r.APIGroups, Resources: r.Resources, ResourceNames: r.ResourceNames})
	}
	for _, r := range st.NonResourceRules {
		out = append(out, rbacv1.PolicyRule{Verbs: r.Verbs, NonResourceURLs: r.NonResourceURLs})
	}
	return out
}

// atom is one permission a rule gives: a verb on a resource of a group, on one object name ("" for
// every name), or a verb on a non-resource URL. Wildcards stay wildcards: an atom "*" is only covered
// by a rule that has "*" there too, so a wildcard grant is never mistaken for a list of names.
type atom struct {
	verb, group, resource, name string
	url                         string
}

// atoms expands a rule into its atoms.
func atoms(r rbacv1.PolicyRule) []atom {
	names := r.ResourceNames
	if len(names) == 0 {
		names = []string{""}
	}
	out := make([]atom, 0, len(r.Verbs)*(len(r.NonResourceURLs)+len(r.APIGroups)*len(r.Resources)*len(names)))
	for _, v := range r.Verbs {
		for _, u := range r.NonResourceURLs {
			out = append(out, atom{verb: v, url: u})
		}
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				for _, n := range names {
					out = append(out, atom{verb: v, group: g, resource: res, name: n})
				}
			}
		}
	}
	return out
}

// covers reports whether rule r grants everything atom a stands for. It follows the RBAC authorizer's
// matching (k8s.io/kubernetes/pkg/apis/rbac/v1 evaluation helpers), lifted from requests to patterns:
// "*" covers everything in its place; a resource "*/sub" covers the subresource sub of every resource;
// a rule without resourceNames covers every name, one with names covers only those names (and never
// "every name"); a non-resource URL "prefix*" covers every URL (or URL pattern) that starts with prefix.
func covers(r rbacv1.PolicyRule, a atom) bool {
	if !matches(r.Verbs, a.verb, rbacv1.VerbAll) {
		return false
	}
	if a.url != "" {
		for _, u := range r.NonResourceURLs {
			if u == rbacv1.NonResourceAll || u == a.url || (strings.HasSuffix(u, "*") && strings.HasPrefix(a.url, strings.TrimSuffix(u, "*"))) {
				return true
			}
		}
		return false
	}
	if !matches(r.APIGroups, a.group, rbacv1.APIGroupAll) || !coversResource(r.Resources, a.resource) {
		return false
	}
	return len(r.ResourceNames) == 0 || (a.name != "" && slices.Contains(r.ResourceNames, a.name))
}

func matches(have []string, want, all string) bool {
	return slices.Contains(have, all) || slices.Contains(have, want)
}

func coversResource(have []string, want string) bool {
	if matches(have, want, rbacv1.ResourceAll) {
		return true
	}
	if _, sub, ok := strings.Cut(want, "/"); ok {
		return slices.Contains(have, "*/"+sub)
	}
	return false
}

// Uncovered returns what rules grant that none of by grants, as rules (one per group, resource and
// names, with the verbs that are not covered), sorted by their String. Nothing uncovered gives nil.
func Uncovered(rules, by []rbacv1.PolicyRule) []rbacv1.PolicyRule {
	type key struct{ group, resource, name, url string }
	verbs := map[key][]string{}
	for _, r := range rules {
		for _, a := range atoms(r) {
			if slices.ContainsFunc(by, func(b rbacv1.PolicyRule) bool { return covers(b, a) }) {
				continue
			}
			k := key{group: a.group, resource: a.resource, name: a.name, url: a.url}
			if !slices.Contains(verbs[k], a.verb) {
				verbs[k] = append(verbs[k], a.verb)
			}
		}
	}
	out := make([]rbacv1.PolicyRule, 0, len(verbs))
	for k, vs := range verbs {
		sort.Strings(vs)
		r := rbacv1.PolicyRule{Verbs: vs}
		if k.url != "" {
			r.NonResourceURLs = []string{k.url}
		} else {
			r.APIGroups, r.Resources = []string{k.group}, []string{k.resource}
			if k.name != "" {
				r.ResourceNames = []string{k.name}
			}
		}
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return RuleString(out[i]) < RuleString(out[j]) })
	if len(out) == 0 {
		return nil
	}
	return out
}

// RuleString describes a rule for a condition message, kubectl-style: "get,list secrets",
// "create deployments.apps", "get namespaces [team-a]", "get /healthz", "* *.*".
func RuleString(r rbacv1.PolicyRule) string {
	verbs := strings.Join(r.Verbs, ",")
	if len(r.NonResourceURLs) > 0 {
		return verbs + " " + strings.Join(r.NonResourceURLs, ",")
	}
	var res []string
	for _, g := range r.APIGroups {
		for _, x := range r.Resources {
			if g != "" {
				x += "." + g
			}
			res = append(res, x)
		}
	}
	s := verbs + " " + strings.Join(res, ",")
	if len(r.ResourceNames) > 0 {
		s += " [" + strings.Join(r.ResourceNames, ",") + "]"
	}
	return s
}

// Comparison is what a rules review found against what was expected.
type Comparison struct {
	// Missing are rules the identity must have and lacks.
	Missing []rbacv1.PolicyRule
	// Excess are rules the identity has beyond what it may have.
	Excess []rbacv1.PolicyRule
}

// Compare checks the rules an identity has (got, from a rules review) against the rules it must have
// (must: what its class grants) and the rules it may have on top of them (allowed: what every
// identity of the cluster has).
func Compare(got, must, allowed []rbacv1.PolicyRule) Comparison {
	return Comparison{
		Missing: Uncovered(must, got),
		Excess:  Uncovered(got, append(slices.Clip(must), allowed...)),
	}
}
