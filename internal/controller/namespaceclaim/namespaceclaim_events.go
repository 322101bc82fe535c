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

package namespaceclaim

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
	"github.com/nsclaim/nsclaim-operator/internal/claimpolicy"
	"github.com/nsclaim/nsclaim-operator/internal/lifecycle"
	"github.com/nsclaim/nsclaim-operator/internal/monitoring"
)

// emitEvents records an Event and the metrics of a transition of the claim's Ready condition. Events
// never carry a token: their notes come from condition messages, which never do.
func (r *NamespaceClaimReconciler) emitEvents(s *claimScope, before *tenancyv1alpha1.NamespaceClaim) {
	e := transitionEvent(before.Status.Conditions, s.claim.Status.Conditions)
	if e == nil {
		return
	}
	switch {
	case e.warning:
		monitoring.Refused(e.reason)
	case e.reason == tenancyv1alpha1.ExpiredReason:
		monitoring.Expired(className(s.claim))
		if sl := before.Status.Sleep; sl != nil {
			monitoring.SleepEnded(className(s.claim), lifecycle.ReplicaSeconds(sl.Workloads, sl.Since.Time, s.now))
		}
		if s.idleExpired {
			monitoring.IdleExpired(className(s.claim))
			e.reason = tenancyv1alpha1.IdleExpiredReason
		}
	case e.reason == tenancyv1alpha1.ProvisionedReason:
		// The first Ready this process sees. NamespaceReady may have been True for a while before
		// (the self-test waits for new RoleBindings to reach the authorizer), so only the claim's UID
		// tells a first Ready from a later one or from a stale cached copy of the same one.
		if r.mem.firstReady(s.claim.UID) {
			monitoring.ObserveProvisioned(className(s.claim), s.now.Sub(s.claim.CreationTimestamp.Time))
		}
	}
	t := corev1.EventTypeNormal
	if e.warning {
		t = corev1.EventTypeWarning
	}
	if e.reason == tenancyv1alpha1.ProvisionedReason {
		e.note = provisionedNote(e.note, s.claim.Status.IssuedTokens)
	}
	r.event(s, t, e.reason, e.action, e.note)
	if e.reason == tenancyv1alpha1.ProvisionedReason && s.claim.Status.CredentialsSecretName != "" && r.Endpoint.InClusterOnly() {
		r.event(s, corev1.EventTypeWarning, KubeconfigServerInClusterOnlyReason, "IssueCredentials",
			inClusterOnlyNote(s.claim.Status.CredentialsSecretName, r.Endpoint.Server))
	}
}

// event records an Event on the claim, when there is a recorder: the one call of the recorder for
// every Event the claim reconciler records. note is taken as it is (never a format).
func (r *NamespaceClaimReconciler) event(s *claimScope, eventType, reason, action, note string) {
	if r.Recorder != nil {
		r.Recorder.Eventf(s.claim, nil, eventType, reason, action, "%s", note)
	}
}

// KubeconfigServerInClusterOnlyReason is the reason of the Warning Event on a claim whose kubeconfig
// names an API server address that only clients inside the cluster reach.
const KubeconfigServerInClusterOnlyReason = "KubeconfigServerInClusterOnly"

// inClusterOnlyNote tells the pipeline, and the admin who reads Events, why the handed kubeconfig may
// not work from outside the cluster and who fixes it.
func inClusterOnlyNote(secret, server string) string {
	return fmt.Sprintf("The kubeconfig in Secret %s names %s, an address only clients inside the cluster reach: a pipeline "+
		"outside the cluster (a hosted CI runner) cannot use it. A cluster admin sets NSCLAIM_KUBECONFIG_SERVER "+
		"on the operator to the API server's external address (README: Install)", secret, server)
}

// provisionedNote adds to a Provisioned Event's note the credential ID and expiry of the latest token
// the claim was issued (issued is newest first), so that the Event that tells of a claim's first
// Ready also joins its first token's requests in the audit log to the claim; later tokens get their
// own TokenIssued Event. The ID cannot authenticate; the token itself is never in an Event.
func provisionedNote(note string, issued []tenancyv1alpha1.IssuedToken) string {
	if len(issued) == 0 {
		return note
	}
	return fmt.Sprintf("%s: token credential ID %s, expires %s", note, issued[0].CredentialID, issued[0].ExpiresAt.UTC().Format(time.RFC3339))
}

// className is the class label of a claim's metrics: the class in use, or the one it names.
func className(claim *tenancyv1alpha1.NamespaceClaim) string {
	if claim.Status.ClassName != "" {
		return claim.Status.ClassName
	}
	return claimpolicy.ClassOf(claim)
}

// claimEvent is an Event to emit for a transition.
type claimEvent struct {
	warning        bool
	reason, action string
	note           string
}

// transitionEvent returns the Event for the change of the Ready condition from before to after, or nil
// when nothing a person cares about changed.
func transitionEvent(before, after []metav1.Condition) *claimEvent {
	b := meta.FindStatusCondition(before, tenancyv1alpha1.ReadyCondition)
	a := meta.FindStatusCondition(after, tenancyv1alpha1.ReadyCondition)
	if a == nil || (b != nil && b.Status == a.Status && b.Reason == a.Reason) {
		return nil
	}
	switch a.Reason {
	case tenancyv1alpha1.ProvisionedReason:
		if a.Status == metav1.ConditionTrue {
			return &claimEvent{reason: "Provisioned", action: "Provision", note: a.Message}
		}
	case tenancyv1alpha1.ExpiredReason:
		return &claimEvent{reason: "Expired", action: "Expire", note: a.Message}
	case tenancyv1alpha1.ReleasedReason:
		return &claimEvent{reason: "Released", action: "Release", note: a.Message}
	}
	if a.Status == metav1.ConditionFalse && refusedBy(a.Reason) {
		return &claimEvent{warning: true, reason: a.Reason, action: "Refuse", note: a.Message}
	}
	return nil
}

// refusedBy reports whether a Ready=False reason refuses the claim, and so is reported with a Warning
// Event: a reason of the API's one list, tenancyv1alpha1.RefusalReasons, or OwnershipUnverified (the
// claim's namespace carries its marks without nsclaim's record; the namespace, not the claim, is at
// fault, so the API does not list it as the claim's refusal, but the claim's owner is told). Every
// other reason, Provisioning, Pending, InternalError and any reason added later, is no refusal: a
// new waiting reason must be listed here before it can become a Warning.
func refusedBy(reason string) bool {
	return tenancyv1alpha1.IsRefusalReason(reason) || reason == tenancyv1alpha1.OwnershipUnverifiedReason
}
