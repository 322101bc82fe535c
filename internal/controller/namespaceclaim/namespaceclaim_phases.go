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
	"context"

	corev1 "k8s.io/api/core/v1"

	"github.com/nsclaim/nsclaim-operator/internal/claimpolicy"
	"github.com/nsclaim/nsclaim-operator/internal/controller/namespaceclaim/access"
	"github.com/nsclaim/nsclaim-operator/internal/controller/namespaceclaim/budget"
	"github.com/nsclaim/nsclaim-operator/internal/controller/namespaceclaim/children"
	"github.com/nsclaim/nsclaim-operator/internal/controller/namespaceclaim/creator"
	"github.com/nsclaim/nsclaim-operator/internal/controller/namespaceclaim/fencegate"
	"github.com/nsclaim/nsclaim-operator/internal/controller/namespaceclaim/lifetime"
	"github.com/nsclaim/nsclaim-operator/internal/controller/namespaceclaim/seeds"
	"github.com/nsclaim/nsclaim-operator/internal/controller/namespaceclaim/sleep"
	"github.com/nsclaim/nsclaim-operator/internal/controller/namespaceclaim/usability"
	"github.com/nsclaim/nsclaim-operator/internal/usable"
)

// The adapters of the phases that live in packages of their own: each hands its phase the part of the
// scope it reads (the phase's Claim) with its collaborators, and takes back what the phase recorded.
// The small phases that are one call to a collaborator (the request owner, the mode switch) stand here
// too.

// reconcileActivity observes the activity of the namespace a claim holds and records the idle clock
// (lifetime.Activity): it hands the phase the part of the scope it reads and takes back what it recorded.
func (r *NamespaceClaimReconciler) reconcileActivity(ctx context.Context, s *claimScope) error {
	c := &lifetime.ActivityClaim{Claim: s.claim, Now: s.now, Class: s.class, Held: s.held(), Namespace: s.heldNamespace(),
		Found: &s.found, ActivityObserved: s.activityObserved, IdleExpiresAt: s.idleExpiresAt}
	p := &lifetime.Activity{ActivePods: r.ActivePods, APIReader: r.APIReader}
	err := p.Reconcile(ctx, c)
	s.activityObserved, s.idleExpiresAt = c.ActivityObserved, c.IdleExpiresAt
	return err
}

// reconcileExpiry ends a claim whose hard or idle TTL passed (lifetime.Expiry): it hands the phase the
// part of the scope it reads and takes back what it recorded; the namespace and the credentials are
// deleted through the scope (claimEnder).
func (r *NamespaceClaimReconciler) reconcileExpiry(ctx context.Context, s *claimScope) error {
	c := &lifetime.ExpiryClaim{Claim: s.claim, Now: s.now, ExpiresAt: s.expiresAt, IdleExpiresAt: s.idleExpiresAt,
		Found: &s.found, Refusal: s.refusal, Expired: s.expired, IdleExpired: s.idleExpired}
	p := &lifetime.Expiry{Ender: claimEnder{r: r, s: s}}
	err := p.Reconcile(ctx, c)
	s.refusal, s.expired, s.idleExpired = c.Refusal, c.Expired, c.IdleExpired
	return err
}

// reconcileBudget admits a claim that holds no namespace yet to the NamespaceBudgets that cover it,
// through the claim limit's ledger, or records why it waits or is refused (budget.Phase): it hands the
// phase the part of the scope it reads and takes back the refusal and the budget slots, which
// holdLimit and leaveLimit settle with the limit's.
func (r *NamespaceClaimReconciler) reconcileBudget(ctx context.Context, s *claimScope, requester *corev1.Namespace) error {
	c := &budget.Claim{Claim: s.claim, Class: s.class, Held: s.held(), RequesterLabels: requester.Labels, Now: s.now, Refusal: s.refusal}
	p := &budget.Phase{Reader: r.Client, Writer: r.Client, Ledger: &r.limits, APIReader: r.APIReader, Owned: r.ownedByClaim, Recorder: r.Recorder}
	err := p.Reconcile(ctx, c)
	s.refusal, s.budgetSlots, s.queueGiveUpAt = c.Refusal, c.Slots, c.GiveUpAt
	return err
}

// claimEnder deletes what an expired claim held, over its scope (lifetime.Ender).
type claimEnder struct {
	r *NamespaceClaimReconciler
	s *claimScope
}

// DeleteNamespace deletes the claim's namespace if it is the claim's (deleteOwnedNamespace).
func (e claimEnder) DeleteNamespace(ctx context.Context, name string) error {
	return e.r.deleteOwnedNamespace(ctx, e.s, name)
}

// DeleteCredentials deletes the claim's credentials Secret (deleteCredentials).
func (e claimEnder) DeleteCredentials(ctx context.Context) error {
	return e.r.deleteCredentials(ctx, e.s)
}

