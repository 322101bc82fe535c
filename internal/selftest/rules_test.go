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
	"reflect"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
)

func res(verbs, groups, resources, names []string) rbacv1.PolicyRule {
	return rbacv1.PolicyRule{Verbs: verbs, APIGroups: groups, Resources: resources, ResourceNames: names}
}

func urls(verbs []string, u ...string) rbacv1.PolicyRule {
	return rbacv1.PolicyRule{Verbs: verbs, NonResourceURLs: u}
}

func l(s ...string) []string { return s }

func ruleStrings(rs []rbacv1.PolicyRule) []string {
	if len(rs) == 0 {
		return nil
	}
	out := make([]string, 0, len(rs))
	for _, r := range rs {
		out = append(out, RuleString(r))
	}
	return out
}

func TestUncovered(t *testing.T) {
	for name, tc := range map[string]struct {
		rules, by []rbacv1.PolicyRule
		want      []string
	}{
		"same rule": {
			rules: []rbacv1.PolicyRule{res(l("get", "list"), l(""), l("pods"), nil)},
			by:    []rbacv1.PolicyRule{res(l("get", "list"), l(""), l("pods"), nil)},
		},
		"split over two rules": {
			rules: []rbacv1.PolicyRule{res(l("get", "list"), l("", "apps"), l("pods", "deployments"), nil)},
			by:    []rbacv1.PolicyRule{res(l("get"), l("", "apps"), l("pods", "deployments"), nil), res(l("list"), l("", "apps"), l("*"), nil)},
		},
		"one verb missing": {
			rules: []rbacv1.PolicyRule{res(l("get", "delete", "list"), l(""), l("configmaps"), nil)},
			by:    []rbacv1.PolicyRule{res(l("get"), l(""), l("configmaps"), nil)},
			want:  l("delete,list configmaps"),
		},
		"apiGroup empty is the core group, not any group": {
			rules: []rbacv1.PolicyRule{res(l("get"), l("apps"), l("deployments"), nil)},
			by:    []rbacv1.PolicyRule{res(l("get"), l(""), l("deployments"), nil)},
			want:  l("get deployments.apps"),
		},
		"wildcards cover everything in their place": {
			rules: []rbacv1.PolicyRule{res(l("get", "*"), l("apps", "*"), l("deployments", "*", "pods/log"), l("x"))},
			by:    []rbacv1.PolicyRule{res(l("*"), l("*"), l("*"), nil)},
		},
		"a wildcard is covered only by a wildcard": {
			rules: []rbacv1.PolicyRule{res(l("*"), l(""), l("secrets"), nil), res(l("get"), l("*"), l("secrets"), nil), res(l("get"), l(""), l("*"), nil)},
			by:    []rbacv1.PolicyRule{res(l("get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"), l("", "apps", "batch"), l("secrets", "pods", "configmaps"), nil)},
			want:  l("* secrets", "get *", "get secrets.*"),
		},
		"resourceNames narrow a rule": {
			rules: []rbacv1.PolicyRule{res(l("get"), l(""), l("namespaces"), l("team-a")), res(l("delete"), l(""), l("namespaces"), nil)},
			by:    []rbacv1.PolicyRule{res(l("get", "delete"), l(""), l("namespaces"), l("team-a"))},
			want:  l("delete namespaces"),
		},
		"a rule without names covers named ones": {
			rules: []rbacv1.PolicyRule{res(l("get"), l(""), l("namespaces"), l("a", "b"))},
			by:    []rbacv1.PolicyRule{res(l("get"), l(""), l("namespaces"), nil)},
		},
		"other names are not covered": {
			rules: []rbacv1.PolicyRule{res(l("get"), l(""), l("namespaces"), l("a", "b"))},
			by:    []rbacv1.PolicyRule{res(l("get"), l(""), l("namespaces"), l("a"))},
			want:  l("get namespaces [b]"),
		},
		"subresources are their own resources": {
			rules: []rbacv1.PolicyRule{res(l("get"), l(""), l("pods", "pods/log", "pods/exec"), nil)},
			by:    []rbacv1.PolicyRule{res(l("get"), l(""), l("pods"), nil), res(l("get"), l(""), l("*/log"), nil)},
			want:  l("get pods/exec"),
		},
		"*/sub covers the subresource of every resource, not the resource": {
			rules: []rbacv1.PolicyRule{res(l("update"), l("apps"), l("deployments/scale", "*/scale", "deployments"), nil)},
			by:    []rbacv1.PolicyRule{res(l("update"), l("apps"), l("*/scale"), nil)},
			want:  l("update deployments.apps"),
		},
		"nonResourceURLs exact and prefix": {
			rules: []rbacv1.PolicyRule{urls(l("get"), "/healthz", "/healthz/etcd", "/api/*", "/version", "/metrics")},
			by:    []rbacv1.PolicyRule{urls(l("get"), "/healthz*", "/a*", "/version")},
			want:  l("get /metrics"),
		},
		"nonResourceURL star covers every URL, only its verbs": {
			rules: []rbacv1.PolicyRule{urls(l("get", "post"), "/anything", "*")},
			by:    []rbacv1.PolicyRule{urls(l("get"), "*")},
			want:  l("post *", "post /anything"),
		},
		"resource rules do not cover URLs nor the reverse": {
			rules: []rbacv1.PolicyRule{urls(l("get"), "/api"), res(l("get"), l(""), l("pods"), nil)},
			by:    []rbacv1.PolicyRule{res(l("*"), l("*"), l("*"), nil)},
			want:  l("get /api"),
		},
		"nothing covers": {
			rules: []rbacv1.PolicyRule{res(l("get"), l(""), l("pods"), nil)},
			want:  l("get pods"),
		},
	} {
		t.Run(name, func(t *testing.T) {
			got := ruleStrings(Uncovered(tc.rules, tc.by))
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Uncovered = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestCompare(t *testing.T) {
	class := []rbacv1.PolicyRule{
		res(l("create", "get", "list"), l(""), l("configmaps"), nil),
		res(l("get", "delete"), l(""), l("namespaces"), l("team-a")),
	}
	baseline := []rbacv1.PolicyRule{
		res(l("create"), l("authorization.k8s.io"), l("selfsubjectaccessreviews", "selfsubjectrulesreviews"), nil),
		urls(l("get"), "/healthz", "/version"),
	}
	for name, tc := range map[string]struct {
		got                    []rbacv1.PolicyRule
		wantMissing, wantExtra []string
	}{
		"exactly the class and the baseline": {got: append(append([]rbacv1.PolicyRule{}, class...), baseline...)},
		"the baseline may be absent":         {got: class},
		"a lost rule is missing": {
			got:         []rbacv1.PolicyRule{res(l("create", "get"), l(""), l("configmaps"), nil), class[1]},
			wantMissing: l("list configmaps"),
		},
		"more than the class is excess": {
			got:       append([]rbacv1.PolicyRule{res(l("get", "list"), l(""), l("secrets"), nil), urls(l("get"), "/metrics")}, class...),
			wantExtra: l("get /metrics", "get,list secrets"),
		},
		"a wider rule is excess even when it contains the class": {
			got:       []rbacv1.PolicyRule{res(l("*"), l("*"), l("*"), nil)},
			wantExtra: l("* *.*"),
		},
		"the whole namespace instead of the own one": {
			got:         []rbacv1.PolicyRule{class[0], res(l("get", "delete"), l(""), l("namespaces"), nil)},
			wantExtra:   l("delete,get namespaces"),
			wantMissing: nil,
		},
	} {
		t.Run(name, func(t *testing.T) {
			c := Compare(tc.got, class, baseline)
			if got := ruleStrings(c.Missing); !reflect.DeepEqual(got, tc.wantMissing) {
				t.Errorf("Missing = %q, want %q", got, tc.wantMissing)
			}
			if got := ruleStrings(c.Excess); !reflect.DeepEqual(got, tc.wantExtra) {
				t.Errorf("Excess = %q, want %q", got, tc.wantExtra)
			}
		})
	}
}

func TestRulesOf(t *testing.T) {
	st := authorizationv1.SubjectRulesReviewStatus{
		ResourceRules:    []authorizationv1.ResourceRule{{Verbs: l("get"), APIGroups: l(""), Resources: l("pods"), ResourceNames: l("p")}},
		NonResourceRules: []authorizationv1.NonResourceRule{{Verbs: l("get"), NonResourceURLs: l("/version")}},
	}
	got := ruleStrings(RulesOf(st))
	if want := l("get pods [p]", "get /version"); !reflect.DeepEqual(got, want) {
		t.Errorf("RulesOf = %q, want %q", got, want)
	}
}
