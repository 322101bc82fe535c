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

package controller

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
	"github.com/nsclaim/nsclaim-operator/internal/access"
	"github.com/nsclaim/nsclaim-operator/internal/credentials"
	"github.com/nsclaim/nsclaim-operator/internal/monitoring"
	"github.com/nsclaim/nsclaim-operator/internal/provision"
	"github.com/nsclaim/nsclaim-operator/internal/requests"
)

// reconcileClass resolves the claim's class and checks the claim against it: who may use it, the claim
// limit, labels, TTL and token policy, and whether the operator may provision the class at all. It
// records the class, the namespace name, the desired objects, the expiry, and a refusal if the claim
// may not proceed. A claim that holds a namespace keeps the class it was made from and its recorded
// expiry whatever happens to its spec or class: a refusal then stops new credentials, not the
// namespace's expiry nor the repair of its objects.
func (r *NamespaceClaimReconciler) reconcileClass(ctx context.Context, s *claimScope) error {
	claim := s.claim
	s.owner = provision.OwnerOf(claim)
	if claim.Status.ExpiresAt != nil {
		s.expiresAt = claim.Status.ExpiresAt.Time
	}
	classes := &tenancyv1alpha1.NamespaceClassList{}
	if err := r.List(ctx, classes); err != nil {
		return fmt.Errorf("listing NamespaceClasses: %w", err)
	}
	class, refusal := provision.ResolveClass(claim, classes.Items)
	if refusal != nil {
		s.refusal = refusal
		return nil
	}
	s.class = class
	claim.Status.ClassName = class.Name

	requester := &corev1.Namespace{}
	if err := r.Get(ctx, client.ObjectKey{Name: claim.Namespace}, requester); err != nil {
		return fmt.Errorf("reading requester namespace %s: %w", claim.Namespace, err)
	}
	held := s.held()
	var siblings []tenancyv1alpha1.NamespaceClaim
	if class.Spec.Access.MaxClaimsPerNamespace > 0 && !held {
		// Only a claim that does not hold a namespace yet is ranked against its siblings.
		list := &tenancyv1alpha1.NamespaceClaimList{}
		if err := r.List(ctx, list, client.InNamespace(claim.Namespace)); err != nil {
			return fmt.Errorf("listing claims in %s: %w", claim.Namespace, err)
		}
		siblings = list.Items
	}
	// A protocol request is named exactly after its ConfigMap, without the class's prefix: only in a
	// requests namespace the protocol may serve (made by nsclaim or labelled by an admin, never one
	// provisioned for a claim, whose tenant could forge request claims there).
	request := provision.IsRequestClaim(claim, r.RequestsNamespace)
	if request {
		request, _ = requests.ServeNamespace(requester)
	}
	ttl, ttlRefusal := provision.TTL(claim, class)
	once, policyRefusal := provision.TokenOnlyOnce(claim)
	s.tokenOnce = once
	for _, ref := range []*provision.Refusal{
		provision.CheckPodSecurity(class, r.MinimumPodSecurity),
		classRefusal(class),
		provision.CheckPrefix(class, request),
		provision.CheckAccess(class, requester.Labels),
		provision.CheckClaimLimit(claim, class.Name, class.Spec.Access.MaxClaimsPerNamespace, siblings),
		provision.CheckLabels(claim, class),
		ttlRefusal,
		policyRefusal,
	} {
		if ref != nil {
			s.refusal = ref
			break
		}
	}
	if s.refusal != nil && !held {
		return nil
	}
	if s.refusal == nil {
		s.expiresAt = claim.CreationTimestamp.Add(ttl)
		claim.Status.ExpiresAt = credentials.ExpiryTime(s.expiresAt)
	}
	prefix := class.Spec.Naming.Prefix
	if request {
		prefix = ""
	}
	name := provision.NamespaceName(prefix, claim.Spec.NamespaceName, claim.Namespace, claim.Name, string(requester.UID))
	if held {
		name = claim.Status.Namespace
	}
	s.desired = provision.Build(name, s.owner, class, provision.AllowedLabels(claim, class))
	return nil
}