// creatorBound reports whether the claim's creator was bound before: status.boundUser names it
// (creator.Bound).
func creatorBound(s *claimScope) bool { return creator.Bound(s.claim, s.boundUser()) }

// reconcileCreator, for a class of credentials mode Requester, checks the claim's creator and binds it
// in the desired objects, or nobody (creator.Phase): it hands the phase the part of the scope it reads
// and takes back what it recorded.
func (r *NamespaceClaimReconciler) reconcileCreator(ctx context.Context, s *claimScope) error {
	c := &creator.Claim{Claim: s.claim, Class: s.class, Expired: s.expired, Request: s.request, BoundBefore: creatorBound(s),
		Desired: &s.desired, Found: &s.found, Refusal: s.refusal}
	p := &creator.Phase{APIReader: r.APIReader}
	err := p.Reconcile(ctx, c)
	s.refusal = c.Refusal
	return err
}

// reconcileUsable records whether the namespace is usable yet, and how long a new claim keeps quiet
// while it is not (usability.Phase): it hands the phase the part of the scope it reads and takes back
// what it recorded.
func (r *NamespaceClaimReconciler) reconcileUsable(ctx context.Context, s *claimScope) error {
	c := &usability.Claim{Claim: s.claim, Now: s.now, Desired: &s.desired, Namespace: s.namespace, GrantsAt: s.grantsAt,
		Repaired: s.repaired, Unusable: s.unusable, UnusablePoll: s.unusablePoll, QuietUntil: s.quietUntil}
	p := &usability.Phase{Checker: r.usable(), PendingQuiet: pendingQuiet, ReuseQuiet: reuseQuiet}
	err := p.Reconcile(ctx, c)
	s.unusable, s.unusablePoll, s.quietUntil = c.Unusable, c.UnusablePoll, c.QuietUntil
	return err
}

// usable is the usable check over the reconciler's readers: the quota from the cache, the `default`
// ServiceAccount from DefaultServiceAccounts (whose watch enqueues the claim when it appears), else
// with a metadata-only GET.
func (r *NamespaceClaimReconciler) usable() usable.Checker {
	return usable.Checker{Reader: r.Client, APIReader: r.APIReader, ServiceAccounts: r.DefaultServiceAccounts}
}

// reconcileFence holds the claim back while the admission fence is not in place (fencegate.Reconcile):
// it hands the phase the part of the scope it reads and takes back what it recorded.
func (r *NamespaceClaimReconciler) reconcileFence(_ context.Context, s *claimScope) error {
	c := &fencegate.Claim{Claim: s.claim, FencePending: s.fencePending, Refusal: s.refusal}
	fencegate.Reconcile(r.Fence, c)
	s.fencePending, s.refusal = c.FencePending, c.Refusal
	return nil
}

// fenceCoversSleep reports whether the sleep phase may write (fencegate.CoversSleep).
func (r *NamespaceClaimReconciler) fenceCoversSleep() bool { return fencegate.CoversSleep(r.Fence) }

// reconcileAccess gives the claim's identity its access once the namespace is usable (access.Phase):
// it hands the phase the part of the scope it reads and takes back what it recorded.
func (r *NamespaceClaimReconciler) reconcileAccess(ctx context.Context, s *claimScope) error {
	c := &access.Claim{Claim: s.claim, Now: s.now, Class: s.class, Desired: &s.desired, Namespace: s.namespace,
		TokenOnce: s.tokenOnce, ExpiresAt: s.expiresAt, CreatorBoundBefore: creatorBound(s),
		Repaired: s.repaired, Refusal: s.refusal, Found: &s.found, RenewAt: s.renewAt, CredentialsCheckAt: s.credentialsCheckAt}
	err := r.accessPhase().Reconcile(ctx, c)
	s.repaired, s.refusal, s.renewAt, s.credentialsCheckAt = c.Repaired, c.Refusal, c.RenewAt, c.CredentialsCheckAt
	s.credentialsReady, s.tokenIssued, s.creatorBound = c.CredentialsReady, c.TokenIssued, c.CreatorBound
	s.selfTest, s.selfTestSkipped, s.selfTestBackoff = c.SelfTest, c.SelfTestSkipped, c.SelfTestBackoff
	return err
}

// accessPhase is the access phase over the reconciler's collaborators.
func (r *NamespaceClaimReconciler) accessPhase() *access.Phase {
	return &access.Phase{Client: r.Client, APIReader: r.APIReader, Recorder: r.Recorder, Endpoint: r.Endpoint, CheckInterval: r.CredentialsCheckInterval,
		Tester: r.tester, Memory: &r.mem}
}

// deleteCredentials deletes the claim's credentials Secret once its namespace is going
// (access.DeleteCredentials); the status then forgets the token, so this runs once.
func (r *NamespaceClaimReconciler) deleteCredentials(ctx context.Context, s *claimScope) error {
	named, err := access.DeleteCredentials(ctx, r.Client, s.claim)
	if err != nil || !named {
		return err
	}
	s.found.ClearToken()
	return nil
}

