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
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
)

// TestWaits: who holds a place in a budget's line: a claim without a namespace that is new, queued or
// being provisioned; never one that holds a namespace, is being deleted, or is refused for another
// reason (it would hold the line forever).
func TestWaits(t *testing.T) {
	ready := func(reason string) []metav1.Condition {
		return []metav1.Condition{{Type: tenancyv1alpha1.ReadyCondition, Status: metav1.ConditionFalse, Reason: reason}}
	}
	now := metav1.NewTime(time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC))
	cases := []struct {
		name   string
		claim  tenancyv1alpha1.NamespaceClaim
		waits  bool
		queued bool
	}{
		{name: "new", waits: true},
		{name: "queued", claim: tenancyv1alpha1.NamespaceClaim{Status: tenancyv1alpha1.NamespaceClaimStatus{Conditions: ready(tenancyv1alpha1.QueuedReason)}}, waits: true, queued: true},
		{name: "provisioning", claim: tenancyv1alpha1.NamespaceClaim{Status: tenancyv1alpha1.NamespaceClaimStatus{Conditions: ready(tenancyv1alpha1.ProvisioningReason)}}, waits: true},
		{name: "refused by its class", claim: tenancyv1alpha1.NamespaceClaim{Status: tenancyv1alpha1.NamespaceClaimStatus{Conditions: ready(tenancyv1alpha1.ClassNotAllowedReason)}}},
		{name: "waited too long", claim: tenancyv1alpha1.NamespaceClaim{Status: tenancyv1alpha1.NamespaceClaimStatus{Conditions: ready(tenancyv1alpha1.QueueWaitExceededReason)}}},
		{name: "holds a namespace", claim: tenancyv1alpha1.NamespaceClaim{Status: tenancyv1alpha1.NamespaceClaimStatus{Namespace: "ns"}}},
		{name: "being deleted", claim: tenancyv1alpha1.NamespaceClaim{ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: &now}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := waits(&tc.claim); got != tc.waits {
				t.Errorf("waits = %v, want %v", got, tc.waits)
			}
			if got := Queued(&tc.claim); got != tc.queued {
				t.Errorf("Queued = %v, want %v", got, tc.queued)
			}
		})
	}
}
