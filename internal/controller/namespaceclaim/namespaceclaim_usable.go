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

	"github.com/nsclaim/nsclaim-operator/internal/claimpolicy"
	"github.com/nsclaim/nsclaim-operator/internal/kube"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// reconcileUsable records whether the namespace is usable yet, in s.unusable: not while its name,
// in use moments ago, holds back its grants (see informers.NamespaceReuse: no binding names its tenant
// yet, so no token, no self-test and no Ready until the previous holder's token cannot authenticate),
// nor until checkUsable finds it usable. A namespace not usable yet keeps a claim provisioned for the
// first time quiet for a moment (quietUntil: reuseQuiet for the grants, pendingQuiet for the rest).
func (r *NamespaceClaimReconciler) reconcileUsable(ctx context.Context, s *claimScope) error {
	quiet := pendingQuiet
	if s.grantsAt.After(s.now) {
		s.unusable = grantsWaitMessage(s.desired.Namespace.Name, s.grantsAt)
		quiet = reuseQuiet
	} else if err := r.checkUsable(ctx, s); err != nil {
		return err
	}
	if s.unusable != "" && s.namespace != nil {
		s.quietUntil = quietUntil(&s.claim.Status, s.namespace.CreationTimestamp.Time, quiet)
	}
	return nil
}

// checkUsable records whether a Pod that fits the class can be created in the namespace at once,
// so that Ready means usable: the class's ResourceQuota is in force (kube-controller-manager computed
// its status for the limits the class sets; until then the quota admission plugin either enforces
// nothing or refuses Pods with "status unknown for quota") and the `default` ServiceAccount exists.
// The LimitRange needs nothing: its admission reads its spec. A claim Ready for its generation in a
// reconcile that changed nothing asks nothing (the namespace was usable and nothing was replaced).
// The quota is read from the cache, whose watch brings its status; the ServiceAccount, which the
// label-selected cache does not hold, from informers.DefaultServiceAccounts (without it, with one metadata-only
// GET and a poll while it is missing), and only once the quota is in force.
func (r *NamespaceClaimReconciler) checkUsable(ctx context.Context, s *claimScope) error {
	if s.repaired == 0 && readyFor(s.claim) {
		return nil
	}
	if want := s.desired.ResourceQuota; want != nil {
		have := &corev1.ResourceQuota{}
		ok, err := kube.Found(r.Get(ctx, client.ObjectKeyFromObject(want), have))
		if err != nil {
			return fmt.Errorf("reading ResourceQuota %s: %w", client.ObjectKeyFromObject(want), err)
		}
		if !ok {
			have = nil
		}
		if msg := quotaPending(want, have); msg != "" {
			s.unusable = msg
			return nil
		}
	}
	key := client.ObjectKey{Namespace: s.desired.Namespace.Name, Name: kube.DefaultServiceAccount}
	var ok bool
	var err error
	if r.DefaultServiceAccounts != nil {
		// Its watch enqueues the claim when the ServiceAccount appears.
		ok, err = r.DefaultServiceAccounts.Exists(ctx, key.Namespace)
	} else {
		sa := &metav1.PartialObjectMetadata{}
		sa.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ServiceAccount"))
		ok, err = kube.Found(r.APIReader.Get(ctx, key, sa))
		// No watch reports its creation: poll.
		s.unusablePoll = !ok
	}
	if err != nil {
		return fmt.Errorf("reading ServiceAccount %s: %w", key, err)
	}
	if !ok {
		s.unusable = fmt.Sprintf("Waiting for kube-controller-manager to create ServiceAccount %s in namespace %s", kube.DefaultServiceAccount, key.Namespace)
	}
	return nil
}

// quotaPending says what the namespace waits for before the quota want is in force, or "" when it
// is: have is the quota as observed (nil when not observed yet), and its status.hard must hold every
// limit of want's spec.hard, as kube-controller-manager writes it (together with status.used) once it
// has counted the namespace's usage for that spec.
func quotaPending(want, have *corev1.ResourceQuota) string {
	return claimpolicy.QuotaPending(want, have)
}

// usablePoll re-checks a namespace that waits for something no watch reports (its `default`
// ServiceAccount).
const usablePoll = time.Second
