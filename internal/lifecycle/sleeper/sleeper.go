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

// Package sleeper makes a claimed namespace's sleep, hold and wake: it reads the namespace's
// Deployments, StatefulSets (metadata, then each one's scale subresource) and CronJobs, writes their
// scale subresources and spec.suspend as package lifecycle decides, and records a sleep in the claim's
// status.sleep before it scales anything down. The claim reconciler's sleep phase decides when
// (lifecycle.DecideSleep) and reports what happened (Events, metrics); this package does the I/O.
//
// The sleep phase lists Deployments and StatefulSets metadata only (their replicas come from the scale
// subresource: the operator never reads their Pod templates), reads CronJobs (spec.suspend), and
// writes only the scale subresources and CronJobs of the namespaces it created: the admission fence
// (config/fence) refuses the operator's token anywhere else. Its RBAC carries no kubebuilder marker on
// purpose: the previous release's fence does not cover these rights, so they are not in the generated
// manager role (install.yaml, the OLM bundle) but in config/fence/base/sleep-role.yaml, which reaches the
// cluster only with this release's fence.yaml. The claim reconciler calls nothing here until it sees
// that fence (its fenceCoversSleep); without the role these reads and writes are refused.
package sleeper

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
	"github.com/nsclaim/nsclaim-operator/internal/kube"
	"github.com/nsclaim/nsclaim-operator/internal/lifecycle"
)

// Sleeper reads and writes a claimed namespace's workloads for its sleep, hold and wake. It is called
// only for a namespace the claim holds and the operator has proven its own.
type Sleeper struct {
	// Client writes the scale subresources, the CronJobs and the claim's status.sleep record.
	Client client.Client
	// APIReader reads the workloads and their scales (the operator caches none of them).
	APIReader client.Reader
}

// Sleep records what runs in namespace ns in claim's status.sleep, then scales it down. The record is
// written at once, with a status patch of its own (an exception to the claim reconciler's one deferred
// status writer, listed as such in docs/architecture.md), so that no replica
// count is ever lost: a crash after a scale-down finds the record. claim.Status.Sleep then holds the
// record with the generations the writes left (lifecycle.Wrote), for the reconcile's status write.
// planned is the record as planned; slept is false, and nothing is written, when the namespace has more
// than lifecycle.MaxSleptWorkloads objects to change (it stays awake).
func (s Sleeper) Sleep(ctx context.Context, claim *tenancyv1alpha1.NamespaceClaim, ns string, now time.Time) (planned []tenancyv1alpha1.SleptWorkload, slept bool, err error) {
	w, err := s.observe(ctx, ns)
	if err != nil {
		return nil, false, err
	}
	record, ok := lifecycle.PlanSleep(w.observed)
	if !ok {
		logf.FromContext(ctx).Info("Not putting the namespace to sleep: too many objects to scale down or suspend",
			"namespace", ns, "objects", len(record), "max", lifecycle.MaxSleptWorkloads)
		return nil, false, nil
	}
	before := claim.DeepCopy()
	claim.Status.Sleep = &tenancyv1alpha1.SleepStatus{Since: metav1.NewTime(now), Workloads: record}
	if err := s.Client.Status().Patch(ctx, claim, client.MergeFrom(before), client.FieldOwner(kube.FieldOwner)); err != nil {
		claim.Status.Sleep = nil
		return nil, false, fmt.Errorf("recording the sleep of namespace %s: %w", ns, err)
	}
	// The generations the sleep's writes left are recorded with the reconcile's status write: a wake
	// restores only objects still as those writes left them.
	written, err := s.apply(ctx, ns, w, lifecycle.Hold(record, w.observed))
	claim.Status.Sleep.Workloads = lifecycle.Wrote(record, written)
	if err != nil {
		return nil, false, err
	}
	return record, true, nil
}

// Hold scales the objects of record that something scaled up again (or resumed) back down in namespace
// ns (lifecycle.Hold). It returns record with the generations its writes left (lifecycle.Wrote) and how
// many objects it wrote, also when a write failed.
func (s Sleeper) Hold(ctx context.Context, ns string, record []tenancyv1alpha1.SleptWorkload) ([]tenancyv1alpha1.SleptWorkload, int, error) {
	w, err := s.observe(ctx, ns)
	if err != nil {
		return record, 0, err
	}
	written, err := s.apply(ctx, ns, w, lifecycle.Hold(record, w.observed))
	return lifecycle.Wrote(record, written), len(written), err
}

// Woken is what a wake did.
type Woken struct {
	// Restored is how many recorded objects were restored to their replicas or resumed.
	Restored int
	// Gone and Changed count the recorded objects left alone: deleted or replaced, and changed by
	// someone else while asleep (lifecycle.LeftAlone).
	Gone, Changed int
}

// Wake restores the objects of record still as the sleep (or a hold) left them in namespace ns
// (lifecycle.Restore). It clears nothing: the caller clears status.sleep once Wake returns no error; a
// failed write leaves the record, and the next wake writes only what is still as the sleep left it.
func (s Sleeper) Wake(ctx context.Context, ns string, record []tenancyv1alpha1.SleptWorkload) (Woken, error) {
	w, err := s.observe(ctx, ns)
	if err != nil {
		return Woken{}, err
	}
	steps := lifecycle.Restore(record, w.observed)
	if _, err := s.apply(ctx, ns, w, steps); err != nil {
		return Woken{}, err
	}
	gone, changed := lifecycle.LeftAlone(record, w.observed)
	return Woken{Restored: len(steps), Gone: gone, Changed: changed}, nil
}
