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
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
	"github.com/nsclaim/nsclaim-operator/internal/admission"
	"github.com/nsclaim/nsclaim-operator/internal/claimpolicy"
	"github.com/nsclaim/nsclaim-operator/internal/claimstatus"
	"github.com/nsclaim/nsclaim-operator/internal/selftest"
)

// The claim reconciler's timing: polling intervals for conditions that no watch reports, quiet
// windows, backoffs and timeouts.
const (
	// terminatingPoll re-reads a terminating namespace's blockers.
	terminatingPoll = 10 * time.Second
	// refusalPoll retries a refused claim (a conflicting namespace may be deleted by hand).
	refusalPoll = time.Minute
	// queuedPoll looks again at a claim waiting for a NamespaceBudget: namespace events wake it at once
	// (budget.Releases); the poll covers an older claim leaving the line without one. A claim whose
	// budget has a maxQueueWait is also looked at again when that runs out (queueGiveUpAt).
	queuedPoll = 10 * time.Second
	// pendingQuiet is how long a claim provisioned for the first time keeps its status unwritten while
	// kube-controller-manager makes its namespace usable (see quietUntil). A burst of 500 claims on 2
	// cores waits for it up to 25 s (kube-controller-manager's client rate sets the pace;
	// docs/benchmarks-history.md): a minute covers bursts twice that size and still reports a
	// kube-controller-manager that does not work.
	pendingQuiet = time.Minute
	// reuseQuiet is how long a new claim keeps its status unwritten while the grants of a reused
	// namespace name are held back (claimpolicy.NameReuseWindow): shorter than that window, so the wait
	// and its reason are reported.
	reuseQuiet = 10 * time.Second
	// fencePendingPoll waits for the first check of the admission fence.
	fencePendingPoll = 2 * time.Second
	// fencePoll re-checks a claim held back because the admission fence is missing or altered.
	fencePoll = 15 * time.Second
	// pooledMarksDelay is how long after a handout the children its pooled namespace came with go without
	// their claim's marks (marksDeferrable): past a burst of handouts, not among them.
	pooledMarksDelay = 10 * time.Second
	// usablePoll re-checks a namespace that waits for something no watch reports (its `default`
	// ServiceAccount).
	usablePoll = time.Second
)

