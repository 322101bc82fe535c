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
	"github.com/nsclaim/nsclaim-operator/internal/selftest"
)

// Facts are what one reconcile of a claim recorded that its conditions are derived from, beside the
// status fields it found (Fields): the claim reconciler's scope hands them over whole.
type Facts struct {
	// Fields are the status fields the phases found; Derive writes them first.
	Fields *Fields
	// Now is when the reconcile started (the issued tokens are recorded at it).
	Now time.Time
	// Deleting describes, for a claim being deleted, the namespaces it still waits for.
	Deleting string
	// Expired is set once the TTL passed; IdleExpired when it was the idle TTL; ExpiresAt is the hard
	// TTL's end.
	Expired, IdleExpired bool
	ExpiresAt            time.Time
	// Terminating describes what blocks a namespace that is being deleted.
	Terminating string
	// Released is set when the tenant deleted its namespace.
	Released bool
	// Refusal is a user-fixable reason that stops provisioning.
	Refusal *claimpolicy.Refusal
	// ChildrenReady is set when every object in the namespace matches the class; Unusable says what
	// the namespace still waits for.
	ChildrenReady bool
	Unusable      string
	// CreatorBound is set when the creator is bound and verified; CredentialsReady when the Secret
	// holds a valid token.
	CreatorBound, CredentialsReady bool
	// SelfTest is the self-test's outcome (nil when not run); SelfTestSkipped says a previous one still
	// holds; Repaired counts the objects created or changed in this reconcile.
	SelfTest        *selftest.Result
	SelfTestSkipped bool
	Repaired        int
	// Pooled is the Pooled condition's reason, or ""; Namespace and Class name the namespace and the
	// class it was (or was not) handed out of.
	Pooled, Namespace, Class string
	// SeedsSynced is the SeedsSynced condition of the class's seeds (nil: the claim has none, and the
	// condition is removed); SeedsBlock holds a claim never Ready back for a required seed.
	SeedsSynced *metav1.Condition
	SeedsBlock  bool
}

// Derive is the claim's status derivation (the claim reconciler's patchStatus sends what it wrote): it
// writes the status fields the phases found (Fields) and derives the conditions, phase and
// observedGeneration from what the reconcile recorded in s. err is the reconcile's error: an internal
// failure leaves a Ready claim Ready (the reconcile is retried) and otherwise shows a generic reason,
// with the details in the log only; the fields found before it are written either way.
func Derive(claim *tenancyv1alpha1.NamespaceClaim, s *Facts, err error) {
	Apply(s.Fields, &claim.Status, s.Now)
	defer func() { claim.Status.Phase = PhaseOf(claim) }()
	gen := claim.Generation
	set := func(t string, ok bool, reason, msg string) {
		st := metav1.ConditionFalse
		if ok {
			st = metav1.ConditionTrue
		}
		meta.SetStatusCondition(&claim.Status.Conditions, metav1.Condition{Type: t, Status: st, Reason: reason, Message: msg, ObservedGeneration: gen})
	}
	if err != nil {
		if !meta.IsStatusConditionTrue(claim.Status.Conditions, tenancyv1alpha1.ReadyCondition) {
			set(tenancyv1alpha1.ReadyCondition, false, tenancyv1alpha1.InternalErrorReason, internalErrorMessage(claim))
		}
		return
	}
	claim.Status.ObservedGeneration = gen
	if setStopped(claim, s, set) {
		return
	}
	setProgress(claim, s, set)
	if s.SeedsBlock {
		set(tenancyv1alpha1.ReadyCondition, false, s.SeedsSynced.Reason, "Waiting for a required seed: "+s.SeedsSynced.Message)
		return
	}
	setReady(claim, set)
}