// reconcileRequestOwner makes the namespace of a request claim own its request ConfigMap, through the
// ConfigMap protocol's hook (RequestProtocol.OwnRequest). It runs before the credentials are written,
// so a pipeline never holds a token whose namespace could be deleted while its request stays behind.
// A claim that is no request, or has no namespace yet, changes nothing.
func (r *NamespaceClaimReconciler) reconcileRequestOwner(ctx context.Context, s *claimScope) error {
	if !s.request || s.namespace == nil {
		return nil
	}
	return r.Requests.OwnRequest(ctx, r.Client, s.claim, s.namespace)
}

// reconcileModeSwitch deletes the token of a claim whose class switched to credentials mode
// Requester: such a claim keeps no token, refused or not.
func (r *NamespaceClaimReconciler) reconcileModeSwitch(ctx context.Context, s *claimScope) error {
	if claimpolicy.IsRequesterMode(s.class) {
		return r.deleteCredentials(ctx, s)
	}
	return nil
}

// reconcileChildren makes the objects in the namespace match the class and deletes the ones it no longer
// asks for (children.Phase): it hands the phase the part of the scope it reads and takes back what it
// recorded.
func (r *NamespaceClaimReconciler) reconcileChildren(ctx context.Context, s *claimScope) error {
	c := &children.Claim{Claim: s.claim, Now: s.now, Class: s.class, Owner: s.owner, Desired: &s.desired, Namespace: s.namespace,
		HandedOut: s.handedOut, DeferMarks: marksDeferrable(s), Repaired: s.repaired, Refusal: s.refusal,
		GrantsAt: s.grantsAt, MarksDeferred: s.marksDeferred, ChildrenReady: s.childrenReady}
	p := &children.Phase{Client: r.Client, APIReader: r.APIReader, NameReuse: r.NameReuse}
	err := p.Reconcile(ctx, c)
	s.repaired, s.refusal, s.grantsAt, s.marksDeferred, s.childrenReady = c.Repaired, c.Refusal, c.GrantsAt, c.MarksDeferred, c.ChildrenReady
	return err
}

// marksDeferrable reports whether the children of the claim's namespace that lack only the claim's
// marks are left so for now (childapply.Options.DeferMarks): within pooledMarksDelay of a handout. What a
// child grants or limits is the same with and without the marks (the pool made it from the class as it
// is now); they tell the claim's cache and the operator's maps whose it is, which its namespace, marked
// at handout, tells as well. So a handout writes only what a tenant's use needs, the bindings, and the
// marks follow in a later reconcile, no repair (claimMarksOnly).
func marksDeferrable(s *claimScope) bool {
	at := handedOutAt(s)
	return !at.IsZero() && s.now.Before(at.Add(pooledMarksDelay))
}

// reconcileSleep puts an idle namespace to sleep, holds it asleep and wakes it (sleep.Phase): it hands
// the phase the part of the scope it reads and takes back when it looks again.
func (r *NamespaceClaimReconciler) reconcileSleep(ctx context.Context, s *claimScope) error {
	c := &sleep.Claim{Claim: s.claim, Now: s.now, Class: s.class, Namespace: s.heldNamespace(), Observed: s.namespace != nil,
		Expired: s.expired, ActivityObserved: s.activityObserved, Found: &s.found, SleepAt: s.sleepAt}
	p := &sleep.Phase{Client: r.Client, APIReader: r.APIReader, Recorder: r.Recorder, Resync: r.SleepResync,
		FenceCoversSleep: r.fenceCoversSleep, FencePoll: fencePoll}
	err := p.Reconcile(ctx, c)
	s.sleepAt = c.SleepAt
	return err
}

// reconcileSeeds copies the class's seeds into the namespace and keeps them equal to their sources
// (seeds.Phase): it hands the phase the part of the scope it reads and takes back what it recorded.
func (r *NamespaceClaimReconciler) reconcileSeeds(ctx context.Context, s *claimScope) error {
	c := &seeds.Claim{Claim: s.claim, Class: s.class, Owner: s.owner, Namespace: s.namespace, Repaired: s.repaired}
	p := &seeds.Phase{Client: r.Client, APIReader: r.APIReader, SeedNamespace: r.SeedNamespace, Resync: r.SeedResync}
	if r.Seeds != nil {
		p.Sources = r.Seeds
	}
	err := p.Reconcile(ctx, c)
	s.repaired, s.seedsSynced, s.seedsBlock, s.seedsResync = c.Repaired, c.Condition, c.Blocks, c.ResyncAfter
	if c.SeedsSet {
		s.found.Seeds.Set(c.Seeds)
	}
	return err
}
