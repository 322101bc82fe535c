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
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
	"github.com/nsclaim/nsclaim-operator/internal/claimpolicy"
	"github.com/nsclaim/nsclaim-operator/internal/kube"
	"github.com/nsclaim/nsclaim-operator/internal/monitoring"
	"github.com/nsclaim/nsclaim-operator/internal/ownership"
)

// FenceCoversPool reports whether pooled namespaces may be made and handed out: this release's fence
// is intact, whose label guard lets nobody but the operator put a pool's labels on a namespace (an
// older fence does not, and a namespace someone else made look pooled could be handed to a claim with
// whatever its maker put in it), or no fence is required and the admin opted in with PoolWithoutFence.
func (r *NamespaceClaimReconciler) FenceCoversPool() bool {
	if r.Fence == nil {
		return r.PoolWithoutFence
	}
	return r.fenceCoversSleep()
}

// Busy reports whether the claim reconciler has claims in hand; the pool's refill waits while it
// does, so it never takes the API server's time from claims.
func (r *NamespaceClaimReconciler) Busy() bool { return r.inFlight.Load() > 0 }

// rememberNamespace records that this process gave the claim namespace name (made for it, or handed
// out of a pool), until its status records it: a reconcile whose cache lags that write must not give
// the claim a second namespace.
func (r *NamespaceClaimReconciler) rememberNamespace(s *claimScope, name string) {
	r.given.Store(s.claim.UID, name)
}

// forgetGiven drops what rememberNamespace kept for a claim whose status now records its namespace.
func (r *NamespaceClaimReconciler) forgetGiven(claim *tenancyv1alpha1.NamespaceClaim) {
	r.given.Delete(claim.UID)
}

// givenNamespace returns the namespace a claim that holds none in its status was given before, or "":
// one this process remembers (rememberNamespace), else one that carries the claim's UID label and
// nsclaim's ownership record for the claim (a handout or a create whose status write was lost to a
// crash or to the quiet wait). One with the label and no record was marked by someone else: it is
// reported and never taken. It is asked only
// for a claim of a class with a pool, the one case where the claim's namespace name is not derived.
func (r *NamespaceClaimReconciler) givenNamespace(ctx context.Context, claim *tenancyv1alpha1.NamespaceClaim) (string, error) {
	if v, ok := r.given.Load(claim.UID); ok {
		return v.(string), nil
	}
	list := &corev1.NamespaceList{}
	if err := r.List(ctx, list, client.MatchingLabels{tenancyv1alpha1.ClaimUIDLabel: string(claim.UID)}); err != nil {
		return "", fmt.Errorf("listing the namespaces of claim %s: %w", klog.KObj(claim), err)
	}
	owner := claimpolicy.OwnerOf(claim)
	for i := range list.Items {
		ns := &list.Items[i]
		if !claimpolicy.CarriesMarksOf(ns, owner) {
			continue
		}
		owned, err := r.Ownership.Owns(ctx, ns, subject(owner))
		if err != nil {
			return "", err
		}
		if owned {
			return ns.Name, nil
		}
		r.Ownership.Refused(ctx, ns, claim, monitoring.ActionBind)
	}
	return "", nil
}

// reconcilePool hands a claim that may use its class's pool (claimpolicy.MayUsePool) and holds no
// namespace a ready pooled namespace, and records the Pooled condition: PoolHit, or PoolEmpty when
// none was ready and the claim goes on the cold path (reconcileNamespace makes its namespace). A claim
// that holds its namespace already only gets the condition, if it has none, from its namespace's
// PooledAnnotation. The handout is one label patch under an optimistic lock (see handOut).
func (r *NamespaceClaimReconciler) reconcilePool(ctx context.Context, s *claimScope) error {
	if !claimpolicy.MayUsePool(s.claim, s.class, s.request) {
		return nil
	}
	if name := s.desired.Namespace.Name; s.held() || s.given {
		if meta.FindStatusCondition(s.claim.Status.Conditions, tenancyv1alpha1.PooledCondition) == nil {
			ns := &corev1.Namespace{}
			if ok, err := kube.Found(r.Get(ctx, client.ObjectKey{Name: name}, ns)); err != nil || !ok {
				return err
			}
			s.pooled = tenancyv1alpha1.PoolEmptyReason
			if ns.Annotations[tenancyv1alpha1.PooledAnnotation] == "true" {
				s.pooled = tenancyv1alpha1.PoolHitReason
			}
		}
		return nil
	}
	var ns *corev1.Namespace
	if r.FenceCoversPool() {
		var err error
		if ns, err = r.handOut(ctx, s); err != nil {
			return err
		}
	}
	if ns == nil {
		s.pooled = tenancyv1alpha1.PoolEmptyReason
		monitoring.PoolMiss(s.class.Name)
		return nil
	}
	s.pooled, s.handedOut = tenancyv1alpha1.PoolHitReason, ns
	monitoring.PoolHit(s.class.Name)
	// The namespace counts against the claim limit now (it carries the claim's marks).
	s.leaveLimit()
	r.rememberNamespace(s, ns.Name)
	s.desired = claimpolicy.Build(ns.Name, s.owner, s.class, claimpolicy.AllowedLabels(s.claim, s.class))
	logf.FromContext(ctx).Info("Handed out pooled namespace", "claimNamespace", klog.KObj(ns))
	return nil
}