// PhaseOf derives the claim's lifecycle phase from its conditions, deletion and activity.
func PhaseOf(claim *tenancyv1alpha1.NamespaceClaim) tenancyv1alpha1.ClaimPhase {
	ready := meta.FindStatusCondition(claim.Status.Conditions, tenancyv1alpha1.ReadyCondition)
	switch {
	case !claim.DeletionTimestamp.IsZero():
		return tenancyv1alpha1.ClaimPhaseTerminating
	case claimpolicy.IsExpired(claim):
		return tenancyv1alpha1.ClaimPhaseExpired
	case ready == nil:
		return tenancyv1alpha1.ClaimPhasePending
	case ready.Status == metav1.ConditionTrue && claim.Status.Sleep != nil:
		return tenancyv1alpha1.ClaimPhaseSleeping
	case ready.Status == metav1.ConditionTrue && claim.Status.PodsActive:
		return tenancyv1alpha1.ClaimPhaseActive
	case ready.Status == metav1.ConditionTrue:
		return tenancyv1alpha1.ClaimPhaseIdle
	case ready.Reason == tenancyv1alpha1.NamespaceTerminatingReason || ready.Reason == tenancyv1alpha1.ReleasedReason:
		return tenancyv1alpha1.ClaimPhaseTerminating
	case tenancyv1alpha1.IsRefusalReason(ready.Reason):
		return tenancyv1alpha1.ClaimPhaseRefused
	}
	return tenancyv1alpha1.ClaimPhasePending
}

// internalErrorMessage tells a pipeline what it can do about a failed API call: wait (the operator retries
// by itself), then hand the cluster admin what finds the error in the operator's log. The error itself is
// not shown: it may name objects the requester may not see.
func internalErrorMessage(claim *tenancyv1alpha1.NamespaceClaim) string {
	return fmt.Sprintf("An API call of the operator failed; it is retried automatically, nothing needs changing on the claim."+
		" If the claim stays in InternalError for more than a few minutes, tell the cluster admin: NamespaceClaim %s/%s, UID %s"+
		" (the operator's log has the error under that claim; docs/troubleshooting.md)", claim.Namespace, claim.Name, claim.UID)
}

// conditionSetter sets one condition of the claim (type, true or false, reason, message).
type conditionSetter func(t string, ok bool, reason, msg string)

// setStopped sets the conditions of a claim that will not go on (being deleted, expired, released or
// refused) and reports whether it was one.
func setStopped(claim *tenancyv1alpha1.NamespaceClaim, s *Facts, set conditionSetter) bool {
	switch {
	case s.Deleting != "":
		msg := "The claim is being deleted; waiting for " + s.Deleting
		set(tenancyv1alpha1.NamespaceReadyCondition, false, tenancyv1alpha1.NamespaceTerminatingReason, msg)
		set(tenancyv1alpha1.ReadyCondition, false, tenancyv1alpha1.NamespaceTerminatingReason, msg)
		return true
	case s.Expired:
		reason, msg := expiredMessage(claim, s)
		set(tenancyv1alpha1.ExpiredCondition, true, reason, msg)
		nsReason, nsMsg := tenancyv1alpha1.ExpiredReason, "The namespace is deleted"
		if s.Terminating != "" {
			nsReason, nsMsg = tenancyv1alpha1.NamespaceTerminatingReason, "The namespace is terminating: "+s.Terminating
		}
		set(tenancyv1alpha1.NamespaceReadyCondition, false, nsReason, nsMsg)
		set(tenancyv1alpha1.CredentialsReadyCondition, false, tenancyv1alpha1.ExpiredReason, "The namespace is gone, so are its credentials")
		set(tenancyv1alpha1.ReadyCondition, false, tenancyv1alpha1.ExpiredReason, msg)
		return true
	case s.Released:
		msg := "The tenant deleted its namespace; the claim is being deleted"
		set(tenancyv1alpha1.NamespaceReadyCondition, false, tenancyv1alpha1.ReleasedReason, msg)
		set(tenancyv1alpha1.ReadyCondition, false, tenancyv1alpha1.ReleasedReason, msg)
		return true
	case s.Refusal != nil:
		t := tenancyv1alpha1.NamespaceReadyCondition
		if s.Refusal.Reason == tenancyv1alpha1.SecretConflictReason || s.Refusal.Reason == tenancyv1alpha1.TokenRevokedReason {
			t = tenancyv1alpha1.CredentialsReadyCondition
		}
		set(t, false, s.Refusal.Reason, s.Refusal.Message)
		set(tenancyv1alpha1.ReadyCondition, false, s.Refusal.Reason, s.Refusal.Message)
		return true
	}
	return false
}