// classRefusal is the refusal a class's own status reports for its current generation (a ClusterRole
// the operator may not bind), or nil.
func classRefusal(class *tenancyv1alpha1.NamespaceClass) *provision.Refusal {
	c := meta.FindStatusCondition(class.Status.Conditions, tenancyv1alpha1.ReadyCondition)
	if c == nil || c.Status == metav1.ConditionTrue || class.Status.ObservedGeneration != class.Generation ||
		c.Reason != tenancyv1alpha1.ClusterRoleNotBindableReason {
		return nil
	}
	return &provision.Refusal{Reason: c.Reason, Message: c.Message}
}

// reconcileExpiry deletes the namespace once the claim's TTL has passed, and marks the claim expired for
// good. It runs even when the claim is refused, so a namespace whose class disappeared still expires.
func (r *NamespaceClaimReconciler) reconcileExpiry(ctx context.Context, s *claimScope) error {
	if !provision.IsExpired(s.claim) && (s.expiresAt.IsZero() || s.now.Before(s.expiresAt)) {
		return nil
	}
	s.expired = true
	s.refusal = nil
	name := s.claim.Status.Namespace
	if name == "" {
		return nil
	}
	if err := r.deleteOwnedNamespace(ctx, s, name); err != nil {
		return err
	}
	return r.deleteCredentials(ctx, s)
}

// deleteOwnedNamespace deletes namespace name if it carries the claim's ownership marks, and records in
// the scope what still blocks a namespace that is terminating. A namespace without the marks is left
// alone. The delete is conditional on the UID and resourceVersion that were checked, so a namespace
// changed since it was read is never deleted on stale information.
func (r *NamespaceClaimReconciler) deleteOwnedNamespace(ctx context.Context, s *claimScope, name string) error {
	ns := &corev1.Namespace{}
	if ok, err := found(r.Get(ctx, client.ObjectKey{Name: name}, ns)); !ok {
		return err
	}
	if !provision.OwnedBy(ns, s.owner) {
		return nil
	}
	if ns.DeletionTimestamp.IsZero() {
		uid, rv := ns.UID, ns.ResourceVersion
		err := r.Delete(ctx, ns, client.Preconditions{UID: &uid, ResourceVersion: &rv})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting namespace %s: %w", name, err)
		}
		logf.FromContext(ctx).Info("Deleted namespace", "claimNamespace", klog.KObj(ns))
		s.terminating = "deletion requested"
		return nil
	}
	s.terminating = r.terminationBlockers(ctx, name)
	return nil
}

// terminationBlockers reads the namespace from the API server and summarises the conditions that keep
// it in Terminating.
func (r *NamespaceClaimReconciler) terminationBlockers(ctx context.Context, name string) string {
	ns := &corev1.Namespace{}
	if err := r.APIReader.Get(ctx, client.ObjectKey{Name: name}, ns); err != nil {
		return "terminating"
	}
	var msgs []string
	for _, c := range ns.Status.Conditions {
		if c.Status == corev1.ConditionTrue && c.Message != "" {
			msgs = append(msgs, c.Message)
		}
	}
	if len(msgs) == 0 {
		return "terminating"
	}
	return strings.Join(msgs, "; ")
}

