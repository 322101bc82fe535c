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

// Package children is the claim reconciler's children phase (Phase.Reconcile): the objects of the
// claim's namespace made to match its class, applied by internal/childapply, and the ones the class no
// longer asks for deleted. It reads and records only what Claim holds.
package children

import (
	"context"
	"fmt"
	"reflect"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
	"github.com/nsclaim/nsclaim-operator/internal/childapply"
	"github.com/nsclaim/nsclaim-operator/internal/claimpolicy"
	"github.com/nsclaim/nsclaim-operator/internal/kube"
	"github.com/nsclaim/nsclaim-operator/internal/watchcache"
)

// Phase is the children phase and its collaborators.
type Phase struct {
	// Client reads through the cache and writes; APIReader reads what the cache misses.
	Client    client.Client
	APIReader client.Reader
	// NameReuse holds back the grants of a namespace whose name was in use moments ago; nil skips the
	// wait.
	NameReuse *watchcache.NamespaceReuse
}

// Claim is the part of one reconcile of a claim that the phase reads (the first group) and records
// (the rest).
type Claim struct {
	Claim *tenancyv1alpha1.NamespaceClaim
	Now   time.Time
	Class *tenancyv1alpha1.NamespaceClass
	// Owner is the claim as the ownership marks name it; Desired what the namespace and its objects
	// should be.
	Owner   claimpolicy.Owner
	Desired *claimpolicy.Desired
	// Namespace is the claim's namespace, observed; HandedOut the pooled namespace handed to the claim
	// in this reconcile (nil otherwise).
	Namespace, HandedOut *corev1.Namespace
	// DeferMarks is set when the children that lack only the claim's marks are left so for now (within
	// a moment of a handout).
	DeferMarks bool

	// Repaired counts the objects created or changed in this reconcile.
	Repaired int
	// Refusal is set when RBAC refuses a binding to a role the operator may not bind.
	Refusal *claimpolicy.Refusal
	// GrantsAt is when the bindings naming the tenant may be made, when that is not at once.
	GrantsAt time.Time
	// MarksDeferred says a child was left without the claim's marks; ChildrenReady that every object
	// in the namespace matches the class.
	MarksDeferred, ChildrenReady bool
}

// Reconcile makes the ServiceAccount, RoleBindings, quota, limit range and network policy
// in the namespace match the class, restoring any that drifted or were deleted, and deletes the
// optional ones the class no longer asks for.
func (r *Phase) Reconcile(ctx context.Context, s *Claim) error {
	d := *s.Desired
	s.GrantsAt = r.grantsAt(s)
	grants := !s.GrantsAt.After(s.Now)
	var objs []client.Object
	// The namespace watcher's ClusterRole goes first and its ClusterRoleBinding last. Both pass
	// kube-apiserver's escalation check, whose read waits for a progress notification that is requested
	// at most every 100 ms (docs/benchmarks-history.md): the binding's check waits for the request after the
	// ClusterRole's, so the other children are written in that wait rather than before it.
	// The namespace owns its watcher ClusterRole and binding, so garbage collection removes them with it.
	if s.Namespace != nil {
		owner := []metav1.OwnerReference{claimpolicy.NamespaceOwnerRef(s.Namespace)}
		d.NamespaceWatcher.SetOwnerReferences(owner)
		d.NamespaceWatcherBinding.SetOwnerReferences(owner)
		objs = append(objs, d.NamespaceWatcher)
	}
	for _, rb := range d.RoleBindings {
		if grants {
			objs = append(objs, rb)
		}
	}
	// The ServiceAccount is absent in credentials mode Requester.
	for _, o := range []client.Object{d.ServiceAccount, d.ResourceQuota, d.LimitRange, d.NetworkPolicy} {
		if !isNil(o) {
			objs = append(objs, o)
		}
	}
	if s.Namespace != nil && grants {
		objs = append(objs, d.NamespaceWatcherBinding)
	}
	if !grants {
		if err := r.deleteStaleWatcherBinding(ctx, s); err != nil {
			return err
		}
	}
	// The digests of the children leave out what differs from claim to claim (see identity).
	var nsUID string
	if s.Namespace != nil {
		nsUID = string(s.Namespace.UID)
	}
	opts := childapply.Options{Identity: childapply.Identity(d.Namespace.Name, nsUID, s.Owner.UID, s.Owner.Namespace), DeferMarks: s.DeferMarks}
	roleFields := claimpolicy.ClusterRoleFields(s.Class)
	handout := r.applyHandedOut(ctx, s, objs, opts)
	for i, want := range objs {
		// Once something was repaired, whether a child the cache misses really changes no longer
		// matters: it is applied without asking the API server first.
		var changed, deferred bool
		var err error
		if handout != nil {
			changed, deferred, err = handout[i].Repaired, handout[i].Deferred, handout[i].Err
		} else {
			opts.ReadOnMiss = s.Repaired == 0
			changed, deferred, err = r.children().Apply(ctx, want, opts)
		}
		if deferred {
			s.MarksDeferred = true
		}
		if apierrors.IsForbidden(err) {
			if f, ok := BoundRoleField(want, d.RoleBindings, roleFields); ok {
				// RBAC refuses a binding to a role the operator may not bind: nothing was bound.
				s.Refusal = claimpolicy.NotBindable(s.Class, []claimpolicy.ClusterRoleField{f})
				return nil
			}
		}
		if err != nil {
			return err
		}
		if changed {
			s.Repaired++
		}
	}
	if err := r.pruneChildren(ctx, s); err != nil {
		return err
	}
	s.ChildrenReady = true
	return nil
}

