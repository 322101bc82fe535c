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
	corev1 "k8s.io/api/core/v1"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
	"github.com/nsclaim/nsclaim-operator/internal/claimstatus"
	"github.com/nsclaim/nsclaim-operator/internal/lifecycle"
	"github.com/nsclaim/nsclaim-operator/internal/monitoring"
)

// emitEvents records an Event and the metrics of a transition of the claim's Ready condition. Events
// never carry a token: their notes come from condition messages, which never do.
func (r *NamespaceClaimReconciler) emitEvents(s *claimScope, before *tenancyv1alpha1.NamespaceClaim) {
	e := claimstatus.Transition(before.Status.Conditions, s.claim.Status.Conditions)
	if e == nil {
		return
	}
	switch {
	case e.Warning:
		monitoring.Refused(e.Reason)
	case e.Reason == tenancyv1alpha1.ExpiredReason:
		monitoring.Expired(claimstatus.ClassName(s.claim))
		if sl := before.Status.Sleep; sl != nil {
			monitoring.SleepEnded(claimstatus.ClassName(s.claim), lifecycle.ReplicaSeconds(sl.Workloads, sl.Since.Time, s.now))
		}
		if s.idleExpired {
			monitoring.IdleExpired(claimstatus.ClassName(s.claim))
			e.Reason = tenancyv1alpha1.IdleExpiredReason
		}
	case e.Reason == tenancyv1alpha1.ProvisionedReason:
		// The first Ready this process sees. NamespaceReady may have been True for a while before
		// (the self-test waits for new RoleBindings to reach the authorizer), so only the claim's UID
		// tells a first Ready from a later one or from a stale cached copy of the same one.
		if r.mem.FirstReady(s.claim.UID) {
			monitoring.ObserveProvisioned(claimstatus.ClassName(s.claim), s.now.Sub(s.claim.CreationTimestamp.Time))
		}
	}
	t := corev1.EventTypeNormal
	if e.Warning {
		t = corev1.EventTypeWarning
	}
	if e.Reason == tenancyv1alpha1.ProvisionedReason {
		e.Note = claimstatus.ProvisionedNote(e.Note, s.claim.Status.IssuedTokens)
	}
	r.event(s, t, e.Reason, e.Action, e.Note)
	if e.Reason == tenancyv1alpha1.ProvisionedReason && s.claim.Status.CredentialsSecretName != "" && r.Endpoint.InClusterOnly() {
		r.event(s, corev1.EventTypeWarning, claimstatus.KubeconfigServerInClusterOnlyReason, "IssueCredentials",
			claimstatus.InClusterOnlyNote(s.claim.Status.CredentialsSecretName, r.Endpoint.Server))
	}
}

// event records an Event on the claim, when there is a recorder: the one call of the recorder for
// every Event the claim reconciler records. note is taken as it is (never a format).
func (r *NamespaceClaimReconciler) event(s *claimScope, eventType, reason, action, note string) {
	if r.Recorder != nil {
		r.Recorder.Eventf(s.claim, nil, eventType, reason, action, "%s", note)
	}
}