// reconcileNamespace creates the namespace, or finds it and checks that it is this claim's. A namespace
// that exists without this claim's marks is refused and left untouched. A namespace this claim held
// that is gone or terminating was released by the tenant: the claim is deleted.
func (r *NamespaceClaimReconciler) reconcileNamespace(ctx context.Context, s *claimScope) error {
	want := s.desired.Namespace
	ns := &corev1.Namespace{}
	ok, err := found(r.Get(ctx, client.ObjectKey{Name: want.Name}, ns))
	if err != nil {
		return fmt.Errorf("reading namespace %s: %w", want.Name, err)
	}
	held := s.claim.Status.Namespace == want.Name
	if !ok && held {
		// The cache may lag a namespace created moments ago: only the API server's word releases.
		if ok, err = found(r.APIReader.Get(ctx, client.ObjectKey{Name: want.Name}, ns)); err != nil {
			return fmt.Errorf("reading namespace %s: %w", want.Name, err)
		}
		if !ok {
			return r.release(ctx, s)
		}
	}
	if !ok {
		ns = want.DeepCopy()
		err := r.Create(ctx, ns, client.FieldOwner(FieldOwner))
		if err == nil {
			logf.FromContext(ctx).Info("Created namespace", "claimNamespace", klog.KObj(ns))
			s.repaired++
			return r.holdNamespace(s, ns)
		}
		if !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating namespace %s: %w", want.Name, err)
		}
		if err := r.APIReader.Get(ctx, client.ObjectKey{Name: want.Name}, ns); err != nil {
			return fmt.Errorf("reading namespace %s: %w", want.Name, err)
		}
	}
	if !provision.OwnedBy(ns, s.owner) {
		s.refusal = foreignNamespaceRefusal(ns)
		return nil
	}
	if !ns.DeletionTimestamp.IsZero() {
		return r.release(ctx, s)
	}
	if !labelsAndAnnotationsMatch(want, ns) {
		patched := ns.DeepCopy()
		mergeMeta(patched, want)
		if err := r.Patch(ctx, patched, client.MergeFromWithOptions(ns, client.MergeFromWithOptimisticLock{}), client.FieldOwner(FieldOwner)); err != nil {
			return fmt.Errorf("patching namespace %s: %w", ns.Name, err)
		}
		s.repaired++
		ns = patched
	}
	return r.holdNamespace(s, ns)
}

// reconcileRequestOwner makes the namespace of a request claim own the request ConfigMap, as the
// ConfigMap protocol promises: deleting the namespace, by its tenant or anyone, removes the request.
// It runs before the credentials are written, so a pipeline never holds a token whose namespace could
// be deleted while its request stays behind.
func (r *NamespaceClaimReconciler) reconcileRequestOwner(ctx context.Context, s *claimScope) error {
	if !provision.IsRequestClaim(s.claim, r.RequestsNamespace) || s.namespace == nil {
		return nil
	}
	cm := &corev1.ConfigMap{}
	if ok, err := found(r.Get(ctx, client.ObjectKey{Namespace: s.claim.Namespace, Name: metav1.GetControllerOf(s.claim).Name}, cm)); !ok {
		return err
	}
	for _, ref := range cm.OwnerReferences {
		if ref.UID == s.namespace.UID {
			return nil
		}
	}
	before := cm.DeepCopy()
	cm.OwnerReferences = append(cm.OwnerReferences, namespaceOwnerRef(s.namespace))
	if err := r.Patch(ctx, cm, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}), client.FieldOwner(FieldOwner)); err != nil {
		return fmt.Errorf("setting namespace %s as owner of request ConfigMap %s: %w", s.namespace.Name, klog.KObj(cm), err)
	}
	return nil
}

func (r *NamespaceClaimReconciler) holdNamespace(s *claimScope, ns *corev1.Namespace) error {
	s.namespace = ns
	s.claim.Status.Namespace = ns.Name
	return nil
}

// foreignNamespaceRefusal explains why a namespace that exists is not this claim's.
func foreignNamespaceRefusal(ns *corev1.Namespace) *provision.Refusal {
	if _, ok := provision.OwnerFromMarks(ns); ok {
		// Which claim holds it is not said: that would tell one requester of another's claim.
		return &provision.Refusal{Reason: tenancyv1alpha1.NamespaceTakenReason, Message: fmt.Sprintf(
			"namespace %s is held by another NamespaceClaim: choose another spec.namespaceName", ns.Name)}
	}
	return &provision.Refusal{Reason: tenancyv1alpha1.NamespaceConflictReason, Message: fmt.Sprintf(
		"namespace %s exists and was not created by nsclaim for this claim; it is left untouched: choose another spec.namespaceName", ns.Name)}
}

