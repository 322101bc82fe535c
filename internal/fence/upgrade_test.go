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

package fence

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/util/yaml"
)

// writeVerbs are the verbs a fence rule (CREATE, UPDATE, DELETE) can refuse.
var writeVerbs = []string{"create", "update", "patch", "delete", "deletecollection", "*"}

// readClusterRole reads a ClusterRole from a file of the repository.
func readClusterRole(t *testing.T, path ...string) *rbacv1.ClusterRole {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(append([]string{"..", ".."}, path...)...))
	if err != nil {
		t.Fatal(err)
	}
	role := &rbacv1.ClusterRole{}
	if err := yaml.UnmarshalStrict(data, role); err != nil {
		t.Fatalf("%s: %v", filepath.Join(path...), err)
	}
	return role
}

// writes lists the group/resource pairs rules grant a write verb on.
func writes(rules []rbacv1.PolicyRule) [][2]string {
	var out [][2]string
	for _, r := range rules {
		if !slices.ContainsFunc(r.Verbs, func(v string) bool { return slices.Contains(writeVerbs, v) }) {
			continue
		}
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				out = append(out, [2]string{g, res})
			}
		}
	}
	return out
}

// matches reports whether policy's resource rules match writes of resource in group.
func matches(policy *admissionregistrationv1.ValidatingAdmissionPolicy, group, resource string) bool {
	for _, r := range policy.Spec.MatchConstraints.ResourceRules {
		if (slices.Contains(r.APIGroups, group) || slices.Contains(r.APIGroups, "*")) &&
			(slices.Contains(r.Resources, resource) || slices.Contains(r.Resources, "*")) {
			return true
		}
	}
	return false
}

// TestUpgradeOpensNoRights: upgrades never open rights (issue 39). The manager role that install.yaml
// and the OLM bundle carry grants no write that this release's fence confines and the previous
// release's does not: with this release's install.yaml and the previous release's fence, every write
// the operator's token may make to a kind the fence is about is still confined. Such rights ship in
// config/fence/base instead (sleep-role.yaml), and every write that role grants is confined by this
// release's fence, which comes in the same apply.
func TestUpgradeOpensNoRights(t *testing.T) {
	want, err := Shipped()
	if err != nil {
		t.Fatal(err)
	}
	previous, err := Previous()
	if err != nil {
		t.Fatal(err)
	}
	manager := readClusterRole(t, "config", "rbac", "role.yaml")
	for _, w := range writes(manager.Rules) {
		if matches(want.Policy, w[0], w[1]) && !matches(previous.Policy, w[0], w[1]) {
			t.Errorf("config/rbac/role.yaml grants writes of %q in group %q, which the fence of release %s does not confine:"+
				" ship the right with this release's fence (config/fence/base, like sleep-role.yaml), not in the manager role", w[1], w[0], previous.Release)
		}
	}
	sleep := readClusterRole(t, "config", "fence", "base", "sleep-role.yaml")
	if len(writes(sleep.Rules)) == 0 {
		t.Fatal("config/fence/base/sleep-role.yaml grants no write: the test reads the wrong file")
	}
	for _, w := range writes(sleep.Rules) {
		if !matches(want.Policy, w[0], w[1]) {
			t.Errorf("config/fence/base/sleep-role.yaml grants writes of %q in group %q, which this release's fence does not confine", w[1], w[0])
		}
		if slices.ContainsFunc(manager.Rules, func(r rbacv1.PolicyRule) bool {
			return slices.Contains(r.APIGroups, w[0]) && slices.Contains(r.Resources, w[1])
		}) {
			t.Errorf("config/rbac/role.yaml grants %q in group %q too: it reaches the cluster without the fence", w[1], w[0])
		}
	}
}