// expiredMessage is the Expired condition's reason and message: the hard TTL's, or the idle TTL's.
func expiredMessage(claim *tenancyv1alpha1.NamespaceClaim, s *Facts) (reason, msg string) {
	again := fmt.Sprintf(". Delete this claim (kubectl delete namespaceclaim %s) before creating a claim of the same name again", claim.Name)
	if !s.IdleExpired {
		return tenancyv1alpha1.ExpiredReason, fmt.Sprintf("The claim's TTL ended at %s; its namespace is deleted", s.ExpiresAt.UTC().Format(time.RFC3339)) +
			again + "; for more time, create a claim with another name"
	}
	st := claim.Status
	var since, at string
	if st.LastActivity != nil {
		since = st.LastActivity.UTC().Format(time.RFC3339)
	}
	if st.IdleExpiresAt != nil {
		at = st.IdleExpiresAt.UTC().Format(time.RFC3339)
	}
	return tenancyv1alpha1.IdleExpiredReason, fmt.Sprintf(
		"The namespace was idle (no Pod Pending or Running, no heartbeat) from %s until its idle TTL ended at %s; it is deleted", since, at) +
		again + "; to keep the next one longer while idle, send heartbeats (kubectl nsclaim heartbeat) or claim with --keep"
}

// QuietUntil returns until when a claim whose namespace is not usable yet keeps its status unwritten:
// a claim that never reported Ready either way (status, its status as read) waits quiet from its
// namespace's creation (created) before it reports the wait as Pending (the claim reconciler's pendingQuiet for
// kube-controller-manager, reuseQuiet for a reused name's grants). kube-controller-manager computes a
// quota's status and creates the `default` ServiceAccount within a second or two on an idle cluster
// and within about 25 s in a burst of 500 claims on 2 cores (docs/benchmarks-history.md); a status written for
// that moment costs a write per claim and says nothing a pipeline waiting for Ready can use. The claim
// holds no worker meanwhile: the watches of the quota and of the `default` ServiceAccount enqueue it.
// A wait that outlasts quiet is reported, and so is any wait of a claim that was Ready before (its
// namespace stopped being usable). Zero when the status is to be written now.
func QuietUntil(status *tenancyv1alpha1.NamespaceClaimStatus, created time.Time, quiet time.Duration) time.Time {
	if created.IsZero() || meta.FindStatusCondition(status.Conditions, tenancyv1alpha1.ReadyCondition) != nil {
		return time.Time{}
	}
	return created.Add(quiet)
}

// setProgress sets the conditions of the namespace, the credentials and the self-test from what the
// phases recorded.
func setProgress(claim *tenancyv1alpha1.NamespaceClaim, s *Facts, set conditionSetter) {
	if s.ChildrenReady && s.Unusable != "" {
		set(tenancyv1alpha1.NamespaceReadyCondition, false, tenancyv1alpha1.PendingReason, s.Unusable)
	} else if s.ChildrenReady {
		set(tenancyv1alpha1.NamespaceReadyCondition, true, tenancyv1alpha1.ProvisionedReason, fmt.Sprintf("Namespace %s and its objects match NamespaceClass %s", claim.Status.Namespace, claim.Status.ClassName))
	}
	if s.CreatorBound {
		set(tenancyv1alpha1.CredentialsReadyCondition, true, tenancyv1alpha1.CreatorBoundReason, fmt.Sprintf("No token is issued: the namespace's RoleBindings name the claim's creator %s, who uses their own credentials", claim.Status.BoundUser))
	}
	if s.CredentialsReady {
		set(tenancyv1alpha1.CredentialsReadyCondition, true, tenancyv1alpha1.IssuedReason, fmt.Sprintf("Secret %s holds a token valid until %s", claim.Status.CredentialsSecretName, claim.Status.TokenExpiresAt.UTC().Format(time.RFC3339)))
	}
	setPooledCondition(s, set)
	setSeedsCondition(claim, s)
	switch res := s.SelfTest; {
	case s.SelfTestSkipped:
		// A self-test of this generation passed and nothing changed since: keep its condition.
		c := meta.FindStatusCondition(claim.Status.Conditions, tenancyv1alpha1.PermissionsVerifiedCondition)
		set(tenancyv1alpha1.PermissionsVerifiedCondition, true, tenancyv1alpha1.VerifiedReason, c.Message)
	case res == nil:
	case len(res.Excess) > 0:
		set(tenancyv1alpha1.PermissionsVerifiedCondition, false, tenancyv1alpha1.ExcessPermissionsReason, "The issued identity has permissions its class does not grant: "+selftest.Summary(res.Excess, selftest.MaxListedFailures)+"; found with "+res.Method())
	case len(res.Missing) > 0 && s.Repaired > 0:
		// RBAC objects written moments ago take a moment to reach the authorizer.
		set(tenancyv1alpha1.PermissionsVerifiedCondition, false, tenancyv1alpha1.PendingReason, "Waiting for new RoleBindings to take effect")
	case len(res.Missing) > 0:
		set(tenancyv1alpha1.PermissionsVerifiedCondition, false, tenancyv1alpha1.MissingPermissionsReason, "The issued identity lacks permissions its class grants: "+selftest.Summary(res.Missing, selftest.MaxListedFailures)+"; found with "+res.Method())
	default:
		set(tenancyv1alpha1.PermissionsVerifiedCondition, true, tenancyv1alpha1.VerifiedReason, res.Method()+" confirm the identity can do what its class grants in its namespace and nothing more"+res.Note)
	}
}