// release deletes a claim whose namespace the tenant deleted. The claim's finalizer then finds the
// namespace gone, and garbage collection removes the credentials Secret the claim owns.
func (r *NamespaceClaimReconciler) release(ctx context.Context, s *claimScope) error {
	s.released = true
	if err := r.deleteCredentials(ctx, s); err != nil {
		return err
	}
	uid := s.claim.UID
	if err := r.Delete(ctx, s.claim, client.Preconditions{UID: &uid}); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("deleting released claim: %w", err)
	}
	logf.FromContext(ctx).Info("Namespace released by its tenant; deleted the claim", "claimNamespace", s.desired.Namespace.Name)
	return nil
}

// reconcileChildren makes the ServiceAccount, Role, RoleBindings, quota, limit range and network policy
// in the namespace match the class, restoring any that drifted or were deleted, and deletes the
// optional ones the class no longer asks for.
func (r *NamespaceClaimReconciler) reconcileChildren(ctx context.Context, s *claimScope) error {
	d := s.desired
	objs := []client.Object{d.ServiceAccount, d.ReleaseRole}
	for _, rb := range d.RoleBindings {
		objs = append(objs, rb)
	}
	for _, o := range []client.Object{d.ResourceQuota, d.LimitRange, d.NetworkPolicy} {
		if !isNil(o) {
			objs = append(objs, o)
		}
	}
	// The namespace owns its watcher ClusterRole and binding, so garbage collection removes them with it.
	if s.namespace != nil {
		for _, o := range []client.Object{d.NamespaceWatcher, d.NamespaceWatcherBinding} {
			o.SetOwnerReferences([]metav1.OwnerReference{namespaceOwnerRef(s.namespace)})
			objs = append(objs, o)
		}
	}
	roleFields := provision.ClusterRoleFields(s.class)
	for _, want := range objs {
		changed, err := r.ensure(ctx, want)
		if apierrors.IsForbidden(err) {
			if f, ok := boundRoleField(want, d.RoleBindings, roleFields); ok {
				// RBAC refuses a binding to a role the operator may not bind: nothing was bound.
				s.refusal = provision.NotBindable(s.class, []provision.ClusterRoleField{f})
				return nil
			}
		}
		if err != nil {
			return err
		}
		if changed {
			s.repaired++
		}
	}
	if err := r.pruneChildren(ctx, s); err != nil {
		return err
	}
	s.childrenReady = true
	return nil
}

// boundRoleField returns the class field naming the ClusterRole that want, one of the class's
// RoleBindings, binds.
func boundRoleField(want client.Object, bindings []*rbacv1.RoleBinding, fields []provision.ClusterRoleField) (provision.ClusterRoleField, bool) {
	rb, ok := want.(*rbacv1.RoleBinding)
	if !ok || rb.RoleRef.Kind != "ClusterRole" {
		return provision.ClusterRoleField{}, false
	}
	// bindings are the tenant's, the release Role's, then the class's extra ones in order; fields are
	// spec.clusterRole, then the extra ones in the same order.
	for i, b := range bindings {
		if b.Name != rb.Name {
			continue
		}
		switch {
		case i == 0:
			return fields[0], true
		case i >= 2 && i-1 < len(fields):
			return fields[i-1], true
		}
	}
	return provision.ClusterRoleField{}, false
}

// pruneChildren deletes objects this claim owns in its namespace that the class no longer asks for.
func (r *NamespaceClaimReconciler) pruneChildren(ctx context.Context, s *claimScope) error {
	ns := s.desired.Namespace.Name
	keep := map[string]bool{}
	for _, rb := range s.desired.RoleBindings {
		keep[rb.Name] = true
	}
	sel := client.MatchingLabels{tenancyv1alpha1.ClaimUIDLabel: s.owner.UID}
	rbs := &rbacv1.RoleBindingList{}
	if err := r.List(ctx, rbs, client.InNamespace(ns), sel); err != nil {
		return fmt.Errorf("listing RoleBindings in %s: %w", ns, err)
	}
	var stale []client.Object
	for i := range rbs.Items {
		if !keep[rbs.Items[i].Name] {
			stale = append(stale, &rbs.Items[i])
		}
	}
	for _, opt := range []struct {
		want client.Object
		have client.Object
		name string
	}{
		{s.desired.ResourceQuota, &corev1.ResourceQuota{}, provision.ResourceQuotaName},
		{s.desired.LimitRange, &corev1.LimitRange{}, provision.LimitRangeName},
		{s.desired.NetworkPolicy, &networkingv1.NetworkPolicy{}, provision.NetworkPolicyName},
	} {
		if !isNil(opt.want) {
			continue
		}
		if ok, err := found(r.Get(ctx, client.ObjectKey{Namespace: ns, Name: opt.name}, opt.have)); err != nil {
			return err
		} else if ok && provision.OwnedBy(opt.have, s.owner) {
			stale = append(stale, opt.have)
		}
	}
	for _, o := range stale {
		if err := r.Delete(ctx, o); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("deleting %T %s: %w", o, klog.KObj(o), err)
		}
		s.repaired++
	}
	return nil
}