// handOut takes one ready namespace of the class's pool for the claim, or returns nil when there is
// none: a pooled namespace (claimpolicy.IsPooled) of the class as it is now (claimpolicy.PoolCurrent),
// not terminating, whose grants may be made at once (watchcache.NamespaceReuse) and that is usable
// (the quota's status computed, the `default` ServiceAccount made). It is taken by a merge patch of
// its labels conditional on the resourceVersion it was read at (claimpolicy.HandoutPatch): if another
// claim took it, or the pool drained it, the API server answers Conflict and the next one is tried.
// Candidates are tried from a random start, so workers handing out at once rarely collide.
func (r *NamespaceClaimReconciler) handOut(ctx context.Context, s *claimScope) (*corev1.Namespace, error) {
	list := &corev1.NamespaceList{}
	if err := r.List(ctx, list, client.MatchingLabels{tenancyv1alpha1.PoolLabel: claimpolicy.Label(s.class.Name)}); err != nil {
		return nil, fmt.Errorf("listing the pool of class %s: %w", s.class.Name, err)
	}
	n := len(list.Items)
	if n == 0 {
		return nil, nil
	}
	// The quota a pooled namespace of the class holds: the same in each but for its namespace.
	quota := claimpolicy.BuildPooled("", s.class).ResourceQuota
	start := rand.IntN(n)
	for i := range n {
		ns := &list.Items[(start+i)%n]
		if !claimpolicy.IsPooled(ns) || !claimpolicy.PoolCurrent(ns, s.class) || !ns.DeletionTimestamp.IsZero() {
			continue
		}
		if r.NameReuse != nil && r.NameReuse.GrantsAt(ns).After(s.now) {
			continue
		}
		pending, _, err := r.usable().Pending(ctx, ns.Name, inNamespace(quota, ns.Name))
		if err != nil {
			return nil, err
		}
		if pending != "" {
			continue
		}
		// The pool's labels are an index: only the pool's record proves that nsclaim made this
		// namespace for this class's pool.
		owned, err := r.Ownership.Owns(ctx, ns, ownership.Pool(string(s.class.UID)))
		if err != nil {
			return nil, err
		}
		if !owned {
			r.Ownership.Refused(ctx, ns, nil, monitoring.ActionHandout)
			continue
		}
		if ok, err := r.verifyPooled(ctx, s, ns); err != nil || !ok {
			if err != nil {
				return nil, err
			}
			continue
		}
		record := r.Ownership.Key.ForUID(ns.Name, string(ns.UID), subject(s.owner))
		body, err := json.Marshal(claimpolicy.HandoutPatch(s.owner, record, ns.ResourceVersion))
		if err != nil {
			return nil, err
		}
		taken := ns.DeepCopy()
		err = r.Patch(ctx, taken, client.RawPatch(types.MergePatchType, body), client.FieldOwner(kube.FieldOwner))
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("handing out pooled namespace %s: %w", ns.Name, err)
		}
		return taken, nil
	}
	return nil, nil
}

// setPooledCondition sets the Pooled condition recorded by reconcilePool, if any.
func setPooledCondition(s *claimScope, set conditionSetter) {
	switch s.pooled {
	case tenancyv1alpha1.PoolHitReason:
		set(tenancyv1alpha1.PooledCondition, true, s.pooled, fmt.Sprintf("Namespace %s was handed out of the warm pool of NamespaceClass %s", s.desired.Namespace.Name, s.class.Name))
	case tenancyv1alpha1.PoolEmptyReason:
		set(tenancyv1alpha1.PooledCondition, false, s.pooled, fmt.Sprintf("The warm pool of NamespaceClass %s had no ready namespace; namespace %s was made for this claim", s.class.Name, s.desired.Namespace.Name))
	}
}