// claimScope carries what one reconcile of a claim learned. Phases record facts here; setStatus turns
// them into status at the end. Nothing in it outlives the reconcile.
type claimScope struct {
	claim *tenancyv1alpha1.NamespaceClaim
	now   time.Time
	// found are the status fields the phases found (see claimstatus.Fields); setStatus writes them.
	found claimstatus.Fields

	// class is the resolved class; nil when refused before it was found.
	class *tenancyv1alpha1.NamespaceClass
	// owner is the claim as the ownership marks name it.
	owner claimpolicy.Owner
	// desired is what the namespace and its objects should be.
	desired claimpolicy.Desired
	// expiresAt is when the namespace is to be deleted by the hard TTL; zero when unknown.
	expiresAt time.Time
	// idleExpiresAt is when the namespace is to be deleted for idleness; zero when it is active or its
	// class has no idle TTL.
	idleExpiresAt time.Time
	// sleepAt is when the sleep phase next looks at the namespace by the clock: when it falls asleep
	// if nothing happens, or, asleep, its next resync (see reconcileSleep); zero otherwise.
	sleepAt time.Time
	// activityObserved is set once reconcileActivity (lifetime.Activity) recorded the namespace's activity.
	activityObserved bool
	// tokenOnce is set when the claim asks for its token to be issued only once.
	tokenOnce bool
	// request is set when the claim was made by the operator for a request ConfigMap of the ConfigMap
	// protocol (RequestProtocol.IsRequest).
	request bool

	// refusal is a user-fixable reason that stops provisioning.
	refusal *claimpolicy.Refusal
	// repairRefusal is the refusal the claim had when the lifecycle phases were done: a claim that
	// holds its namespace is still repaired under it (see stopped).
	repairRefusal *claimpolicy.Refusal
	// expired is set once the TTL passed; idleExpired when it was the idle TTL.
	expired     bool
	idleExpired bool
	// terminating describes what blocks a namespace that is being deleted.
	terminating string
	// deleting describes, for a claim being deleted, the namespaces it still waits for.
	deleting string
	// fencePending is set when a Ready claim waits, status unchanged, for the first check of the fence.
	fencePending bool
	// released is set when the tenant deleted its namespace and the claim is being deleted.
	released bool

	// given is set when the claim, holding no namespace in its status, was given one before (see
	// givenNamespace); pooled is the Pooled condition's reason reconcilePool found, or "".
	given  bool
	pooled string
	// handedOut is the pooled namespace handed to the claim in this reconcile, as the patch returned it.
	handedOut *corev1.Namespace

	// namespace is the observed namespace once it is known to be ours.
	namespace *corev1.Namespace
	// childrenReady is set when every object in the namespace matches the class.
	childrenReady bool
	// seedsSynced is the SeedsSynced condition the seeds phase derived (nil: none); seedsBlock says a
	// new claim waits for a required seed.
	seedsSynced *metav1.Condition
	seedsBlock  bool
	// seedsResync is when the seeds phase wants to apply the claim's Secret copies again (0: never).
	seedsResync time.Duration
	// marksDeferred says a child of the claim's pooled namespace was left without the claim's marks in
	// this reconcile; they are applied pooledMarksDelay after the handout (marksDeferrable).
	marksDeferred bool
	// repaired counts objects created or changed in this reconcile.
	repaired int
	// unusable says what the namespace still waits for before a Pod fitting the class can be created
	// in it; empty when it is usable or was not checked. unusablePoll is set when no watch reports it.
	unusable     string
	unusablePoll bool
	// quietUntil is, for a claim provisioned for the first time, until when its status is not written
	// while the namespace is not usable yet (see pendingQuiet); zero otherwise.
	quietUntil time.Time

	// credentialsReady is set when the Secret holds a valid token; tokenIssued when this reconcile
	// issued one; renewAt is when the token is to be renewed.
	credentialsReady bool
	tokenIssued      bool
	// creatorBound is set when, in credentials mode Requester, the creator is bound and verified.
	creatorBound bool
	renewAt      time.Time
	// credentialsCheckAt is when the credentials Secret is next checked; zero when not scheduled.
	credentialsCheckAt time.Time

	// selfTest is the outcome of the permission self-test; nil when not run in this reconcile.
	selfTest *selftest.Result
	// selfTestSkipped is set when a previous self-test still holds (nothing changed since).
	selfTestSkipped bool
	// selfTestBackoff is when to retry a self-test that failed; zero unless it failed.
	selfTestBackoff time.Duration

	// grantsAt is when the bindings naming the tenant may be made, when that is not at once (see
	// watchcache.NamespaceReuse); zero otherwise.
	grantsAt time.Time

	// limitSlot is the claim's slot in its claim limit when this reconcile admitted it (see
	// namespaceclaim_limit.go); nil otherwise.
	limitSlot *admission.Reservation
	// budgetSlots are the claim's charges in the NamespaceBudgets that cover it, when this reconcile
	// admitted it (namespaceclaim/budget); settled with limitSlot.
	budgetSlots admission.Reservations
	// queueGiveUpAt is when a queued claim's maxQueueWait runs out (budget.Claim.GiveUpAt); zero
	// otherwise.
	queueGiveUpAt time.Time
}

// stopped is reconcileNormal's one stop rule: whether the claim goes no further than the phases that
// ran. It goes no further once it expired, has no class, was released by its tenant, has a terminating
// namespace, waits for the fence's first check or for its namespace to become usable; or while it is
// refused, except that a repair phase runs for a claim that holds its namespace under the refusal it
// came in with, unless that refusal blocks repair too (blocksRepair).
func (s *claimScope) stopped(repair bool) bool {
	switch {
	case s.expired, s.class == nil, s.released, s.terminating != "", s.fencePending, s.unusable != "":
		return true
	case s.refusal == nil:
		return false
	}
	return !repair || s.refusal != s.repairRefusal || !s.held() || blocksRepair(s.refusal.Reason)
}