// reconcileCredentials keeps a Secret next to the claim with a valid token of the tenant ServiceAccount.
// The operator never reads Secrets: what it issued is recorded in the claim's status, and the Secret is
// only ever created, or changed through a JSON patch whose first operation tests the claim-uid label,
// so a Secret of that name that nsclaim did not make for this claim is never read or changed (the
// claim is refused with SecretConflict). A token is issued when there is none or its Secret is gone,
// when the ServiceAccount was recreated, or when renewal is due; with the only-once token policy it is
// issued once, valid until the claim expires, and never again.
func (r *NamespaceClaimReconciler) reconcileCredentials(ctx context.Context, s *claimScope) error {
	claim := s.claim
	name := credentialsSecretName(claim)
	rec := tokenRecord(claim)
	ns := s.desired.Namespace.Name
	sa := &corev1.ServiceAccount{}
	if err := r.Get(ctx, client.ObjectKey{Namespace: ns, Name: tenancyv1alpha1.TenantServiceAccountName}, sa); err != nil {
		return fmt.Errorf("reading ServiceAccount %s/%s: %w", ns, tenancyv1alpha1.TenantServiceAccountName, err)
	}
	if s.tokenOnce && rec != nil && claim.Status.CredentialsSecretName == name {
		if rec.ServiceAccountUID != "" && rec.ServiceAccountUID != string(sa.UID) {
			// The ServiceAccount was recreated: the only token this claim gets is dead, and none is
			// issued again.
			s.refusal = &provision.Refusal{Reason: tenancyv1alpha1.TokenRevokedReason, Message: fmt.Sprintf(
				"ServiceAccount %s/%s was recreated, so the only-once token no longer works and is not issued again: delete the claim and ask again", ns, sa.Name)}
			return nil
		}
		s.credentialsReady = true
		return nil
	}
	// In steady state (a Ready claim where nothing was repaired) the record is trusted without asking
	// the API server, except once every CredentialsCheckInterval: a Secret deleted behind the
	// operator's back (which no watch reports, since the operator cannot read Secrets) is re-created
	// then, or at the next renewal.
	state := secretOurs
	if due := r.credentialsCheckDue(s); rec == nil || s.repaired > 0 || !readyFor(claim) || claim.Status.CredentialsSecretName != name || due {
		r.credentialsCheckedNow(s)
		var err error
		var found *credentials.Record
		if state, found, err = r.probeSecret(ctx, claim, name); err != nil {
			return err
		}
		// The Secret's own record is the latest word: the cached status may lag this operator's
		// last write.
		rec = found
	}
	if state == secretForeign {
		s.refusal = secretConflict(claim, name)
		return nil
	}
	renewBefore := provision.RenewBefore(s.class)
	decision := credentials.Schedule(s.now, rec, string(sa.UID), renewBefore)
	if !decision.Issue {
		s.renewAt = decision.RenewAt
		s.credentialsReady = true
		claim.Status.CredentialsSecretName = name
		claim.Status.TokenExpiresAt = credentials.ExpiryTime(rec.ExpiresAt)
		claim.Status.TokenServiceAccountUID = rec.ServiceAccountUID
		return nil
	}
	ttl := provision.TokenTTL(s.class)
	if s.tokenOnce {
		// Issued once, valid until the claim expires, but never longer than the class allows a token.
		ttl = min(credentials.OnceTTL(s.now, s.expiresAt), ttl)
	}
	tok, err := r.issueToken(ctx, sa, ttl)
	if err != nil {
		monitoring.CredentialFailed(s.class.Name)
		return err
	}
	logf.FromContext(ctx).Info("Issued token", "serviceAccount", klog.KObj(sa), "reason", decision.Reason, "secret", state, "expiresAt", tok.ExpiresAt, "onlyOnce", s.tokenOnce)
	data, err := credentials.SecretData(r.Endpoint, ns, tok)
	if err != nil {
		return fmt.Errorf("rendering kubeconfig: %w", err)
	}
	if state == secretAbsent {
		err = r.createSecret(ctx, s, name, data, tok)
	} else {
		err = r.Patch(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: claim.Namespace, Name: name}},
			client.RawPatch(types.JSONPatchType, credentials.ReplaceDataPatch(string(claim.UID), data, tok)), client.FieldOwner(FieldOwner))
		if isPatchTestFailure(err) {
			s.refusal = secretConflict(claim, name)
			return nil
		}
	}
	if err != nil {
		monitoring.CredentialFailed(s.class.Name)
		return fmt.Errorf("writing Secret %s/%s: %w", claim.Namespace, name, err)
	}
	monitoring.CredentialIssued(s.class.Name, decision.Reason != credentials.ReasonNoToken)
	s.tokenIssued = true
	s.repaired++
	if !s.tokenOnce {
		s.renewAt = tok.ExpiresAt.Add(-renewBefore)
	}
	claim.Status.CredentialsSecretName = name
	claim.Status.TokenExpiresAt = credentials.ExpiryTime(tok.ExpiresAt)
	claim.Status.TokenServiceAccountUID = tok.ServiceAccountUID
	s.credentialsReady = true
	return nil
}

