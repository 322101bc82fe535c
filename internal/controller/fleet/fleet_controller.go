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

// Package fleet is a fleet hub's claim reconciler (--fleet-hub, docs/fleet.md): it places each claim on
// one member cluster (internal/placement), writes the choice to status.cluster before anything is made
// there, mirrors the claim into the member's requester namespace, where the member's own nsclaim
// operator provisions it as today, and copies the member's status and credentials back. A deleted
// claim's mirror is deleted, at once or when its member answers again.
package fleet

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
	"github.com/nsclaim/nsclaim-operator/internal/claimpolicy"
	"github.com/nsclaim/nsclaim-operator/internal/placement"
)

const (
	// Finalizer keeps a placed hub claim until its mirror on the member is gone: the claim's own
	// finalizer (the fence's add-finalizer policy puts it on every new claim), which on a hub the hub
	// removes, as the single-cluster reconciler does once the namespace is gone.
	Finalizer = tenancyv1alpha1.ClaimFinalizer
	// FieldOwner is the hub's field manager for the credentials Secrets it writes.
	FieldOwner = "nsclaim-fleet-hub"
	// waitRecheck is how often a claim waiting for a cluster, a member or the member's operator is looked at again.
	waitRecheck = 2 * time.Second
	// watchedRecheck is how often a claim whose member's mirrors are watched (MirrorWatch) is looked at
	// again while its mirror is not Ready or not gone: the safety net for a missed event.
	watchedRecheck = 15 * time.Second
	// readyRecheck is how often a Ready claim's mirror status is copied again when the member's mirrors
	// are not watched (not yet, or never).
	readyRecheck = 30 * time.Second
	// watchedReadyRecheck is how often, at most, a Ready claim whose member's mirrors are watched is
	// looked at again without an event (its reachability, and the safety net for a missed event): every
	// CredentialsResync when that is shorter. Its mirror is read from the member's cache then, and its
	// credentials are not copied again unless they changed or CredentialsResync passed
	// (credentialsCurrent): a Ready claim costs its members and the hub no request of its own between
	// its events.
	watchedReadyRecheck = 2 * time.Minute
	// defaultCredentialsResync is CredentialsResync when it is not set.
	defaultCredentialsResync = 10 * time.Minute
)

// errSecretConflict: a Secret with the credentials Secret's name exists next to the hub claim and was
// written by someone else.
var errSecretConflict = errors.New("credentials Secret written by someone else")

// Reconciler is the hub's claim reconciler.
type Reconciler struct {
	// Client reads (cache) and writes claims, classes and credentials Secrets on the hub.
	Client ctrl.Client
	// Registry is the hub's view of the members.
	Registry *Registry
	// MemberNamespace is the requester namespace on every member that holds the hub's mirror claims.
	MemberNamespace string
	// Clock is the time source.
	Clock clock.Clock
	// Mirrors, when set, watches the mirrors on every member: a claim waiting for its member's operator
	// is reconciled when the mirror changes, and looked at only every watchedRecheck otherwise.
	Mirrors *MirrorWatch
	// CredentialsResync is how often a Ready claim's credentials Secret is copied to the hub again
	// although the token its mirror records did not change, so that a hub Secret deleted or changed
	// behind the hub's back is written again (the operator's --credentials-check-interval); zero is
	// defaultCredentialsResync.
	CredentialsResync time.Duration

	// placeMu serialises placement: counts, choice and the assignment write.
	placeMu sync.Mutex
	ledger  ledger
	// copied is when each claim's credentials were last copied to the hub, by claim UID.
	copied copyTimes
}

// Reconcile places, mirrors, reports or cleans up one hub claim.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	// What was done to a member before this moment, its placement sees (Registry.Verify).
	began := time.Now()
	claim := &tenancyv1alpha1.NamespaceClaim{}
	if err := r.Client.Get(ctx, req.NamespacedName, claim); err != nil {
		return reconcile.Result{}, ctrl.IgnoreNotFound(err)
	}
	if !claim.DeletionTimestamp.IsZero() {
		return r.reconcileDelete(ctx, claim)
	}
	if controllerutil.AddFinalizer(claim, Finalizer) {
		if err := r.Client.Update(ctx, claim); err != nil {
			return reconcile.Result{}, fmt.Errorf("adding the finalizer to %s: %w", klog.KObj(claim), err)
		}
	}
	if claim.Status.Cluster == "" {
		placed, res, err := r.place(ctx, claim, began)
		if !placed || err != nil {
			return res, err
		}
	}
	return r.reconcileMirror(ctx, claim)
}

