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

// Package sleep is the claim reconciler's sleep phase (Phase.Reconcile): when a held namespace falls
// asleep, is held asleep and wakes (lifecycle.DecideSleep), done by internal/lifecycle/sleeper. It reads
// and records only what Claim holds.
package sleep

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
	"github.com/nsclaim/nsclaim-operator/internal/claimstatus"
	"github.com/nsclaim/nsclaim-operator/internal/lifecycle"
	"github.com/nsclaim/nsclaim-operator/internal/lifecycle/sleeper"
	"github.com/nsclaim/nsclaim-operator/internal/monitoring"
)

// The sleep phase's reads and writes of workloads are package sleeper's (its package doc says what it
// reads and writes and why its RBAC is not generated). It writes nothing while the admission fence in
// force is not this release's (FenceCoversSleep).

// Phase is the sleep phase and its collaborators.
type Phase struct {
	// Client writes the workloads and the sleep record; APIReader reads the workloads (no cache).
	Client    client.Client
	APIReader client.Reader
	// Recorder emits the Slept, SleepReapplied and Woke Events; nil emits none.
	Recorder recorder.EventRecorder
	// Resync is how often a sleeping namespace is held asleep; 0 means DefaultSleepResync.
	Resync time.Duration
	// FenceCoversSleep reports whether the admission fence in force is this release's (or none is
	// required); FencePoll is when to look again while it is not.
	FenceCoversSleep func() bool
	FencePoll        time.Duration
}

// Claim is the part of one reconcile of a claim that the phase reads, and SleepAt, which it records.
type Claim struct {
	Claim *tenancyv1alpha1.NamespaceClaim
	Now   time.Time
	Class *tenancyv1alpha1.NamespaceClass
	// Namespace is the namespace the claim holds, or ""; Observed is set when it was observed and
	// proven the claim's in this reconcile.
	Namespace string
	Observed  bool
	// Expired is set once the claim's TTL passed; ActivityObserved once its activity was recorded in
	// this reconcile, whose findings are in Found.
	Expired, ActivityObserved bool
	Found                     *claimstatus.Fields
	// SleepAt is when the phase next looks at the namespace by the clock; zero otherwise.
	SleepAt time.Time
}

// DefaultSleepResync is how often a sleeping namespace is checked for recorded objects that were scaled
// up or resumed again (a GitOps controller restoring replicas), which are put back to sleep.
const DefaultSleepResync = 5 * time.Minute

// Reconcile puts an idle namespace to sleep after its class's lifetime.sleepAfter, holds it asleep
// (re-applying the sleep to recorded objects something restored, at each reconcile and at least every
// SleepResync), and wakes it on a heartbeat dated since it fell asleep (lifecycle.DecideSleep); the
// reads and writes of the namespace's workloads are the sleeper's (workloadSleeper). The record of what
// was changed lives in the claim's status.sleep, which only the operator writes; a sleep is recorded
// there, with its own status write, before anything is scaled down, so no replica count is ever lost.
// That write (sleeper.Sleeper.Sleep) is a documented exception to setStatus being the claim's only
// status writer (docs/architecture.md lists the exceptions). It does nothing for a claim that holds no
// namespace, whose class is unknown or that expired, and never for a namespace that is not the claim's
// own (reconcileNamespace has proven it ours before it runs); it writes nothing while the admission
// fence in force is not this release's (FenceCoversSleep).
func (r *Phase) Reconcile(ctx context.Context, s *Claim) error {
	claim := s.Claim
	if s.Class == nil || s.Namespace == "" || s.Expired || !s.Observed {
		return nil
	}
	var sleepAfter time.Duration
	if d := s.Class.Spec.Lifetime.SleepAfter; d != nil {
		sleepAfter = d.Duration
	}
	sleeping := claim.Status.Sleep != nil
	if !sleeping && (sleepAfter <= 0 || !s.ActivityObserved) {
		// A namespace recorded in this reconcile has no idle clock yet (reconcileActivity starts it
		// after the phases): it cannot have been idle for sleepAfter.
		return nil
	}
	// The activity reconcileActivity found in this reconcile, else the status as read.
	in := lifecycle.SleepInput{Now: s.Now.UTC().Truncate(time.Second), SleepAfter: sleepAfter,
		Active: s.Found.PodsActive.Or(claim.Status.PodsActive), Sleeping: sleeping}
	if last := s.Found.LastActivity.Or(claim.Status.LastActivity); last != nil {
		in.LastActivity = last.Time
	}
	if sleeping {
		in.Since = claim.Status.Sleep.Since.Time
	}
	if hb, ok := lifecycle.Heartbeat(claim, s.Now); ok {
		in.Heartbeat = hb.UTC().Truncate(time.Second)
	}
	d := lifecycle.DecideSleep(in)
	if d.Action != lifecycle.Stay || sleeping {
		if !r.FenceCoversSleep() {
			// The previous release's fence (accepted during an upgrade) does not cover scale
			// subresources and CronJobs: nothing is scaled until this release's fence is applied.
			logf.FromContext(ctx).Info("Sleep and wake wait for this release's admission fence (fence.yaml)", "namespace", s.Namespace)
			s.SleepAt = s.Now.Add(r.FencePoll)
			return nil
		}
	}
	switch d.Action {
	case lifecycle.Sleep:
		return r.sleep(ctx, s, in.Now)
	case lifecycle.Wake:
		return r.wake(ctx, s, in.Now)
	}
	if sleeping {
		s.SleepAt = s.Now.Add(r.sleepResync())
		return r.holdAsleep(ctx, s)
	}
	s.SleepAt = d.At
	return nil
}