// grantsAt is when the bindings that name the claim's tenant (its RoleBindings and its namespace
// watcher's ClusterRoleBinding) may be made, or zero for at once: a namespace whose name was in use
// moments ago waits (see watchcache.NamespaceReuse). A claim that was Ready has its bindings already: nothing is
// held back from it.
func (r *Phase) grantsAt(s *Claim) time.Time {
	if r.NameReuse == nil || s.Namespace == nil || meta.IsStatusConditionTrue(s.Claim.Status.Conditions, tenancyv1alpha1.ReadyCondition) {
		return time.Time{}
	}
	return r.NameReuse.GrantsAt(s.Namespace)
}

// deleteStaleWatcherBinding deletes the namespace watcher's ClusterRoleBinding of a previous
// namespace of the same name, if garbage collection has not removed it yet: it names the same user
// and would let the previous holder's token read the new namespace's object while the grants wait.
// Only a binding nsclaim made for another claim is deleted, and only as it was read.
func (r *Phase) deleteStaleWatcherBinding(ctx context.Context, s *Claim) error {
	want := s.Desired.NamespaceWatcherBinding
	have := &rbacv1.ClusterRoleBinding{}
	ok, err := kube.Found(r.Client.Get(ctx, client.ObjectKeyFromObject(want), have))
	if err != nil || !ok || !claimpolicy.IsManaged(have) || claimpolicy.MarkedFor(have, s.Owner) {
		return err
	}
	uid, rv := have.UID, have.ResourceVersion
	if err := r.Client.Delete(ctx, have, client.Preconditions{UID: &uid, ResourceVersion: &rv}); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("deleting the stale ClusterRoleBinding %s: %w", have.Name, err)
	}
	return nil
}

// BoundRoleField returns the class field naming the ClusterRole that want, one of the class's
// RoleBindings, binds.
func BoundRoleField(want client.Object, bindings []*rbacv1.RoleBinding, fields []claimpolicy.ClusterRoleField) (claimpolicy.ClusterRoleField, bool) {
	rb, ok := want.(*rbacv1.RoleBinding)
	if !ok || rb.RoleRef.Kind != "ClusterRole" {
		return claimpolicy.ClusterRoleField{}, false
	}
	// bindings are the tenant's, the release one, then the class's extra ones in order; fields are
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
	return claimpolicy.ClusterRoleField{}, false
}

