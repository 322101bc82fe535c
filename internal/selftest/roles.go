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

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nsclaim/nsclaim-operator/internal/kube"
)

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
