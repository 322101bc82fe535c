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

package budget

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
)

// Status is budget b's status, derived from the charges of the namespaces it covers (allocated,
// Terminating and sleeping ones included) and the claims that wait for it: allocated, available (for
// the limits set; claims is the limit when it sets none), queued, the oldest waiting claim's creation,
// and Ready (Available; BudgetExhausted while a claim waits or no claim is left). Conditions keep
// their transition time when their status does not change.
func Status(b *tenancyv1alpha1.NamespaceBudget, allocated []Charge, queued []*tenancyv1alpha1.NamespaceClaim, now time.Time) tenancyv1alpha1.NamespaceBudgetStatus {
	used := Usage(allocated, "")
	available := Available(b.Spec.Limits, used)
	st := tenancyv1alpha1.NamespaceBudgetStatus{ObservedGeneration: b.Generation, Allocated: used, Available: available,
		Queued: int32(len(queued)), Conditions: append([]metav1.Condition(nil), b.Status.Conditions...)}
	if available.Claims < 0 {
		st.Available.Claims = 0
	}
	for _, c := range queued {
		if st.OldestQueuedSince == nil || c.CreationTimestamp.Before(st.OldestQueuedSince) {
			since := c.CreationTimestamp
			st.OldestQueuedSince = &since
		}
	}
	cond := metav1.Condition{Type: tenancyv1alpha1.ReadyCondition, Status: metav1.ConditionTrue, Reason: tenancyv1alpha1.BudgetAvailableReason,
		Message: fmt.Sprintf("%d claims hold namespaces; none waits", used.Claims), ObservedGeneration: b.Generation, LastTransitionTime: metav1.NewTime(now)}
	switch {
	case len(queued) > 0:
		cond.Status, cond.Reason = metav1.ConditionFalse, tenancyv1alpha1.BudgetExhaustedReason
		cond.Message = fmt.Sprintf("%d claims wait; %d claims hold namespaces", len(queued), used.Claims)
	case available.Claims == 0:
		cond.Status, cond.Reason = metav1.ConditionFalse, tenancyv1alpha1.BudgetExhaustedReason
		cond.Message = fmt.Sprintf("All %d claims of limits.claims hold namespaces", used.Claims)
	}
	meta.SetStatusCondition(&st.Conditions, cond)
	return st
}
