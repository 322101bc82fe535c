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

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
	"github.com/nsclaim/nsclaim-operator/internal/claimpolicy"
	"github.com/nsclaim/nsclaim-operator/internal/kube"
	"github.com/nsclaim/nsclaim-operator/internal/monitoring"
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
func (r *NamespaceClaimReconciler) Busy() bool { return r.mem.Busy() }

// givenNamespace returns the namespace a claim that holds none in its status was given before, or "":
// one this process remembers (memory.given), else one that carries the claim's UID label and
// nsclaim's ownership record for the claim (a handout or a create whose status write was lost to a
// crash or to the quiet wait). One with the label and no record was marked by someone else: it is
// reported and never taken. It is asked only
// for a claim of a class with a pool, the one case where the claim's namespace name is not derived.
func (r *NamespaceClaimReconciler) givenNamespace(ctx context.Context, claim *tenancyv1alpha1.NamespaceClaim) (string, error) {
	if name, ok := r.mem.GivenTo(claim.UID); ok {
		return name, nil
	}
	list := &corev1.NamespaceList{}
	if err := r.List(ctx, list, client.MatchingLabels{tenancyv1alpha1.ClaimUIDLabel: string(claim.UID)}); err != nil {
		return "", fmt.Errorf("listing the namespaces of claim %s: %w", klog.KObj(claim), err)
	}
	owner := claimpolicy.OwnerOf(claim)
	for i := range list.Items {
		ns := &list.Items[i]
		// A terminating one was never the claim's to hold: a handout discards a pooled namespace it
		// took and then found tampered (namespacepool.Handout).
		if !claimpolicy.CarriesMarksOf(ns, owner) || !ns.DeletionTimestamp.IsZero() {
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
// PooledAnnotation. The handout is the Pool's (namespacepool.Handout): one label patch under an
// optimistic lock. Without a Pool every claim takes the cold path.
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
	if r.Pool != nil && r.FenceCoversPool() {
		var err error
		if ns, err = r.Pool.HandOut(ctx, s.class, s.owner, s.now); err != nil {
			s.settleLimit(err, "")
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
	// The namespace holds its claim-limit slot now (it carries the claim's marks).
	s.holdLimit(ns.Name)
	r.mem.Give(s.claim.UID, ns.Name)
	s.desired = claimpolicy.Build(ns.Name, s.owner, s.class, claimpolicy.AllowedLabels(s.claim, s.class))
	logf.FromContext(ctx).Info("Handed out pooled namespace", "claimNamespace", klog.KObj(ns))
	return nil
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
