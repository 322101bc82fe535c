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

	"github.com/nsclaim/nsclaim-operator/internal/controller/namespaceclaim/sleep"
)

// DefaultSleepResync is how often a sleeping namespace is checked for recorded objects that run again
// (sleep.DefaultSleepResync).
const DefaultSleepResync = sleep.DefaultSleepResync

// reconcileSleep puts an idle namespace to sleep, holds it asleep and wakes it (sleep.Phase): it hands
// the phase the part of the scope it reads and takes back when it looks again.
func (r *NamespaceClaimReconciler) reconcileSleep(ctx context.Context, s *claimScope) error {
	c := &sleep.Claim{Claim: s.claim, Now: s.now, Class: s.class, Namespace: s.heldNamespace(), Observed: s.namespace != nil,
		Expired: s.expired, ActivityObserved: s.activityObserved, Found: &s.found, SleepAt: s.sleepAt}
	p := &sleep.Phase{Client: r.Client, APIReader: r.APIReader, Recorder: r.Recorder, Resync: r.SleepResync,
		FenceCoversSleep: r.fenceCoversSleep, FencePoll: fencePoll}
	err := p.Reconcile(ctx, c)
	s.sleepAt = c.SleepAt
	return err
}