// secretState is what a probe learned about the credentials Secret.
type secretState int

func (s secretState) String() string { return [...]string{"ours", "absent", "foreign"}[s] }

const (
	secretOurs secretState = iota
	secretAbsent
	secretForeign
)

// probeSecret finds out whether the credentials Secret exists and is this claim's, with a JSON patch
// that changes nothing and fails on any Secret that is not this claim's, so no other Secret is ever
// read. For this claim's own Secret it returns the token record the Secret carries (nil if none).
func (r *NamespaceClaimReconciler) probeSecret(ctx context.Context, claim *tenancyv1alpha1.NamespaceClaim, name string) (secretState, *credentials.Record, error) {
	state, sec, err := r.probe(ctx, claim, name)
	if state != secretOurs || err != nil || len(sec.Data[credentials.TokenKey]) == 0 {
		return state, nil, err
	}
	return state, credentials.RecordFromAnnotations(sec.Annotations), nil
}

// probe sends the probe patch and returns the Secret when it is this claim's.
func (r *NamespaceClaimReconciler) probe(ctx context.Context, claim *tenancyv1alpha1.NamespaceClaim, name string) (secretState, *corev1.Secret, error) {
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: claim.Namespace, Name: name}}
	err := r.Patch(ctx, sec, client.RawPatch(types.JSONPatchType, credentials.ProbePatch(string(claim.UID))), client.FieldOwner(FieldOwner))
	switch {
	case err == nil:
		return secretOurs, sec, nil
	case apierrors.IsNotFound(err):
		return secretAbsent, nil, nil
	case isPatchTestFailure(err):
		return secretForeign, nil, nil
	}
	return secretOurs, nil, fmt.Errorf("checking Secret %s/%s: %w", claim.Namespace, name, err)
}