// sleepResync is how often a sleeping namespace is held asleep: Resync, or DefaultSleepResync.
func (r *Phase) sleepResync() time.Duration {
	if r.Resync > 0 {
		return r.Resync
	}
	return DefaultSleepResync
}

// workloadSleeper is the sleep phase's I/O: reading a namespace's workloads, scaling them down or
// suspending them, restoring them, and recording a sleep in the claim's status before anything is scaled
// down (sleeper.Sleeper). The phase decides when; the sleeper does.
type workloadSleeper interface {
	// Sleep records the sleep in claim's status.sleep (its own status patch) and scales ns down; slept
	// is false when the namespace stays awake (too many objects).
	Sleep(ctx context.Context, claim *tenancyv1alpha1.NamespaceClaim, ns string, now time.Time) (planned []tenancyv1alpha1.SleptWorkload, slept bool, err error)
	// Hold scales down what ran again of record; it returns the record as its writes left it and how
	// many objects it wrote.
	Hold(ctx context.Context, ns string, record []tenancyv1alpha1.SleptWorkload) ([]tenancyv1alpha1.SleptWorkload, int, error)
	// Wake restores what is still as the sleep left it.
	Wake(ctx context.Context, ns string, record []tenancyv1alpha1.SleptWorkload) (sleeper.Woken, error)
}

// workloads is the sleeper the phase calls: it reads through the API reader (no cache) and writes with
// the reconciler's client.
func (r *Phase) workloads() workloadSleeper {
	return sleeper.Sleeper{Client: r.Client, APIReader: r.APIReader}
}

// sleep puts the claim's namespace to sleep (workloadSleeper.Sleep) and reports it (metric, Slept
// Event). A namespace with more than lifecycle.MaxSleptWorkloads objects to change is left awake.
func (r *Phase) sleep(ctx context.Context, s *Claim, now time.Time) error {
	record, slept, err := r.workloads().Sleep(ctx, s.Claim, s.Namespace, now)
	if err != nil || !slept {
		return err
	}
	s.SleepAt = s.Now.Add(r.sleepResync())
	monitoring.Slept(claimstatus.ClassName(s.Claim))
	r.event(s, corev1.EventTypeNormal, tenancyv1alpha1.SleptReason, "Sleep", sleptNote(s.Found.LastActivity.Or(s.Claim.Status.LastActivity), s.Class.Spec.Lifetime.SleepAfter, record))
	return nil
}

// holdAsleep scales the recorded objects that something scaled up again (or resumed) back down, and
// counts them in status.sleep.reapplied.
func (r *Phase) holdAsleep(ctx context.Context, s *Claim) error {
	sl := s.Claim.Status.Sleep
	record, n, err := r.workloads().Hold(ctx, s.Namespace, sl.Workloads)
	sl.Workloads = record
	if n > 0 {
		sl.Reapplied += int32(n)
		monitoring.SleepReapplied(claimstatus.ClassName(s.Claim), n)
		r.event(s, corev1.EventTypeNormal, tenancyv1alpha1.SleepReappliedReason, "Sleep", fmt.Sprintf(
			"The namespace sleeps, but %d recorded object(s) ran again (a GitOps controller or the tenant restored them): scaled down or suspended again; wake it with kubectl nsclaim wake", n))
	}
	return err
}

// wake restores the recorded objects still as the sleep (or a hold) left them (lifecycle.Restore), then
// clears status.sleep; objects someone else changed while asleep are left alone and counted in the
// Woke Event. A failed write leaves the record: the next reconcile wakes again, and writes only what
// is still as the sleep left it (an object the failed wake did restore then counts as changed).
func (r *Phase) wake(ctx context.Context, s *Claim, now time.Time) error {
	sl := s.Claim.Status.Sleep
	woken, err := r.workloads().Wake(ctx, s.Namespace, sl.Workloads)
	if err != nil {
		return err
	}
	monitoring.Woke(claimstatus.ClassName(s.Claim), lifecycle.ReplicaSeconds(sl.Workloads, sl.Since.Time, now))
	note := fmt.Sprintf("Woken by a heartbeat after sleeping since %s: %d object(s) restored to their recorded replicas or resumed",
		sl.Since.UTC().Format(time.RFC3339), woken.Restored)
	if woken.Gone > 0 {
		note += fmt.Sprintf("; %d recorded object(s) were deleted or replaced while asleep and were left alone", woken.Gone)
	}
	if woken.Changed > 0 {
		note += fmt.Sprintf("; %d recorded object(s) were changed by someone else while asleep (held, scaled or edited) and were left as they are", woken.Changed)
	}
	s.Claim.Status.Sleep = nil
	r.event(s, corev1.EventTypeNormal, tenancyv1alpha1.WokeReason, "Wake", note)
	return nil
}

// sleptNote is the Slept Event's note.
func sleptNote(last *metav1.Time, after *metav1.Duration, record []tenancyv1alpha1.SleptWorkload) string {
	var scaled, replicas, suspended int
	for _, w := range record {
		if w.Replicas != nil {
			scaled++
			replicas += int(*w.Replicas)
		} else {
			suspended++
		}
	}
	since := ""
	if last != nil {
		since = last.UTC().Format(time.RFC3339)
	}
	return fmt.Sprintf("Idle since %s for lifetime.sleepAfter %s: %d Deployment(s) and StatefulSet(s) scaled to 0 (%d replicas) and %d CronJob(s) suspended; "+
		"a heartbeat wakes it (kubectl nsclaim wake)", since, after.Duration, scaled, replicas, suspended)
}

// event records an Event on the claim, when there is a recorder. note is taken as it is (never a format).
func (r *Phase) event(s *Claim, eventType, reason, action, note string) {
	if r.Recorder != nil {
		r.Recorder.Eventf(s.Claim, nil, eventType, reason, action, "%s", note)
	}
}