// place chooses a member and writes it to status.cluster with an optimistic-lock update (the claim's
// resourceVersion): the one status write that is not the reconcile's last, because it must land before
// anything is written on a member. placed is false when the claim waits (NoEligibleCluster) or is
// refused by its class.
func (r *Reconciler) place(ctx context.Context, claim *tenancyv1alpha1.NamespaceClaim, began time.Time) (bool, reconcile.Result, error) {
	r.placeMu.Lock()
	defer r.placeMu.Unlock()
	var classes tenancyv1alpha1.NamespaceClassList
	if err := r.Client.List(ctx, &classes); err != nil {
		return false, reconcile.Result{}, fmt.Errorf("listing classes: %w", err)
	}
	class, refusal := claimpolicy.ResolveClass(claim, classes.Items)
	if refusal != nil {
		return false, reconcile.Result{RequeueAfter: readyRecheck}, r.writeWait(ctx, claim, refusal.Reason, refusal.Message)
	}
	req, err := request(claim, class)
	if err != nil {
		return false, reconcile.Result{}, reconcile.TerminalError(err)
	}
	claims, placed, err := r.assignments(ctx)
	if err != nil {
		return false, reconcile.Result{}, err
	}
	reason, msg, err := r.budgetGate(ctx, claim, class, claims, placed, classes.Items)
	if err != nil {
		return false, reconcile.Result{}, err
	}
	if reason != "" {
		return false, reconcile.Result{RequeueAfter: waitRecheck}, r.writeWait(ctx, claim, reason, msg)
	}
	members, err := r.Registry.Members(ctx, r.Clock.Now())
	if err != nil {
		return false, reconcile.Result{}, err
	}
	count(members, placed, class.Name)
	d := r.chooseVerified(ctx, req, members, began)
	if d.Cluster == "" {
		return false, reconcile.Result{RequeueAfter: waitRecheck}, r.writeWait(ctx, claim, tenancyv1alpha1.NoEligibleClusterReason, d.Message())
	}
	claim.Status.Cluster, claim.Status.ClassName = d.Cluster, class.Name
	setCondition(&claim.Status, claim.Generation, tenancyv1alpha1.ReadyCondition, metav1.ConditionFalse, tenancyv1alpha1.ProvisioningReason,
		"placed on member cluster "+d.Cluster)
	if err := r.Client.Status().Update(ctx, claim); err != nil {
		return false, reconcile.Result{}, fmt.Errorf("writing the assignment of %s to %s: %w", klog.KObj(claim), d.Cluster, err)
	}
	r.ledger.add(claim.UID, d.Cluster, class.Name)
	return true, reconcile.Result{}, nil
}

// chooseVerified chooses a member and verifies its readiness and fence by a probe that began after the
// claim's reconcile did (the cached checks may be up to probeTTL old; Registry.Verify); a member that
// fails is marked so and the choice is made again.
func (r *Reconciler) chooseVerified(ctx context.Context, req placement.Request, members []placement.Member, began time.Time) placement.Decision {
	for range members {
		d := placement.Choose(req, members)
		if d.Cluster == "" {
			return d
		}
		notReady, fenceProblem := r.Registry.Verify(ctx, d.Cluster, r.Clock.Now(), began)
		if notReady == "" && fenceProblem == "" {
			return d
		}
		for i := range members {
			if members[i].Name == d.Cluster {
				members[i].NotReady, members[i].FenceNotIntact = notReady, fenceProblem
			}
		}
	}
	return placement.Choose(req, members)
}

// request is the placement request of claim under class.
func request(claim *tenancyv1alpha1.NamespaceClaim, class *tenancyv1alpha1.NamespaceClass) (placement.Request, error) {
	req := placement.Request{Preferred: claim.Spec.PreferredCluster}
	if p := class.Spec.Placement; p != nil {
		req.MaxPerCluster, req.Strategy = p.MaxClaimsPerCluster, p.Strategy
		if p.ClusterSelector != nil {
			sel, err := metav1.LabelSelectorAsSelector(p.ClusterSelector)
			if err != nil {
				return req, fmt.Errorf("class %s: spec.placement.clusterSelector: %w", class.Name, err)
			}
			req.Selector = sel
		}
	}
	return req, nil
}

