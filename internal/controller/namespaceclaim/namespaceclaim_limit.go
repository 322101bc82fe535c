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
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
	"github.com/nsclaim/nsclaim-operator/internal/claimpolicy"
	"github.com/nsclaim/nsclaim-operator/internal/monitoring"
)

// The class's maxClaimsPerNamespace holds under any interleaving because the check and the creation
// of the namespace it admits are one critical section per requester namespace and class:
//   - within a process, limitLocks serializes them (the lock is taken before the check and released
//     once the namespace exists on the API server, or when the reconcile ends without creating one);
//   - the check counts the namespaces the API server has (a live list, never the cache), so a namespace
//     created by the previous holder of the lock, by a reconcile before a restart, or by the previous
//     leader is counted however far the cache lags;
//   - only the leader reconciles, and a leader that cannot renew its lease stops before another
//     replica may take it (controller-runtime's RenewDeadline is shorter than its LeaseDuration).
// The namespace is the slot: it is created only inside the critical section, and a claim whose
// namespace exists holds it whether or not its status says so yet.

// keyedMutex is a set of mutexes by key, each freed when nobody holds or waits for it.
type keyedMutex struct {
	mu    sync.Mutex
	locks map[string]*keyedLock
}

type keyedLock struct {
	sync.Mutex
	refs int
}

// lock locks key and returns the function that unlocks it; that function may be called more than
// once, and only the first call unlocks.
func (k *keyedMutex) lock(key string) func() {
	k.mu.Lock()
	if k.locks == nil {
		k.locks = map[string]*keyedLock{}
	}
	l := k.locks[key]
	if l == nil {
		l = &keyedLock{}
		k.locks[key] = l
	}
	l.refs++
	k.mu.Unlock()
	l.Lock()
	var once sync.Once
	return func() {
		once.Do(func() {
			l.Unlock()
			k.mu.Lock()
			if l.refs--; l.refs == 0 {
				delete(k.locks, key)
			}
			k.mu.Unlock()
		})
	}
}

// enterLimit enters, for a claim of class that does not hold a namespace yet (held is false) and whose
// class limits the claims per namespace, the critical section of its requester namespace and class
// (left once the admitted namespace exists, or when the reconcile ends: claimScope.leaveLimit), and
// returns what the limit is checked against: the claims of its namespace, and the UIDs of those that
// own a live namespace of the class (liveLimitHolders). Any other claim is not ranked: nil, nil.
func (r *NamespaceClaimReconciler) enterLimit(ctx context.Context, s *claimScope, class *tenancyv1alpha1.NamespaceClass, held bool) ([]tenancyv1alpha1.NamespaceClaim, []types.UID, error) {
	if class.Spec.Access.MaxClaimsPerNamespace <= 0 || held {
		return nil, nil, nil
	}
	ns := s.claim.Namespace
	s.unlockLimit = r.limitLocks.lock(limitKey(ns, class.Name))
	list := &tenancyv1alpha1.NamespaceClaimList{}
	if err := r.List(ctx, list, client.InNamespace(ns)); err != nil {
		return nil, nil, fmt.Errorf("listing claims in %s: %w", ns, err)
	}
	holders, err := r.liveLimitHolders(ctx, ns, class.Name)
	if err != nil {
		return nil, nil, err
	}
	return list.Items, holders, nil
}

// limitKey is the critical section of a claim limit: one class in one requester namespace.
func limitKey(requesterNamespace, class string) string { return requesterNamespace + "/" + class }

// liveLimitHolders returns the UIDs of the claims of requesterNamespace that own a namespace of class
// which the API server has and which is not being deleted. Owning is nsclaim's record (internal/ownership),
// not the labels the list selects by: a namespace someone else marked for a claim is not counted. It reads the API server, not the cache
// (metadata only): the cache may not have seen a namespace created an instant ago.
func (r *NamespaceClaimReconciler) liveLimitHolders(ctx context.Context, requesterNamespace, class string) ([]types.UID, error) {
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("NamespaceList"))
	if err := r.APIReader.List(ctx, list, client.MatchingLabels{
		tenancyv1alpha1.ManagedByLabel:      tenancyv1alpha1.ManagedByValue,
		tenancyv1alpha1.ClaimNamespaceLabel: requesterNamespace,
		tenancyv1alpha1.ClassLabel:          claimpolicy.Label(class),
	}); err != nil {
		return nil, fmt.Errorf("listing the namespaces of class %s held from %s: %w", class, requesterNamespace, err)
	}
	var uids []types.UID
	for i := range list.Items {
		ns := &list.Items[i]
		if !ns.DeletionTimestamp.IsZero() {
			continue
		}
		if ns.Labels[tenancyv1alpha1.ClaimUIDLabel] == "" {
			continue
		}
		owner, owned := claimpolicy.OwnerFromMarks(ns)
		if owned {
			var err error
			if owned, err = r.Ownership.Owns(ctx, ns, subject(owner)); err != nil {
				return nil, err
			}
		}
		if !owned {
			r.Ownership.Refused(ctx, ns, nil, monitoring.ActionCount)
			continue
		}
		uids = append(uids, types.UID(owner.UID))
	}
	return uids, nil
}
