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

	"github.com/nsclaim/nsclaim-operator/internal/claimstatus"
	"github.com/nsclaim/nsclaim-operator/internal/usable"
)

// reconcileUsable records whether the namespace is usable yet, in s.unusable: not while its name,
// in use moments ago, holds back its grants (see watchcache.NamespaceReuse: no binding names its tenant
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
		s.quietUntil = claimstatus.QuietUntil(&s.claim.Status, s.namespace.CreationTimestamp.Time, quiet)
	}
	return nil
}

// checkUsable records in s.unusable why the namespace is not usable yet (usable.Checker: the class's
// ResourceQuota is in force and the `default` ServiceAccount exists), so that Ready means usable, and in
// s.unusablePoll whether no watch reports the change it waits for. A claim Ready for its generation in
// a reconcile that changed nothing asks nothing (the namespace was usable and nothing was replaced).
func (r *NamespaceClaimReconciler) checkUsable(ctx context.Context, s *claimScope) error {
	if s.repaired == 0 && claimstatus.ReadyFor(s.claim) {
		return nil
	}
	pending, poll, err := r.usable().Pending(ctx, s.desired.Namespace.Name, s.desired.ResourceQuota)
	if err != nil {
		return err
	}
	s.unusable, s.unusablePoll = pending, poll
	return nil
}

// usable is the usable check over the reconciler's readers: the quota from the cache, the `default`
// ServiceAccount from DefaultServiceAccounts (whose watch enqueues the claim when it appears), else
// with a metadata-only GET.
func (r *NamespaceClaimReconciler) usable() usable.Checker {
	return usable.Checker{Reader: r.Client, APIReader: r.APIReader, ServiceAccounts: r.DefaultServiceAccounts}
}

// grantsWaitMessage says why a namespace's tenant gets no access yet.
func grantsWaitMessage(namespace string, at time.Time) string {
	return fmt.Sprintf("Waiting until %s to grant access to namespace %s: a namespace of that name may have been in use moments ago "+
		"(or the operator started moments ago and cannot know), and until then the API server may still accept a previous holder's token",
		at.UTC().Format(time.RFC3339), namespace)
}