// blocksRepair reports whether a refusal means the namespace's objects cannot be repaired either: the
// class is gone or cannot be provisioned, or the admission fence is not in place.
func blocksRepair(reason string) bool {
	switch reason {
	case tenancyv1alpha1.ClassNotFoundReason, tenancyv1alpha1.AmbiguousDefaultClassReason,
		tenancyv1alpha1.ClusterRoleNotBindableReason, tenancyv1alpha1.PodSecurityNotAllowedReason,
		tenancyv1alpha1.FenceNotIntactReason, tenancyv1alpha1.PendingReason:
		return true
	}
	return false
}

// held reports whether the claim holds a namespace (recorded in its status, or found in this reconcile).
func (s *claimScope) held() bool { return s.heldNamespace() != "" }

// heldNamespace is the namespace the claim holds: found in this reconcile, else recorded in its status.
func (s *claimScope) heldNamespace() string { return s.found.Namespace.Or(s.claim.Status.Namespace) }

// boundUser is the creator the claim's RoleBindings name: found in this reconcile, else recorded in its
// status.
func (s *claimScope) boundUser() string { return s.found.BoundUser.Or(s.claim.Status.BoundUser) }

// requeueAfter is the time until the next thing that happens by the clock: expiry or token renewal.
func (s *claimScope) requeueAfter() time.Duration {
	var next time.Duration
	for _, t := range []time.Time{s.expiresAt, s.idleExpiresAt, s.renewAt, s.credentialsCheckAt, s.sleepAt} {
		if t.IsZero() || s.expired {
			continue
		}
		d := t.Sub(s.now)
		if d <= 0 {
			d = time.Second
		}
		if next == 0 || d < next {
			next = d
		}
	}
	soon := func(d time.Duration) {
		if next == 0 || next > d {
			next = d
		}
	}
	if s.terminating != "" {
		soon(terminatingPoll)
	}
	if s.unusablePoll {
		soon(usablePoll)
	}
	if s.marksDeferred {
		if at := handedOutAt(s).Add(pooledMarksDelay); at.After(s.now) {
			soon(at.Sub(s.now))
		}
	}
	if s.quietUntil.After(s.now) {
		soon(s.quietUntil.Sub(s.now))
	}
	if s.grantsAt.After(s.now) {
		soon(s.grantsAt.Sub(s.now))
	}
	if s.fencePending {
		soon(fencePendingPoll)
	}
	if s.seedsResync > 0 {
		soon(s.seedsResync)
	}
	switch {
	case s.refusal == nil:
	case s.refusal.Reason == tenancyv1alpha1.PendingReason:
		soon(fencePendingPoll)
	case s.refusal.Reason == tenancyv1alpha1.FenceNotIntactReason:
		soon(fencePoll)
	case s.refusal.Reason == tenancyv1alpha1.QueuedReason:
		soon(queuedPoll)
		if s.queueGiveUpAt.After(s.now) {
			// Refused at its maxQueueWait, not up to a poll later.
			soon(s.queueGiveUpAt.Sub(s.now))
		}
	default:
		soon(refusalPoll)
	}
	if s.selfTest != nil && !s.selfTest.OK() {
		soon(max(s.selfTestBackoff, selftest.RetryDelay))
	}
	return next
}

// handedOutAt is when the claim's namespace was handed out of a pool: now in the reconcile that hands
// it out, else the Pooled condition's transition to PoolHit; zero for a claim whose namespace was
// made for it.
func handedOutAt(s *claimScope) time.Time {
	if s.handedOut != nil {
		return s.now
	}
	c := meta.FindStatusCondition(s.claim.Status.Conditions, tenancyv1alpha1.PooledCondition)
	if c == nil || c.Status != metav1.ConditionTrue || c.Reason != tenancyv1alpha1.PoolHitReason {
		return time.Time{}
	}
	return c.LastTransitionTime.Time
}
