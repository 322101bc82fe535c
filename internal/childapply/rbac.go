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

package childapply

import "reflect"

// rbacContent are the fields of each RBAC kind that say what it grants. Their lists (rules, subjects)
// are atomic: an apply replaces them whole, whichever field manager set them before.
var rbacContent = map[string][]string{
	"Role":               {"rules"},
	"ClusterRole":        {"rules", "aggregationRule"},
	"RoleBinding":        {"roleRef", "subjects"},
	"ClusterRoleBinding": {"roleRef", "subjects"},
}

// rbacUpToDate reports whether current, an object of kind kind that exists, needs no apply although
// childAction asks for one: kind is an RBAC kind, what it grants is exactly what the apply configuration
// desired grants (the fields of rbacContent equal, none more, none less), and it carries every label,
// annotation and owner reference desired sets but the claimpolicy.AppliedAnnotation digest (digestOnly).
// The apply would then only set the digest: missing on a child another client made with nsclaim's
// labels, or stale after an upgrade changed how it is taken. Every RBAC write by the operator runs
// kube-apiserver's escalation check unless the operator may bind the role (docs/benchmarks-history.md), so such
// an apply is not sent. The digest exists to find fields nsclaim no longer sets; an RBAC object has none
// left over once its content is equal, since its lists are atomic.
func rbacUpToDate(kind string, desired, current map[string]any) bool {
	return rbacGrantsEqual(kind, desired, current) && digestOnly(desired, current)
}

// rbacGrantsEqual reports whether current, an object of kind kind that exists, is of an RBAC kind and
// grants exactly what desired grants (the fields of rbacContent equal): an apply then changes its
// metadata only, which changes nothing anyone may do.
func rbacGrantsEqual(kind string, desired, current map[string]any) bool {
	fields, ok := rbacContent[kind]
	if !ok || current == nil {
		return false
	}
	for _, f := range fields {
		if !reflect.DeepEqual(desired[f], current[f]) {
			return false
		}
	}
	return true
}
