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

package lifetime

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
	"github.com/nsclaim/nsclaim-operator/internal/claimpolicy"
	"github.com/nsclaim/nsclaim-operator/internal/claimstatus"
	"github.com/nsclaim/nsclaim-operator/internal/credentials"
	"github.com/nsclaim/nsclaim-operator/internal/lifecycle"
	"github.com/nsclaim/nsclaim-operator/internal/watchcache"
)

// +kubebuilder:rbac:groups="",resources=pods,verbs=list;watch

// ActivityClaim is the part of a claim's reconcile the activity phase reads and writes.
type ActivityClaim struct {
	Claim *tenancyv1alpha1.NamespaceClaim
	Now   time.Time
	// Class is the resolved class; nil when refused before it was found.
	Class *tenancyv1alpha1.NamespaceClass
	// Held is set when the claim holds a namespace, Namespace its name.
	Held      bool
	Namespace string
	// Found are the status fields the phases found; the phase records podsActive, lastActivity and
	// idleExpiresAt in them.
	Found *claimstatus.Fields

	// ActivityObserved is set once the phase recorded the namespace's activity.
	ActivityObserved bool
	// IdleExpiresAt is when the namespace is to be deleted for idleness; zero when it is active or its
	// class has no idle TTL.
	IdleExpiresAt time.Time
}

// Activity is the activity phase over its readers.
type Activity struct {
	// ActivePods reports the Pods Pending or Running in each namespace; nil in unit tests, where
	// APIReader lists them.
	ActivePods *watchcache.ActivePods
	APIReader  client.Reader
}

// Reconcile observes the activity of the namespace a claim holds (its Pods Pending, Running or
// Unknown, and the claim's heartbeat annotation) and records it for the claim's status (podsActive,
// lastActivity, idleExpiresAt) and the idle expiry, for the expiry phase. It does nothing
// for a claim that holds no namespace, whose class is unknown, or that expired; the claim reconciler calls it again
// after the phases when the namespace was recorded meanwhile. A spec.keep beyond the class is refused by
// the class phase; here the class's idleTTL then applies.
func (r *Activity) Reconcile(ctx context.Context, s *ActivityClaim) error {
	claim := s.Claim
	if s.Class == nil || !s.Held || claimpolicy.IsExpired(claim) {
		return nil
	}
	s.ActivityObserved = true
	idleTTL, _, _ := lifecycle.IdleTTL(claim, s.Class)
	pods, work, err := r.countActivePods(ctx, s.Namespace)
	if err != nil {
		return err
	}
	if sleeps := s.Class.Spec.Lifetime.SleepAfter; sleeps != nil && sleeps.Duration > 0 {
		// A class that sleeps counts only work as activity: its Deployments' and StatefulSets' Pods are
		// what a sleep stops (docs/lifecycle.md).
		pods = work
	}
	if claim.Status.Sleep != nil {
		// Asleep: the Pods ending after the scale-down, or any the tenant starts, are no activity; only
		// a heartbeat wakes the namespace (the sleep phase).
		pods = 0
	}
	in := lifecycle.ActivityInput{Now: s.Now.UTC().Truncate(time.Second), ActivePods: pods, IdleTTL: idleTTL,
		WasActive: claim.Status.PodsActive, Observed: claim.Status.LastActivity != nil}
	if in.Observed {
		in.LastActivity = claim.Status.LastActivity.Time
	}
	if hb, ok := lifecycle.Heartbeat(claim, s.Now); ok {
		in.Heartbeat = hb.UTC().Truncate(time.Second)
	}
	a := lifecycle.IdleActivity(in)
	s.Found.PodsActive.Set(a.Active)
	s.Found.LastActivity.Set(credentials.ExpiryTime(a.LastActivity))
	s.Found.IdleExpiresAt.Set(nil)
	s.IdleExpiresAt = a.IdleExpiresAt
	if !a.IdleExpiresAt.IsZero() {
		s.Found.IdleExpiresAt.Set(credentials.ExpiryTime(a.IdleExpiresAt))
	}
	return nil
}

// countActivePods counts the active Pods of namespace ns, and those that are work (not a ReplicaSet's or
// a StatefulSet's): from the watchcache.ActivePods cache, or without it (unit tests) from the API server.
func (r *Activity) countActivePods(ctx context.Context, ns string) (all, work int, err error) {
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
