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

package cli

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
)

// Phase is what a claim's status means to a pipeline waiting for it.
type Phase string

const (
	// PhaseReady: the namespace is usable and the credentials are in place.
	PhaseReady Phase = "Ready"
	// PhasePending: the operator has not finished (or not started); waiting may help.
	PhasePending Phase = "Pending"
	// PhaseQueued: the claim waits for capacity: in line for a NamespaceBudget (reason Queued; the
	// message gives its position) or, on a fleet hub, for a member cluster that may take it (reason
	// NoEligibleCluster; the message says why each member may not). Waiting helps.
	PhaseQueued Phase = "Queued"
	// PhaseRefused: the operator will not go on until someone acts (api/v1alpha1.RefusalReasons).
	PhaseRefused Phase = "Refused"
	// PhaseExpired: the TTL passed and the namespace was deleted; the claim can never be Ready again.
	PhaseExpired Phase = "Expired"
	// PhaseDeleting: the claim is being deleted (released, or its namespace released by the tenant).
	PhaseDeleting Phase = "Deleting"
)

// State is a claim's phase with the Ready condition's reason and message.
type State struct {
	Phase   Phase
	Reason  string
	Message string
}

func (s State) String() string {
	if s.Reason == "" {
		return string(s.Phase)
	}
	return fmt.Sprintf("%s (%s: %s)", s.Phase, s.Reason, s.Message)
}

// Classify reads a claim's phase from its metadata and conditions. A Ready condition, True or a
// refusal, that is older than the claim's generation is still Pending (a changed spec is not answered
// yet), as is a claim without a Ready condition. Expired wins over everything but deletion.
func Classify(claim *tenancyv1alpha1.NamespaceClaim) State {
	ready := meta.FindStatusCondition(claim.Status.Conditions, tenancyv1alpha1.ReadyCondition)
	st := State{Phase: PhasePending}
	if ready != nil {
		st.Reason, st.Message = ready.Reason, ready.Message
	}
	switch {
	case !claim.DeletionTimestamp.IsZero():
		st.Phase = PhaseDeleting
	case meta.IsStatusConditionTrue(claim.Status.Conditions, tenancyv1alpha1.ExpiredCondition):
		st.Phase = PhaseExpired
	case ready == nil:
	case ready.Status == "True" && ready.ObservedGeneration >= claim.Generation && claim.Status.Namespace != "":
		st.Phase = PhaseReady
	case ready.Status == "False" && tenancyv1alpha1.IsRefusalReason(ready.Reason) && ready.ObservedGeneration >= claim.Generation:
		// A refusal of an older generation is stale: the spec changed since (an extension set back),
		// and the operator has not answered the new one yet.
		st.Phase = PhaseRefused
	case ready.Status == metav1.ConditionFalse && (ready.Reason == tenancyv1alpha1.QueuedReason || ready.Reason == tenancyv1alpha1.NoEligibleClusterReason):
		st.Phase = PhaseQueued
	case ready.Status == "False" && ready.Reason == tenancyv1alpha1.ReleasedReason:
		st.Phase = PhaseDeleting
	}
	return st
}

// ProgressLine is the line a waiting command prints when a claim's state changes: its phase, and
// for Pending the operator's reason and message (what it waits for).
func ProgressLine(claim string, st State) string {
	return fmt.Sprintf("namespaceclaim %s: %s", claim, st)
}