// pruneChildren deletes objects this claim owns in its namespace that the class no longer asks for, and
// the release Role an earlier release made.
func (r *Phase) pruneChildren(ctx context.Context, s *Claim) error {
	ns := s.Desired.Namespace.Name
	keep := map[string]bool{}
	for _, rb := range s.Desired.RoleBindings {
		keep[rb.Name] = true
	}
	sel := client.MatchingLabels{tenancyv1alpha1.ClaimUIDLabel: s.Owner.UID}
	rbs := &rbacv1.RoleBindingList{}
	if err := r.Client.List(ctx, rbs, client.InNamespace(ns), sel); err != nil {
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
		// The tenant ServiceAccount goes when the class switches to credentials mode Requester: its
		// token, wherever a copy of it went, dies with it.
		{s.Desired.ServiceAccount, &corev1.ServiceAccount{}, tenancyv1alpha1.TenantServiceAccountName},
		{s.Desired.ResourceQuota, &corev1.ResourceQuota{}, claimpolicy.ResourceQuotaName},
		{s.Desired.LimitRange, &corev1.LimitRange{}, claimpolicy.LimitRangeName},
		{s.Desired.NetworkPolicy, &networkingv1.NetworkPolicy{}, claimpolicy.NetworkPolicyName},
	} {
		if !isNil(opt.want) {
			continue
		}
		if ok, err := kube.Found(r.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: opt.name}, opt.have)); err != nil {
			return err
		} else if ok && claimpolicy.MarkedFor(opt.have, s.Owner) {
			stale = append(stale, opt.have)
		}
	}
	// The release Role of releases before 0.4.0: its RoleBinding now binds the shared ClusterRole (the
	// apply above replaced it), so the Role grants nothing any more.
	legacy := &rbacv1.Role{}
	if ok, err := kube.Found(r.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: claimpolicy.ReleaseRoleName}, legacy)); err != nil {
		return err
	} else if ok && claimpolicy.MarkedFor(legacy, s.Owner) {
		stale = append(stale, legacy)
	}
	for _, o := range stale {
		if err := r.Client.Delete(ctx, o); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("deleting %T %s: %w", o, klog.KObj(o), err)
		}
		s.Repaired++
	}
	return nil
}

// applyHandedOut applies the children of a namespace handed out of a pool in this reconcile, and
// returns childapply's answer for each of objs; nil for any other claim, whose children
// Reconcile applies one after the other. The children the pooled namespace came with lack only
// the claim's marks: they are left so (DeferMarks). The RoleBindings and the tenant ServiceAccount are
// new.
//
// The pool makes the namespace watcher's ClusterRole and ClusterRoleBinding ahead (claimpolicy.BuildPooled):
// they are the writes that pass kube-apiserver's RBAC escalation check, a consistent read of the
// ClusterRoleBindings that waits until that watch cache has seen etcd's newest revision, learnt from a
// progress notification requested at most every 100 ms (docs/benchmarks-history.md). A handout then
// writes none of them, and everything else at once. A pooled namespace made without them (by an older
// release, or in credentials mode Requester, whose binding names the creator) gets the ClusterRole
// first, then its binding alone (alone, the first check in a while waits for one round trip to etcd;
// beside other writes, for the next notification), then the rest.
func (r *Phase) applyHandedOut(ctx context.Context, s *Claim, objs []client.Object, opts childapply.Options) []childapply.Result {
	if s.HandedOut == nil || s.HandedOut.Name != s.Desired.Namespace.Name {
		return nil
	}
	watcher, watcherBinding := client.Object(s.Desired.NamespaceWatcher), client.Object(s.Desired.NamespaceWatcherBinding)
	return r.children().ApplyInWaves(ctx, objs, opts,
		func(o client.Object) bool { return o == watcher },
		func(o client.Object) bool { return o == watcherBinding },
		func(o client.Object) bool { return o != watcher && o != watcherBinding })
}

// children applies the claim's children: reads through the cache, and the API server on a miss.
func (r *Phase) children() childapply.Applier {
	return childapply.Applier{Client: r.Client, APIReader: r.APIReader}
}

// isNil reports whether an optional desired object is absent (a typed nil inside the interface).
func isNil(o client.Object) bool {
	return o == nil || reflect.ValueOf(o).IsNil()
}
