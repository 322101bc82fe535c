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
)

// reconcileChildren makes the ServiceAccount, RoleBindings, quota, limit range and network policy
// in the namespace match the class, restoring any that drifted or were deleted, and deletes the
// optional ones the class no longer asks for.
func (r *NamespaceClaimReconciler) reconcileChildren(ctx context.Context, s *claimScope) error {
	d := s.desired
	s.grantsAt = r.grantsAt(s)
	grants := !s.grantsAt.After(s.now)
	var objs []client.Object
	// The namespace watcher's ClusterRole goes first and its ClusterRoleBinding last. Both pass
	// kube-apiserver's escalation check, whose read waits for a progress notification that is requested
	// at most every 100 ms (docs/benchmarks-history.md): the binding's check waits for the request after the
	// ClusterRole's, so the other children are written in that wait rather than before it.
	// The namespace owns its watcher ClusterRole and binding, so garbage collection removes them with it.
	if s.namespace != nil {
		owner := []metav1.OwnerReference{claimpolicy.NamespaceOwnerRef(s.namespace)}
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
	if s.namespace != nil && grants {
		objs = append(objs, d.NamespaceWatcherBinding)
	}
	if !grants {
		if err := r.deleteStaleWatcherBinding(ctx, s); err != nil {
			return err
		}
	}
	// The digests of the children leave out what differs from claim to claim (see identity).
	var nsUID string
	if s.namespace != nil {
		nsUID = string(s.namespace.UID)
	}
	opts := childapply.Options{Identity: childapply.Identity(d.Namespace.Name, nsUID, s.owner.UID, s.owner.Namespace), DeferMarks: marksDeferrable(s)}
	roleFields := claimpolicy.ClusterRoleFields(s.class)
	handout := r.applyHandedOut(ctx, s, objs, opts)
	for i, want := range objs {
		// Once something was repaired, whether a child the cache misses really changes no longer
		// matters: it is applied without asking the API server first.
		var changed, deferred bool
		var err error
		if handout != nil {
			changed, deferred, err = handout[i].Repaired, handout[i].Deferred, handout[i].Err
		} else {
			opts.ReadOnMiss = s.repaired == 0
			changed, deferred, err = r.children().Apply(ctx, want, opts)
		}
		if deferred {
			s.marksDeferred = true
		}
		if apierrors.IsForbidden(err) {
			if f, ok := boundRoleField(want, d.RoleBindings, roleFields); ok {
				// RBAC refuses a binding to a role the operator may not bind: nothing was bound.
				s.refusal = claimpolicy.NotBindable(s.class, []claimpolicy.ClusterRoleField{f})
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

// grantsAt is when the bindings that name the claim's tenant (its RoleBindings and its namespace
// watcher's ClusterRoleBinding) may be made, or zero for at once: a namespace whose name was in use
// moments ago waits (see watchcache.NamespaceReuse). A claim that was Ready has its bindings already: nothing is
// held back from it.
func (r *NamespaceClaimReconciler) grantsAt(s *claimScope) time.Time {
	if r.NameReuse == nil || s.namespace == nil || meta.IsStatusConditionTrue(s.claim.Status.Conditions, tenancyv1alpha1.ReadyCondition) {
		return time.Time{}
	}
	return r.NameReuse.GrantsAt(s.namespace)
}

// deleteStaleWatcherBinding deletes the namespace watcher's ClusterRoleBinding of a previous
// namespace of the same name, if garbage collection has not removed it yet: it names the same user
// and would let the previous holder's token read the new namespace's object while the grants wait.
// Only a binding nsclaim made for another claim is deleted, and only as it was read.
func (r *NamespaceClaimReconciler) deleteStaleWatcherBinding(ctx context.Context, s *claimScope) error {
	want := s.desired.NamespaceWatcherBinding
	have := &rbacv1.ClusterRoleBinding{}
	ok, err := kube.Found(r.Get(ctx, client.ObjectKeyFromObject(want), have))
	if err != nil || !ok || !claimpolicy.IsManaged(have) || claimpolicy.MarkedFor(have, s.owner) {
		return err
	}
	uid, rv := have.UID, have.ResourceVersion
	if err := r.Delete(ctx, have, client.Preconditions{UID: &uid, ResourceVersion: &rv}); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("deleting the stale ClusterRoleBinding %s: %w", have.Name, err)
	}
	return nil
}

// boundRoleField returns the class field naming the ClusterRole that want, one of the class's
// RoleBindings, binds.
func boundRoleField(want client.Object, bindings []*rbacv1.RoleBinding, fields []claimpolicy.ClusterRoleField) (claimpolicy.ClusterRoleField, bool) {
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
		// The tenant ServiceAccount goes when the class switches to credentials mode Requester: its
		// token, wherever a copy of it went, dies with it.
		{s.desired.ServiceAccount, &corev1.ServiceAccount{}, tenancyv1alpha1.TenantServiceAccountName},
		{s.desired.ResourceQuota, &corev1.ResourceQuota{}, claimpolicy.ResourceQuotaName},
		{s.desired.LimitRange, &corev1.LimitRange{}, claimpolicy.LimitRangeName},
		{s.desired.NetworkPolicy, &networkingv1.NetworkPolicy{}, claimpolicy.NetworkPolicyName},
	} {
		if !isNil(opt.want) {
			continue
		}
		if ok, err := kube.Found(r.Get(ctx, client.ObjectKey{Namespace: ns, Name: opt.name}, opt.have)); err != nil {
			return err
		} else if ok && claimpolicy.MarkedFor(opt.have, s.owner) {
			stale = append(stale, opt.have)
		}
	}
	// The release Role of releases before 0.4.0: its RoleBinding now binds the shared ClusterRole (the
	// apply above replaced it), so the Role grants nothing any more.
	legacy := &rbacv1.Role{}
	if ok, err := kube.Found(r.Get(ctx, client.ObjectKey{Namespace: ns, Name: claimpolicy.ReleaseRoleName}, legacy)); err != nil {
		return err
	} else if ok && claimpolicy.MarkedFor(legacy, s.owner) {
		stale = append(stale, legacy)
	}
	for _, o := range stale {
		if err := r.Delete(ctx, o); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("deleting %T %s: %w", o, klog.KObj(o), err)
		}
		s.repaired++
	}
	return nil
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

// applyHandedOut applies the children of a namespace handed out of a pool in this reconcile, and
// returns childapply's answer for each of objs; nil for any other claim, whose children
// reconcileChildren applies one after the other. The children the pooled namespace came with lack only
// the claim's marks: they are left so (marksDeferrable). The bindings are new.
//
// The namespace watcher's ClusterRoleBinding goes alone, then everything else at once. It passes
// kube-apiserver's RBAC escalation check, a consistent read of the ClusterRoleBindings that waits until
// that watch cache has seen etcd's newest revision; a revision it has no event for it learns from a
// progress notification, requested at most every 100 ms (docs/benchmarks-history.md). Alone, the first check
// in a while, it waits for one round trip to etcd; after another checked write, or beside other
// writes, it waits for the next notification. The watcher's ClusterRole, made with the pooled
// namespace, is not written (it lacks only the claim's marks); a pooled namespace made without one (by
// an older release) gets it first, before its binding.
func (r *NamespaceClaimReconciler) applyHandedOut(ctx context.Context, s *claimScope, objs []client.Object, opts childapply.Options) []childapply.Result {
	if s.handedOut == nil || s.handedOut.Name != s.desired.Namespace.Name {
		return nil
	}
	watcher, watcherBinding := client.Object(s.desired.NamespaceWatcher), client.Object(s.desired.NamespaceWatcherBinding)
	return r.children().ApplyInWaves(ctx, objs, opts,
		func(o client.Object) bool { return o == watcher },
		func(o client.Object) bool { return o == watcherBinding },
		func(o client.Object) bool { return o != watcher && o != watcherBinding })
}

// children applies the claim's children: reads through the cache, and the API server on a miss.
func (r *NamespaceClaimReconciler) children() childapply.Applier {
	return childapply.Applier{Client: r.Client, APIReader: r.APIReader}
}

// isNil reports whether an optional desired object is absent (a typed nil inside the interface).
func isNil(o client.Object) bool {
	return o == nil || reflect.ValueOf(o).IsNil()
}
