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

package claimstatus

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
	"github.com/nsclaim/nsclaim-operator/internal/claimpolicy"
)

// KubeconfigServerInClusterOnlyReason is the reason of the Warning Event on a claim whose kubeconfig
// names an API server address that only clients inside the cluster reach.
const KubeconfigServerInClusterOnlyReason = "KubeconfigServerInClusterOnly"

// InClusterOnlyNote tells the pipeline, and the admin who reads Events, why the handed kubeconfig may
// not work from outside the cluster and who fixes it.
func InClusterOnlyNote(secret, server string) string {
	return fmt.Sprintf("The kubeconfig in Secret %s names %s, an address only clients inside the cluster reach: a pipeline "+
		"outside the cluster (a hosted CI runner) cannot use it. A cluster admin sets NSCLAIM_KUBECONFIG_SERVER "+
		"on the operator to the API server's external address (README: Install)", secret, server)
}

// ProvisionedNote adds to a Provisioned Event's note the credential ID and expiry of the latest token
// the claim was issued (issued is newest first), so that the Event that tells of a claim's first
// Ready also joins its first token's requests in the audit log to the claim; later tokens get their
// own TokenIssued Event. The ID cannot authenticate; the token itself is never in an Event.
func ProvisionedNote(note string, issued []tenancyv1alpha1.IssuedToken) string {
	if len(issued) == 0 {
		return note
	}
	return fmt.Sprintf("%s: token credential ID %s, expires %s", note, issued[0].CredentialID, issued[0].ExpiresAt.UTC().Format(time.RFC3339))
}

// ClassName is the class label of a claim's metrics: the class in use, or the one it names.
func ClassName(claim *tenancyv1alpha1.NamespaceClaim) string {
	if claim.Status.ClassName != "" {
		return claim.Status.ClassName
	}
	return claimpolicy.ClassOf(claim)
}

// Event is an Event to emit for a transition.
type Event struct {
	// Warning is set for a refusal.
	Warning bool
	// Reason, Action and Note are the Event's.
	Reason, Action string
	Note           string
}

// Transition returns the Event for the change of the Ready condition from before to after, or nil
// when nothing a person cares about changed.
func Transition(before, after []metav1.Condition) *Event {
	b := meta.FindStatusCondition(before, tenancyv1alpha1.ReadyCondition)
	a := meta.FindStatusCondition(after, tenancyv1alpha1.ReadyCondition)
	if a == nil || (b != nil && b.Status == a.Status && b.Reason == a.Reason) {
		return nil
	}
	switch a.Reason {
	case tenancyv1alpha1.ProvisionedReason:
		if a.Status == metav1.ConditionTrue {
			return &Event{Reason: "Provisioned", Action: "Provision", Note: a.Message}
		}
	case tenancyv1alpha1.ExpiredReason:
		return &Event{Reason: "Expired", Action: "Expire", Note: a.Message}
	case tenancyv1alpha1.ReleasedReason:
		return &Event{Reason: "Released", Action: "Release", Note: a.Message}
	case tenancyv1alpha1.QueuedReason:
		// A wait for a NamespaceBudget, not a refusal: a Normal Event, no refusal metric.
		return &Event{Reason: tenancyv1alpha1.QueuedReason, Action: "Queue", Note: a.Message}
	}
	if a.Status == metav1.ConditionFalse && RefusedBy(a.Reason) {
		return &Event{Warning: true, Reason: a.Reason, Action: "Refuse", Note: a.Message}
	}
	return nil
}

// RefusedBy reports whether a Ready=False reason refuses the claim, and so is reported with a Warning
// Event: a reason of the API's one list, tenancyv1alpha1.RefusalReasons, or OwnershipUnverified (the
// claim's namespace carries its marks without nsclaim's record; the namespace, not the claim, is at
// fault, so the API does not list it as the claim's refusal, but the claim's owner is told). Every
// other reason, Provisioning, Pending, InternalError and any reason added later, is no refusal: a
// new waiting reason must be listed here before it can become a Warning.
func RefusedBy(reason string) bool {
	return tenancyv1alpha1.IsRefusalReason(reason) || reason == tenancyv1alpha1.OwnershipUnverifiedReason
}
