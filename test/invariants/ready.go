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

package invariants

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
)

// readyParts are the conditions Ready summarises: each is True when the claim is Ready.
var readyParts = []string{
	tenancyv1alpha1.NamespaceReadyCondition,
	tenancyv1alpha1.PermissionsVerifiedCondition,
	tenancyv1alpha1.CredentialsReadyCondition,
}

// readyPhases are the phases of a Ready claim (Sleeping exactly while status.sleep records a sleep).
var readyPhases = map[tenancyv1alpha1.ClaimPhase]bool{
	tenancyv1alpha1.ClaimPhaseActive: true, tenancyv1alpha1.ClaimPhaseIdle: true, tenancyv1alpha1.ClaimPhaseSleeping: true,
}

// readyBroken lists what a settled claim does not keep of what Ready promises: Ready True with reason
// Provisioned for the claim's current generation (its condition's observedGeneration and
// status.observedGeneration), the conditions it summarises (NamespaceReady, PermissionsVerified,
// CredentialsReady) True, not Expired, and a phase of a Ready claim (Active, Idle, or Sleeping exactly
// while status.sleep is set). Each entry is a violation of claim key.
func readyBroken(key string, cl *tenancyv1alpha1.NamespaceClaim) []string {
	ready := meta.FindStatusCondition(cl.Status.Conditions, tenancyv1alpha1.ReadyCondition)
	if ready == nil || ready.Status != metav1.ConditionTrue {
		why := "no Ready condition"
		if ready != nil {
			why = ready.Reason + ": " + ready.Message
		}
		return []string{fmt.Sprintf("claim %s is not Ready (%s)", key, why)}
	}
	var out []string
	if ready.Reason != tenancyv1alpha1.ProvisionedReason {
		out = append(out, fmt.Sprintf("claim %s is Ready with reason %s, want %s", key, ready.Reason, tenancyv1alpha1.ProvisionedReason))
	}
	if ready.ObservedGeneration != cl.Generation || cl.Status.ObservedGeneration != cl.Generation {
		out = append(out, fmt.Sprintf("claim %s is Ready for generation %d (status.observedGeneration %d), its generation is %d",
			key, ready.ObservedGeneration, cl.Status.ObservedGeneration, cl.Generation))
	}
	for _, t := range readyParts {
		if !meta.IsStatusConditionTrue(cl.Status.Conditions, t) {
			out = append(out, fmt.Sprintf("claim %s is Ready but %s is not True", key, t))
		}
	}
	if meta.IsStatusConditionTrue(cl.Status.Conditions, tenancyv1alpha1.ExpiredCondition) {
		out = append(out, fmt.Sprintf("claim %s is Ready and Expired", key))
	}
	sleeping := cl.Status.Sleep != nil
	if !readyPhases[cl.Status.Phase] || (cl.Status.Phase == tenancyv1alpha1.ClaimPhaseSleeping) != sleeping {
		out = append(out, fmt.Sprintf("claim %s is Ready in phase %q (asleep: %t)", key, cl.Status.Phase, sleeping))
	}
	return out
}