// assignments are the hub's claims (the cache, not copied: read only) and every claim's assignment:
// those the cache shows and this process's own the cache may not show yet.
func (r *Reconciler) assignments(ctx context.Context) ([]tenancyv1alpha1.NamespaceClaim, map[types.UID]assignment, error) {
	var claims tenancyv1alpha1.NamespaceClaimList
	if err := r.Client.List(ctx, &claims, ctrl.UnsafeDisableDeepCopy); err != nil {
		return nil, nil, fmt.Errorf("listing claims: %w", err)
	}
	seen := map[types.UID]assignment{}
	for i := range claims.Items {
		c := &claims.Items[i]
		if c.Status.Cluster != "" {
			seen[c.UID] = assignment{cluster: c.Status.Cluster, class: c.Status.ClassName}
		}
	}
	r.ledger.mergeInto(seen)
	return claims.Items, seen, nil
}

// count fills each member's Placed and PlacedOfClass from the assignments.
func count(members []placement.Member, seen map[types.UID]assignment, className string) {
	for i := range members {
		for _, a := range seen {
			if a.cluster != members[i].Name {
				continue
			}
			members[i].Placed++
			if a.class == className {
				members[i].PlacedOfClass++
			}
		}
	}
}

// writeWait reports a claim that waits or is refused before placement (Ready=False).
func (r *Reconciler) writeWait(ctx context.Context, claim *tenancyv1alpha1.NamespaceClaim, reason, msg string) error {
	before := claim.DeepCopy()
	setCondition(&claim.Status, claim.Generation, tenancyv1alpha1.ReadyCondition, metav1.ConditionFalse, reason, msg)
	claim.Status.Phase = tenancyv1alpha1.ClaimPhasePending
	if tenancyv1alpha1.IsRefusalReason(reason) {
		claim.Status.Phase = tenancyv1alpha1.ClaimPhaseRefused
	}
	return r.patchStatus(ctx, before, claim)
}

// patchStatus writes claim's status as a merge patch over before, only if it changed.
func (r *Reconciler) patchStatus(ctx context.Context, before, claim *tenancyv1alpha1.NamespaceClaim) error {
	if equality.Semantic.DeepEqual(before.Status, claim.Status) {
		return nil
	}
	if err := r.Client.Status().Patch(ctx, claim, ctrl.MergeFrom(before)); err != nil {
		return fmt.Errorf("writing the status of %s: %w", klog.KObj(claim), err)
	}
	return nil
}

// unreachable reports a claim whose member does not answer; it stays there.
func (r *Reconciler) unreachable(ctx context.Context, claim *tenancyv1alpha1.NamespaceClaim, why string) (reconcile.Result, error) {
	before := claim.DeepCopy()
	setCondition(&claim.Status, claim.Generation, tenancyv1alpha1.ClusterReachableCondition, metav1.ConditionFalse, tenancyv1alpha1.ClusterUnreachableReason,
		fmt.Sprintf("member cluster %s: %s; the claim stays there and is cleaned up or mirrored again when it answers", claim.Status.Cluster, why))
	return reconcile.Result{RequeueAfter: waitRecheck}, r.patchStatus(ctx, before, claim)
}

