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
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nsclaim/nsclaim-operator/internal/claimpolicy"
	"github.com/nsclaim/nsclaim-operator/internal/credentials"
	"github.com/nsclaim/nsclaim-operator/internal/lifecycle"
	"github.com/nsclaim/nsclaim-operator/internal/watchcache"
)

// +kubebuilder:rbac:groups="",resources=pods,verbs=list;watch

// reconcileActivity observes the activity of the namespace a claim holds (its Pods Pending, Running or
// Unknown, and the claim's heartbeat annotation) and records it for the claim's status (podsActive,
// lastActivity, idleExpiresAt) and the idle expiry in the scope, for reconcileExpiry. It does nothing
// for a claim that holds no namespace, whose class is unknown, or that expired; Reconcile calls it again
// after the phases when the namespace was recorded meanwhile. A spec.keep beyond the class is refused by
// reconcileClass; here the class's idleTTL then applies.
func (r *NamespaceClaimReconciler) reconcileActivity(ctx context.Context, s *claimScope) error {
	claim := s.claim
	if s.class == nil || !s.held() || claimpolicy.IsExpired(claim) {
		return nil
	}
	s.activityObserved = true
	idleTTL, _, _ := lifecycle.IdleTTL(claim, s.class)
	pods, work, err := r.countActivePods(ctx, s.heldNamespace())
	if err != nil {
		return err
	}
	if sleeps := s.class.Spec.Lifetime.SleepAfter; sleeps != nil && sleeps.Duration > 0 {
		// A class that sleeps counts only work as activity: its Deployments' and StatefulSets' Pods are
		// what a sleep stops (docs/lifecycle.md).
		pods = work
	}
	if claim.Status.Sleep != nil {
		// Asleep: the Pods ending after the scale-down, or any the tenant starts, are no activity; only
		// a heartbeat wakes the namespace (reconcileSleep).
		pods = 0
	}
	in := lifecycle.ActivityInput{Now: s.now.UTC().Truncate(time.Second), ActivePods: pods, IdleTTL: idleTTL,
		WasActive: claim.Status.PodsActive, Observed: claim.Status.LastActivity != nil}
	if in.Observed {
		in.LastActivity = claim.Status.LastActivity.Time
	}
	if hb, ok := lifecycle.Heartbeat(claim, s.now); ok {
		in.Heartbeat = hb.UTC().Truncate(time.Second)
	}
	a := lifecycle.IdleActivity(in)
	s.found.PodsActive.Set(a.Active)
	s.found.LastActivity.Set(credentials.ExpiryTime(a.LastActivity))
	s.found.IdleExpiresAt.Set(nil)
	s.idleExpiresAt = a.IdleExpiresAt
	if !a.IdleExpiresAt.IsZero() {
		s.found.IdleExpiresAt.Set(credentials.ExpiryTime(a.IdleExpiresAt))
	}
	return nil
}

// countActivePods counts the active Pods of namespace ns, and those that are work (not a ReplicaSet's or
// a StatefulSet's): from the watchcache.ActivePods cache, or without it (unit tests) from the API server.
func (r *NamespaceClaimReconciler) countActivePods(ctx context.Context, ns string) (all, work int, err error) {
	if r.ActivePods != nil {
		return r.ActivePods.CountWork(ctx, ns)
	}
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("PodList"))
	if err := r.APIReader.List(ctx, list, client.InNamespace(ns), client.MatchingFieldsSelector{Selector: watchcache.ActivePodSelector}); err != nil {
		return 0, 0, fmt.Errorf("listing active Pods in %s: %w", ns, err)
	}
	return len(list.Items), watchcache.CountWork(list.Items), nil
}
