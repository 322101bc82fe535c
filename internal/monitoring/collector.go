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

package monitoring

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
)

// Values of the state label of ClaimsName.
const (
	StateReady       = "Ready"
	StatePending     = "Pending"
	StateRefused     = "Refused"
	StateExpired     = "Expired"
	StateReleased    = "Released"
	StateTerminating = "Terminating"
)

// RefusalReasons are the Ready=False reasons that count a claim as Refused: the API's one list.
var RefusalReasons = tenancyv1alpha1.RefusalReasons

// ClaimState returns the state label of a claim: Terminating once deletion is requested; otherwise
// from its Ready condition: Ready when True; Expired or Released for those reasons; Refused for a
// reason in RefusalReasons; Pending when the condition is missing, Unknown or False for any other
// reason.
func ClaimState(claim *tenancyv1alpha1.NamespaceClaim) string {
	if !claim.DeletionTimestamp.IsZero() {
		return StateTerminating
	}
	ready := meta.FindStatusCondition(claim.Status.Conditions, tenancyv1alpha1.ReadyCondition)
	switch {
	case ready == nil || ready.Status == metav1.ConditionUnknown:
		return StatePending
	case ready.Status == metav1.ConditionTrue:
		return StateReady
	case ready.Reason == tenancyv1alpha1.ExpiredReason:
		return StateExpired
	case ready.Reason == tenancyv1alpha1.ReleasedReason:
		return StateReleased
	}
	if tenancyv1alpha1.IsRefusalReason(ready.Reason) {
		return StateRefused
	}
	return StatePending
}

// NewClaimCollector returns a collector of ClaimsName, OldestWaitName and ClaimsByPhaseName from the
// NamespaceClaims in r (the manager's cache) at every scrape, so a deleted claim leaves no series
// behind. Only (class, state) pairs with at least one claim are reported.
func NewClaimCollector(r client.Reader) prometheus.Collector { return newClaimCollector(r, time.Now) }

func newClaimCollector(r client.Reader, now func() time.Time) prometheus.Collector {
	return newListCollector(r, "NamespaceClaims", func(claims *tenancyv1alpha1.NamespaceClaimList, d []*prometheus.Desc, ch chan<- prometheus.Metric) {
		for k, n := range CountClaims(claims.Items) {
			gauge(ch, d[0], float64(n), k.Class, k.State)
		}
		for k, age := range OldestWait(claims.Items, now()) {
			gauge(ch, d[1], age.Seconds(), k.Class, k.State)
		}
		for k, n := range CountPhases(claims.Items) {
			gauge(ch, d[2], float64(n), k.Class, k.State)
		}
	}, ClaimsName, OldestWaitName, ClaimsByPhaseName)
}

// CountPhases counts claims by their resolved class and status.phase; claims without a phase are left
// out.
func CountPhases(claims []tenancyv1alpha1.NamespaceClaim) map[ClassState]int {
	counts := map[ClassState]int{}
	for i := range claims {
		if p := claims[i].Status.Phase; p != "" {
			counts[ClassState{Class: claims[i].Status.ClassName, State: string(p)}]++
		}
	}
	return counts
}

// PendingSince is when a Pending claim (ClaimState) started waiting: the last transition of its Ready
// condition, or its creation when it has none (or an older transition time than its creation).
func PendingSince(claim *tenancyv1alpha1.NamespaceClaim) time.Time {
	since := claim.CreationTimestamp.Time
	if ready := meta.FindStatusCondition(claim.Status.Conditions, tenancyv1alpha1.ReadyCondition); ready != nil && ready.LastTransitionTime.After(since) {
		since = ready.LastTransitionTime.Time
	}
	return since
}

// OldestWait returns, per resolved class and state (Pending or Terminating), how long the oldest claim
// in that state has waited at now (never negative): a Pending claim since PendingSince, a Terminating
// claim since its deletion was requested. Pairs without such a claim are absent.
func OldestWait(claims []tenancyv1alpha1.NamespaceClaim, now time.Time) map[ClassState]time.Duration {
	oldest := map[ClassState]time.Duration{}
	for i := range claims {
		var since time.Time
		state := ClaimState(&claims[i])
		switch state {
		case StatePending:
			since = PendingSince(&claims[i])
		case StateTerminating:
			since = claims[i].DeletionTimestamp.Time
		default:
			continue
		}
		k := ClassState{Class: claims[i].Status.ClassName, State: state}
		age := max(now.Sub(since), 0)
		if cur, ok := oldest[k]; !ok || age > cur {
			oldest[k] = age
		}
	}
	return oldest
}

// ClassState is a (class, state) pair of ClaimsName.
type ClassState struct{ Class, State string }

// CountClaims counts claims by their resolved class (status.className) and ClaimState.
func CountClaims(claims []tenancyv1alpha1.NamespaceClaim) map[ClassState]int {
	counts := map[ClassState]int{}
	for i := range claims {
		counts[ClassState{Class: claims[i].Status.ClassName, State: ClaimState(&claims[i])}]++
	}
	return counts
}
