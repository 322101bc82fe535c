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
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
)

func TestChecks(t *testing.T) {
	grants := []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"configmaps", "pods", "pods/log"}, Verbs: []string{"create", "get"}},
		{APIGroups: []string{"*", "apps"}, Resources: []string{"*", "deployments"}, Verbs: []string{"update"}},
		{APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{"one"}, Verbs: []string{"get"}},
		{APIGroups: []string{""}, Resources: []string{"services"}, Verbs: []string{"*"}},
	}
	checks := Checks("ns-a", grants, []string{"req", "default", "ns-a", ""})
	var pos, neg int
	for _, c := range checks {
		a := c.Attributes
		if c.Allowed {
			pos++
			// Only its own Namespace object, by name, may be asked about cluster-scoped.
			if a.Namespace != "ns-a" && (a.Resource != "namespaces" || a.Name != "ns-a") {
				t.Errorf("a positive check outside the namespace: %s", c)
			}
			continue
		}
		neg++
		if a.Namespace == "ns-a" {
			t.Errorf("a negative check inside the namespace: %s", c)
		}
	}
	// One per usable rule (configmaps, deployments), plus get and delete of the namespace itself, and
	// watching it by name (kubectl's wait for its deletion).
	if pos != 5 {
		t.Errorf("positive checks: got %d, want 5: %v", pos, checks)
	}
	want := map[string]bool{"create configmaps in namespace ns-a": true, "update deployments.apps in namespace ns-a": true,
		"get namespaces ns-a in namespace ns-a": true, "delete namespaces ns-a in namespace ns-a": true,
		"watch namespaces ns-a cluster-wide": true}
	for _, c := range checks {
		if c.Allowed && !want[c.String()] {
			t.Errorf("unexpected positive check %s", c)
		}
	}
	// Seven per foreign namespace (req, default) and eleven cluster-wide.
	if neg != 2*7+11 {
		t.Errorf("negative checks: got %d, want %d", neg, 2*7+11)
	}
}

func TestResultOK(t *testing.T) {
	r := Result{}
	if !r.OK() {
		t.Error("an empty result is not OK")
	}
	r.Excess = []Failure{{Check: Check{}}}
	if r.OK() {
		t.Error("a result with excess permissions is OK")
	}
	r = Result{Missing: []Failure{{Check: Check{Allowed: true}}}}
	if r.OK() {
		t.Error("a result with missing permissions is OK")
	}
}

func TestSummary(t *testing.T) {
	failure := func(verb, resource, ns string) Failure {
		return Failure{Check: Check{Attributes: authorizationv1.ResourceAttributes{Verb: verb, Resource: resource, Namespace: ns}},
			Reason: "not written into the summary"}
	}
	three := []Failure{
		failure("get", "secrets", "kube-system"),
		failure("create", "pods", "default"),
		failure("create", "namespaces", ""),
	}
	for _, tc := range []struct {
		name string
		fs   []Failure
		max  int
		want string
	}{
		{"no failures", nil, 3, ""},
		{"no failures, no room", []Failure{}, 0, ""},
		{"one", three[:1], 3, "get secrets in namespace kube-system"},
		{"all fit", three, 3, "get secrets in namespace kube-system; create pods in namespace default; create namespaces cluster-wide"},
		{"room for more", three, 5, "get secrets in namespace kube-system; create pods in namespace default; create namespaces cluster-wide"},
		{"cut after one", three, 1, "get secrets in namespace kube-system; and 2 more"},
		{"cut after two", three, 2, "get secrets in namespace kube-system; create pods in namespace default; and 1 more"},
		{"none listed", three, 0, "and 3 more"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Summary(tc.fs, tc.max); got != tc.want {
				t.Errorf("Summary(%d failures, %d) = %q, want %q", len(tc.fs), tc.max, got, tc.want)
			}
		})
	}
}
