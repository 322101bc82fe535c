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

package namespacepool

import (
	"strings"
	"testing"
)

func TestPooledTampered(t *testing.T) {
	for _, tc := range []struct {
		name string
		c    pooledContents
		want string // a substring of the reason; "" for an intact namespace
	}{
		{"as the pool made it", pooledContents{serviceAccounts: []string{"default"}}, ""},
		{"before kube-controller-manager made default", pooledContents{}, ""},
		{"a planted RoleBinding", pooledContents{roleBindings: []string{"backdoor"}, serviceAccounts: []string{"default"}}, "RoleBinding backdoor"},
		{"a tenant ServiceAccount made before the handout", pooledContents{serviceAccounts: []string{"default", "nsclaim-tenant"}}, "ServiceAccount nsclaim-tenant"},
		{"another ServiceAccount", pooledContents{serviceAccounts: []string{"default", "miner"}}, "ServiceAccount miner"},
		{"a Pod", pooledContents{pods: []string{"sidecar"}}, "Pod sidecar"},
		{"a grant made ahead to its tenant", pooledContents{tenantGrants: []string{"RoleBinding other/view-pooled"}}, "RoleBinding other/view-pooled names its tenant"},
	} {
		got := pooledTampered(tc.c)
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("%s: pooledTampered = %q, want %q", tc.name, got, tc.want)
		}
	}
}
