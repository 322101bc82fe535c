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

package claimpolicy

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// QuotaPending says what a namespace waits for before the quota want is in force, or "" when it is:
// have is the quota as observed (nil when not observed yet), and its status.hard must hold every limit
// of want's spec.hard, as kube-controller-manager writes it (together with status.used) once it has
// counted the namespace's usage for that spec. A claim's namespace and a pooled one are usable by the
// same rule.
func QuotaPending(want, have *corev1.ResourceQuota) string {
	waiting := func(what string) string {
		return fmt.Sprintf("Waiting for kube-controller-manager to compute the status of ResourceQuota %s (%s)", want.Name, what)
	}
	if have == nil {
		return waiting("not observed yet")
	}
	var stale []string
	for name, q := range want.Spec.Hard {
		got, ok := have.Status.Hard[name]
		if !ok || got.Cmp(q) != 0 {
			stale = append(stale, string(name))
		}
	}
	for name := range have.Status.Hard {
		if _, ok := want.Spec.Hard[name]; !ok {
			stale = append(stale, string(name))
		}
	}
	if len(stale) == 0 {
		return ""
	}
	slices.Sort(stale)
	return waiting("status.hard does not match spec.hard yet for " + strings.Join(stale, ", "))
}