// deleteCredentials deletes the claim's credentials Secret once its namespace is going (expired or
// released): a dead token must not wait, next to the claim, until the namespace is gone, where a
// pipeline re-run that asks for the same name would read it. The Secret is found with the probe that
// fails on any Secret not made for this claim, and deleted on the UID and resourceVersion the probe
// returned, so no other Secret is ever deleted. The status forgets the token, so this runs once.
func (r *NamespaceClaimReconciler) deleteCredentials(ctx context.Context, s *claimScope) error {
	claim := s.claim
	if claim.Status.CredentialsSecretName == "" && claim.Status.TokenExpiresAt == nil {
		return nil
	}
	state, sec, err := r.probe(ctx, claim, credentialsSecretName(claim))
	if err != nil {
		return err
	}
	if state == secretOurs {
		uid, rv := sec.UID, sec.ResourceVersion
		if err := r.Delete(ctx, sec, client.Preconditions{UID: &uid, ResourceVersion: &rv}); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("deleting Secret %s: %w", klog.KObj(sec), err)
		}
		logf.FromContext(ctx).Info("Deleted the credentials of a namespace that is going", "secret", klog.KObj(sec))
	}
	claim.Status.CredentialsSecretName = ""
	claim.Status.TokenExpiresAt = nil
	claim.Status.TokenServiceAccountUID = ""
	return nil
}

// createSecret creates the credentials Secret, owned by the claim (garbage-collected with it) and by the
// namespace (so that, as the ConfigMap protocol promises, deleting the namespace removes it too).
func (r *NamespaceClaimReconciler) createSecret(ctx context.Context, s *claimScope, name string, data map[string][]byte, tok credentials.Token) error {
	sec := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: s.claim.Namespace, Labels: map[string]string{
			tenancyv1alpha1.ManagedByLabel: tenancyv1alpha1.ManagedByValue,
			tenancyv1alpha1.ClaimUIDLabel:  string(s.claim.UID),
		}, Annotations: credentials.TokenAnnotations(tok)},
		Type: corev1.SecretTypeOpaque,
		Data: data,
	}
	if err := controllerutil.SetControllerReference(s.claim, sec, r.Scheme()); err != nil {
		return fmt.Errorf("setting owner of Secret %s: %w", klog.KObj(sec), err)
	}
	if s.namespace != nil {
		sec.OwnerReferences = append(sec.OwnerReferences, namespaceOwnerRef(s.namespace))
	}
	err := r.Create(ctx, sec, client.FieldOwner(FieldOwner))
	if apierrors.IsAlreadyExists(err) {
		// Made since the probe; the next reconcile probes it again.
		return fmt.Errorf("secret %s appeared while it was being created: %w", klog.KObj(sec), err)
	}
	return err
}

// namespaceOwnerRef makes ns an owner (not a controller, not blocking its deletion) of a dependent.
func namespaceOwnerRef(ns *corev1.Namespace) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: "v1", Kind: "Namespace", Name: ns.Name, UID: ns.UID}
}

// isPatchTestFailure reports a JSON patch whose test operation failed (422 without a field cause).
func isPatchTestFailure(err error) bool {
	var status apierrors.APIStatus
	return errors.As(err, &status) && status.Status().Code == http.StatusUnprocessableEntity
}

func secretConflict(claim *tenancyv1alpha1.NamespaceClaim, name string) *provision.Refusal {
	return &provision.Refusal{Reason: tenancyv1alpha1.SecretConflictReason, Message: fmt.Sprintf(
		"Secret %s/%s exists and was not created by nsclaim for this claim; it is left untouched: delete it, or set spec.credentialsSecretName", claim.Namespace, name)}
}

// credentialsSecretName is the claim's credentials Secret: spec.credentialsSecretName or the default.
func credentialsSecretName(claim *tenancyv1alpha1.NamespaceClaim) string {
	if claim.Spec.CredentialsSecretName != "" {
		return claim.Spec.CredentialsSecretName
	}
	return credentials.SecretName(claim.Name)
}

// tokenRecord is the status's record of the issued token, or nil.
func tokenRecord(claim *tenancyv1alpha1.NamespaceClaim) *credentials.Record {
	if claim.Status.TokenExpiresAt == nil {
		return nil
	}
	return &credentials.Record{ExpiresAt: claim.Status.TokenExpiresAt.Time, ServiceAccountUID: claim.Status.TokenServiceAccountUID}
}