// reconcileMirror keeps the mirror on the member and copies its status and credentials back.
func (r *Reconciler) reconcileMirror(ctx context.Context, claim *tenancyv1alpha1.NamespaceClaim) (reconcile.Result, error) {
	if why := r.Registry.Reachable(ctx, claim.Status.Cluster, r.Clock.Now()); why != "" {
		return r.unreachable(ctx, claim, why)
	}
	member, err := r.Registry.Client(ctx, claim.Status.Cluster)
	if err != nil {
		return r.unreachable(ctx, claim, err.Error())
	}
	want := desiredMirror(claim, r.MemberNamespace)
	have := &tenancyv1alpha1.NamespaceClaim{}
	watched := r.Mirrors.Watched(claim.Status.Cluster)
	err = r.readMirror(ctx, claim.Status.Cluster, watched, member, ctrl.ObjectKeyFromObject(want), have)
	switch {
	case apierrors.IsNotFound(err) && claim.Status.Namespace != "":
		// The member's operator ended its claim (the tenant released the namespace): so does the hub.
		return reconcile.Result{}, ctrl.IgnoreNotFound(r.Client.Delete(ctx, claim))
	case apierrors.IsNotFound(err):
		if err := member.Create(ctx, want); err != nil {
			return reconcile.Result{}, fmt.Errorf("creating the mirror of %s on %s: %w", klog.KObj(claim), claim.Status.Cluster, err)
		}
		return reconcile.Result{RequeueAfter: r.mirrorRecheck(claim.Status.Cluster)}, nil
	case err != nil:
		return r.unreachable(ctx, claim, err.Error())
	case have.Labels[HubClaimUIDLabel] != string(claim.UID):
		return reconcile.Result{}, r.writeWait(ctx, claim, tenancyv1alpha1.NamespaceTakenReason,
			fmt.Sprintf("claim %s on member cluster %s mirrors another hub claim", klog.KObj(have), claim.Status.Cluster))
	case mirrorDrift(have, want):
		have.Spec.TTL, have.Spec.Keep, have.Spec.Labels = want.Spec.TTL, want.Spec.Keep, want.Spec.Labels
		if have.Annotations == nil {
			have.Annotations = map[string]string{}
		}
		have.Annotations[ClusterAnnotation] = want.Annotations[ClusterAnnotation]
		if err := member.Update(ctx, have); err != nil {
			return reconcile.Result{}, fmt.Errorf("updating the mirror of %s on %s: %w", klog.KObj(claim), claim.Status.Cluster, err)
		}
	}
	secretName := claim.Status.CredentialsSecretName
	if !r.credentialsCurrent(claim, have) {
		secretName, err = r.copyCredentials(ctx, claim, have, member)
	}
	if errors.Is(err, errSecretConflict) {
		return reconcile.Result{}, r.writeWait(ctx, claim, tenancyv1alpha1.SecretConflictReason,
			fmt.Sprintf("a Secret %s/%s exists that the hub did not make for this claim; it is left alone", claim.Namespace, hubSecretName(claim)))
	}
	if err != nil {
		return reconcile.Result{}, err
	}
	before := claim.DeepCopy()
	claim.Status = statusFromMirror(claim, have, secretName)
	if err := r.patchStatus(ctx, before, claim); err != nil {
		return reconcile.Result{}, err
	}
	if apimeta.IsStatusConditionTrue(claim.Status.Conditions, tenancyv1alpha1.ReadyCondition) {
		if watched {
			// Looked at again when its credentials are due to be written again, at the latest.
			return reconcile.Result{RequeueAfter: min(watchedReadyRecheck, r.credentialsResync())}, nil
		}
		return reconcile.Result{RequeueAfter: readyRecheck}, nil
	}
	return reconcile.Result{RequeueAfter: r.mirrorRecheck(claim.Status.Cluster)}, nil
}

// readMirror reads the mirror key names on member cluster name: from the member's cache when its
// mirrors are watched (the watch's informer has synced), else from the member's API server (member).
// A mirror the cache does not hold, or cannot give, is read from the API server before anything is
// concluded from its absence: the cache may not have seen a mirror made an instant ago, and a mirror
// gone ends the hub claim.
func (r *Reconciler) readMirror(ctx context.Context, name string, watched bool, member ctrl.Client, key ctrl.ObjectKey, into *tenancyv1alpha1.NamespaceClaim) error {
	if watched {
		if cl, err := r.Registry.Clusters.Get(ctx, name); err == nil {
			if err := cl.GetCache().Get(ctx, key, into); err == nil {
				return nil
			}
		}
	}
	return member.Get(ctx, key, into)
}

// credentialsCurrent reports whether the hub's credentials Secret of claim already holds the token
// its mirror records, so it need not be read on the member and written on the hub again: the hub
// claim's status names the hub Secret and records the mirror's token (statusFromMirror copies it
// only after the Secret was written), and the last copy by this process is less than
// CredentialsResync old (a Secret deleted or changed on the hub is written again then; after a
// restart, at the claim's first reconcile).
func (r *Reconciler) credentialsCurrent(claim, mirror *tenancyv1alpha1.NamespaceClaim) bool {
	return sameCredentials(claim, mirror) && r.copied.within(claim.UID, r.Clock.Now(), r.credentialsResync())
}

// credentialsResync is CredentialsResync, or defaultCredentialsResync when it is not set.
func (r *Reconciler) credentialsResync() time.Duration {
	if r.CredentialsResync <= 0 {
		return defaultCredentialsResync
	}
	return r.CredentialsResync
}

// sameCredentials reports whether the hub claim's status records the credentials its mirror records,
// in the hub's own Secret: the token's expiry and the credential IDs issued.
func sameCredentials(claim, mirror *tenancyv1alpha1.NamespaceClaim) bool {
	return mirror.Status.CredentialsSecretName != "" && claim.Status.CredentialsSecretName == hubSecretName(claim) &&
		equality.Semantic.DeepEqual(claim.Status.TokenExpiresAt, mirror.Status.TokenExpiresAt) &&
		equality.Semantic.DeepEqual(claim.Status.IssuedTokens, mirror.Status.IssuedTokens)
}

// copyTimes records when each claim's credentials were last copied to the hub. Safe for concurrent use.
type copyTimes struct {
	mu sync.Mutex
	at map[types.UID]time.Time
}