// setPooledCondition sets the Pooled condition recorded by reconcilePool, if any.
func setPooledCondition(s *Facts, set conditionSetter) {
	switch s.Pooled {
	case tenancyv1alpha1.PoolHitReason:
		set(tenancyv1alpha1.PooledCondition, true, s.Pooled, fmt.Sprintf("Namespace %s was handed out of the warm pool of NamespaceClass %s", s.Namespace, s.Class))
	case tenancyv1alpha1.PoolEmptyReason:
		set(tenancyv1alpha1.PooledCondition, false, s.Pooled, fmt.Sprintf("The warm pool of NamespaceClass %s had no ready namespace; namespace %s was made for this claim", s.Class, s.Namespace))
	}
}

// setSeedsCondition sets the SeedsSynced condition the seeds phase derived, or removes it when the
// claim has no seeds (the class dropped them all).
func setSeedsCondition(claim *tenancyv1alpha1.NamespaceClaim, s *Facts) {
	if s.SeedsSynced == nil {
		meta.RemoveStatusCondition(&claim.Status.Conditions, tenancyv1alpha1.SeedsSyncedCondition)
		return
	}
	meta.SetStatusCondition(&claim.Status.Conditions, *s.SeedsSynced)
}

// setReady derives Ready from the other conditions. The self-test runs before credentials are issued,
// so its condition explains a claim first.
func setReady(claim *tenancyv1alpha1.NamespaceClaim, set conditionSetter) {
	for _, t := range []string{tenancyv1alpha1.NamespaceReadyCondition, tenancyv1alpha1.PermissionsVerifiedCondition, tenancyv1alpha1.CredentialsReadyCondition} {
		c := meta.FindStatusCondition(claim.Status.Conditions, t)
		if c == nil {
			set(tenancyv1alpha1.ReadyCondition, false, tenancyv1alpha1.ProvisioningReason, "Waiting for "+t)
			return
		}
		if c.Status != metav1.ConditionTrue {
			set(tenancyv1alpha1.ReadyCondition, false, c.Reason, c.Message)
			return
		}
	}
	if claim.Status.BoundUser != "" {
		set(tenancyv1alpha1.ReadyCondition, true, tenancyv1alpha1.ProvisionedReason, fmt.Sprintf("Namespace %s is ready for %s, with their own credentials", claim.Status.Namespace, claim.Status.BoundUser))
		return
	}
	set(tenancyv1alpha1.ReadyCondition, true, tenancyv1alpha1.ProvisionedReason, fmt.Sprintf("Namespace %s is ready; credentials are in Secret %s", claim.Status.Namespace, claim.Status.CredentialsSecretName))
}

// ReadyFor reports whether the claim is Ready and its PermissionsVerified condition was set for its
// current generation.
func ReadyFor(claim *tenancyv1alpha1.NamespaceClaim) bool {
	c := meta.FindStatusCondition(claim.Status.Conditions, tenancyv1alpha1.PermissionsVerifiedCondition)
	return c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == claim.Generation &&
		meta.IsStatusConditionTrue(claim.Status.Conditions, tenancyv1alpha1.ReadyCondition)
}