// issueToken asks the TokenRequest API for a token of sa with the given lifetime.
func (r *NamespaceClaimReconciler) issueToken(ctx context.Context, sa *corev1.ServiceAccount, ttl time.Duration) (credentials.Token, error) {
	seconds := int64(ttl.Seconds())
	tr := &authenticationv1.TokenRequest{}
	tr.Spec.ExpirationSeconds = &seconds
	ctx, cancel := context.WithTimeout(ctx, tokenTimeout)
	defer cancel()
	if err := r.SubResource("token").Create(ctx, sa, tr); err != nil {
		return credentials.Token{}, fmt.Errorf("requesting token for ServiceAccount %s: %w", klog.KObj(sa), err)
	}
	return credentials.Token{Value: tr.Status.Token, ExpiresAt: tr.Status.ExpirationTimestamp.Time, ServiceAccountUID: string(sa.UID)}, nil
}

// reconcileSelfTest runs the SubjectAccessReview self-test of the tenant identity, before any token
// of it is written. It is skipped when the claim is Ready for its current generation and nothing was
// created or changed in this reconcile, so steady state asks the API server nothing.
func (r *NamespaceClaimReconciler) reconcileSelfTest(ctx context.Context, s *claimScope) error {
	if s.repaired == 0 && readyFor(s.claim) {
		s.selfTestSkipped = true
		return nil
	}
	ns := s.desired.Namespace.Name
	role := &rbacv1.ClusterRole{}
	var grants []rbacv1.PolicyRule
	if err := r.Get(ctx, types.NamespacedName{Name: s.desired.TenantClusterRole}, role); err == nil {
		grants = role.Rules
	} else if !apierrors.IsNotFound(err) {
		return fmt.Errorf("reading ClusterRole %s: %w", s.desired.TenantClusterRole, err)
	}
	checks := access.Checks(ns, grants, []string{s.claim.Namespace, metav1.NamespaceDefault, metav1.NamespaceSystem})
	ctx, cancel := context.WithTimeout(ctx, tokenTimeout)
	defer cancel()
	res, err := access.Verify(ctx, r.Client, access.Identity{User: s.desired.TenantUser, Groups: s.desired.TenantGroups}, checks, max(r.SelfTestConcurrency, 1))
	if err != nil {
		return err
	}
	if r.Bindings != nil {
		// Grants a sample of SubjectAccessReviews cannot see: a binding made ahead of time, in some
		// other namespace or cluster-wide, for the tenant's user or its namespace's group.
		grants, err := r.Bindings.ForeignGrants(ctx, ns)
		if err != nil {
			return err
		}
		for _, g := range grants {
			res.Excess = append(res.Excess, access.Failure{Grant: g.String()})
		}
	}
	s.selfTest = &res
	if len(res.Excess) > 0 || (len(res.Missing) > 0 && s.repaired == 0) {
		monitoring.SelfTestFailed(s.class.Name)
		s.selfTestBackoff = r.selfTestRetryAfter(s)
	} else if res.OK() {
		r.selfTestFailures.Delete(s.claim.UID)
	}
	return nil
}

// selfTestBackoffState is a claim's run of failed self-tests: how many, and when the next retry is due.
type selfTestBackoffState struct {
	failures int
	next     time.Time
}

// selfTestRetryAfter records a failed self-test of the claim and returns the wait before the next one.
// A failure before the scheduled retry (a reconcile caused by some event) keeps the schedule, so the
// backoff grows with retries, not with events.
func (r *NamespaceClaimReconciler) selfTestRetryAfter(s *claimScope) time.Duration {
	st := selfTestBackoffState{}
	if v, ok := r.selfTestFailures.Load(s.claim.UID); ok {
		st = v.(selfTestBackoffState)
		if s.now.Before(st.next) {
			return st.next.Sub(s.now)
		}
	}
	st.failures++
	st.next = s.now.Add(selfTestDelay(st.failures))
	r.selfTestFailures.Store(s.claim.UID, st)
	return st.next.Sub(s.now)
}