// record notes a copy of uid's credentials at now.
func (c *copyTimes) record(uid types.UID, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.at == nil {
		c.at = map[types.UID]time.Time{}
	}
	c.at[uid] = now
}

// within reports whether uid's credentials were copied less than d before now.
func (c *copyTimes) within(uid types.UID, now time.Time, d time.Duration) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	at, ok := c.at[uid]
	return ok && now.Sub(at) < d
}

// forget drops uid (its claim is gone).
func (c *copyTimes) forget(uid types.UID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.at, uid)
}

// mirrorRecheck is when a claim waiting for its mirror on member is looked at again without an event:
// watchedRecheck when the member's mirrors are watched, waitRecheck when not (yet).
func (r *Reconciler) mirrorRecheck(member string) time.Duration {
	if r.Mirrors.Watched(member) {
		return watchedRecheck
	}
	return waitRecheck
}

// copyCredentials copies the member's credentials Secret of the mirror to the hub, next to the claim,
// owned by it; the returned name is empty while the member has none yet.
func (r *Reconciler) copyCredentials(ctx context.Context, claim, mirror *tenancyv1alpha1.NamespaceClaim, member ctrl.Client) (string, error) {
	if mirror.Status.CredentialsSecretName == "" {
		return "", nil
	}
	src := &corev1.Secret{}
	if err := member.Get(ctx, ctrl.ObjectKey{Namespace: mirror.Namespace, Name: mirror.Status.CredentialsSecretName}, src); err != nil {
		return "", ctrl.IgnoreNotFound(fmt.Errorf("reading the credentials of %s on %s: %w", klog.KObj(mirror), claim.Status.Cluster, err))
	}
	name := hubSecretName(claim)
	gvk, err := apiutil.GVKForObject(claim, r.Client.Scheme())
	if err != nil {
		return "", err
	}
	// Opaque and labelled managed-by nsclaim: the only Secrets the fence lets the operator create.
	dst := corev1ac.Secret(name, claim.Namespace).
		WithLabels(map[string]string{HubClaimUIDLabel: string(claim.UID), tenancyv1alpha1.ManagedByLabel: tenancyv1alpha1.ManagedByValue}).
		WithType(corev1.SecretTypeOpaque).WithData(src.Data).
		WithOwnerReferences(metav1ac.OwnerReference().WithAPIVersion(gvk.GroupVersion().String()).WithKind(gvk.Kind).
			WithName(claim.Name).WithUID(claim.UID).WithController(true).WithBlockOwnerDeletion(true))
	// Server-side apply without force: a Secret of that name someone else wrote conflicts, and is left alone.
	if err := r.Client.Apply(ctx, dst, ctrl.FieldOwner(FieldOwner)); err != nil {
		if apierrors.IsConflict(err) {
			return "", errSecretConflict
		}
		return "", fmt.Errorf("applying the credentials Secret of %s: %w", klog.KObj(claim), err)
	}
	r.copied.record(claim.UID, r.Clock.Now())
	return name, nil
}

// reconcileDelete deletes the mirror on the member (at once, or when the member answers again) and
// releases the hub claim once the member's operator has finished with it.
func (r *Reconciler) reconcileDelete(ctx context.Context, claim *tenancyv1alpha1.NamespaceClaim) (reconcile.Result, error) {
	if !controllerutil.ContainsFinalizer(claim, Finalizer) {
		return reconcile.Result{}, nil
	}
	if claim.Status.Cluster != "" {
		if why := r.Registry.Reachable(ctx, claim.Status.Cluster, r.Clock.Now()); why != "" {
			return r.unreachable(ctx, claim, why)
		}
		member, err := r.Registry.Client(ctx, claim.Status.Cluster)
		if err != nil {
			return r.unreachable(ctx, claim, err.Error())
		}
		mirror := desiredMirror(claim, r.MemberNamespace)
		if err := member.Delete(ctx, mirror); err != nil && !apierrors.IsNotFound(err) {
			return r.unreachable(ctx, claim, err.Error())
		}
		if err := member.Get(ctx, ctrl.ObjectKeyFromObject(mirror), mirror); !apierrors.IsNotFound(err) {
			// The member's operator is still deleting the namespace (or the read failed): look again.
			return reconcile.Result{RequeueAfter: r.mirrorRecheck(claim.Status.Cluster)}, nil
		}
	}
	controllerutil.RemoveFinalizer(claim, Finalizer)
	if err := r.Client.Update(ctx, claim); err != nil {
		return reconcile.Result{}, ctrl.IgnoreNotFound(err)
	}
	r.ledger.remove(claim.UID)
	r.copied.forget(claim.UID)
	return reconcile.Result{}, nil
}