// observedNamespace returns the namespace name as reconcileNamespace is to judge it: the one handed out
// in this reconcile as the patch returned it, else the cached one. A claim given a namespace before
// (s.given) whose cached copy does not carry its marks yet is read again from the API server: the cache
// may lag the handout's label patch, and that copy must not refuse the claim as a conflict.
func (r *NamespaceClaimReconciler) observedNamespace(ctx context.Context, s *claimScope, name string) (*corev1.Namespace, bool, error) {
	if s.handedOut != nil && s.handedOut.Name == name {
		return s.handedOut, true, nil
	}
	ns := &corev1.Namespace{}
	ok, err := kube.Found(r.Get(ctx, client.ObjectKey{Name: name}, ns))
	if err != nil || !s.given || (ok && claimpolicy.CarriesMarksOf(ns, s.owner)) {
		return ns, ok, err
	}
	ok, err = kube.Found(r.APIReader.Get(ctx, client.ObjectKey{Name: name}, ns))
	return ns, ok, err
}

// applied is what applyChild answered for one child.
type applied struct {
	changed, deferred bool
	err               error
}

// pooledMarksDelay is how long after a handout the children its pooled namespace came with go without
// their claim's marks (marksDeferrable): past a burst of handouts, not among them.
const pooledMarksDelay = 10 * time.Second

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

// marksDeferrable reports whether the children of the claim's namespace that lack only the claim's
// marks are left so for now (applyChild's deferMarks): within pooledMarksDelay of a handout. What a
// child grants or limits is the same with and without the marks (the pool made it from the class as it
// is now); they tell the claim's cache and the operator's maps whose it is, which its namespace, marked
// at handout, tells as well. So a handout writes only what a tenant's use needs, the bindings, and the
// marks follow in a later reconcile, no repair (claimMarksOnly).
func marksDeferrable(s *claimScope) bool {
	at := handedOutAt(s)
	return !at.IsZero() && s.now.Before(at.Add(pooledMarksDelay))
}

// applyHandedOut applies the children of a namespace handed out of a pool in this reconcile, and
// returns applyChild's answer for each of objs; nil for any other claim, whose children
// reconcileChildren applies one after the other. The children the pooled namespace came with lack only
// the claim's marks: they are left so (marksDeferrable). The bindings are new.
//
// The namespace watcher's ClusterRoleBinding goes alone, then everything else at once. It passes
// kube-apiserver's RBAC escalation check, a consistent read of the ClusterRoleBindings that waits until
// that watch cache has seen etcd's newest revision; a revision it has no event for it learns from a
// progress notification, requested at most every 100 ms (docs/benchmarks.md). Alone, the first check
// in a while, it waits for one round trip to etcd; after another checked write, or beside other
// writes, it waits for the next notification. The watcher's ClusterRole, made with the pooled
// namespace, is not written (it lacks only the claim's marks); a pooled namespace made without one (by
// an older release) gets it first, before its binding.
func (r *NamespaceClaimReconciler) applyHandedOut(ctx context.Context, s *claimScope, objs []client.Object, id *strings.Replacer, deferMarks bool) []applied {
	if s.handedOut == nil || s.handedOut.Name != s.desired.Namespace.Name {
		return nil
	}
	out := make([]applied, len(objs))
	watcher, watcherBinding := client.Object(s.desired.NamespaceWatcher), client.Object(s.desired.NamespaceWatcherBinding)
	for _, wave := range []func(client.Object) bool{
		func(o client.Object) bool { return o == watcher },
		func(o client.Object) bool { return o == watcherBinding },
		func(o client.Object) bool { return o != watcher && o != watcherBinding },
	} {
		var wg sync.WaitGroup
		for i, want := range objs {
			if !wave(want) {
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				out[i].changed, out[i].deferred, out[i].err = r.applyChild(ctx, want, id, false, deferMarks)
			}()
		}
		wg.Wait()
	}
	return out
}

// inNamespace returns a copy of quota (nil: nil) in namespace ns. The copy shares quota's maps: it is
// only read.
func inNamespace(quota *corev1.ResourceQuota, ns string) *corev1.ResourceQuota {
	if quota == nil {
		return nil
	}
	q := *quota
	q.Namespace = ns
	return &q
}
