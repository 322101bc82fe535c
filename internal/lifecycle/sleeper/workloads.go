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

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
	"github.com/nsclaim/nsclaim-operator/internal/kube"
	"github.com/nsclaim/nsclaim-operator/internal/lifecycle"
	"github.com/nsclaim/nsclaim-operator/internal/monitoring"
)

// The sleep phase lists Deployments and StatefulSets metadata only (their replicas come from the scale
// subresource: the operator never reads their Pod templates), reads CronJobs (spec.suspend), and
// writes only the scale subresources and CronJobs of the namespaces it created: the admission fence
// (config/fence) refuses the operator's token anywhere else. Its RBAC carries no kubebuilder marker on
// purpose: the previous release's fence does not cover these rights, so they are not in the generated
// manager role (install.yaml, the OLM bundle) but in config/fence/base/sleep-role.yaml, which reaches the
// cluster only with this release's fence.yaml. Sleep writes nothing until the operator sees that fence
// (fenceCoversSleep); without the role its reads and writes are refused.

// DefaultSleepResync is how often a sleeping namespace is checked for recorded objects that were scaled
// up or resumed again (a GitOps controller restoring replicas), which are put back to sleep.
const DefaultSleepResync = 5 * time.Minute

// reconcileSleep puts an idle namespace to sleep after its class's lifetime.sleepAfter, holds it asleep
// (re-applying the sleep to recorded objects something restored, at each reconcile and at least every
// SleepResync), and wakes it on a heartbeat dated since it fell asleep (lifecycle.DecideSleep). The record of what was
// changed lives in the claim's status.sleep, which only the operator writes; a sleep is recorded there,
// with its own status write, before anything is scaled down, so no replica count is ever lost. It does
// nothing for a claim that holds no namespace, whose class is unknown or that expired, and never for a
// namespace that is not the claim's own (reconcileNamespace has proven it ours before it runs); it
// writes nothing while the admission fence in force is not this release's (fenceCoversSleep).
func (r *NamespaceClaimReconciler) reconcileSleep(ctx context.Context, s *claimScope) error {
	claim := s.claim
	if s.class == nil || !s.held() || s.expired || s.namespace == nil {
		return nil
	}
	var sleepAfter time.Duration
	if d := s.class.Spec.Lifetime.SleepAfter; d != nil {
		sleepAfter = d.Duration
	}
	sleeping := claim.Status.Sleep != nil
	if !sleeping && (sleepAfter <= 0 || !s.activityObserved) {
		// A namespace recorded in this reconcile has no idle clock yet (reconcileActivity starts it
		// after the phases): it cannot have been idle for sleepAfter.
		return nil
	}
	// The activity reconcileActivity found in this reconcile, else the status as read.
	in := lifecycle.SleepInput{Now: s.now.UTC().Truncate(time.Second), SleepAfter: sleepAfter,
		Active: s.found.podsActive.or(claim.Status.PodsActive), Sleeping: sleeping}
	if last := s.found.lastActivity.or(claim.Status.LastActivity); last != nil {
		in.LastActivity = last.Time
	}
	if sleeping {
		in.Since = claim.Status.Sleep.Since.Time
	}
	if hb, ok := lifecycle.Heartbeat(claim, s.now); ok {
		in.Heartbeat = hb.UTC().Truncate(time.Second)
	}
	d := lifecycle.DecideSleep(in)
	if d.Action != lifecycle.Stay || sleeping {
		if !r.fenceCoversSleep() {
			// The previous release's fence (accepted during an upgrade) does not cover scale
			// subresources and CronJobs: nothing is scaled until this release's fence is applied.
			logf.FromContext(ctx).Info("Sleep and wake wait for this release's admission fence (fence.yaml)", "namespace", s.heldNamespace())
			s.sleepAt = s.now.Add(fencePoll)
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
		s.sleepAt = s.now.Add(r.sleepResync())
		return r.holdAsleep(ctx, s)
	}
	s.sleepAt = d.At
	return nil
}

// sleepResync is how often a sleeping namespace is held asleep: SleepResync, or DefaultSleepResync.
func (r *NamespaceClaimReconciler) sleepResync() time.Duration {
	if r.SleepResync > 0 {
		return r.SleepResync
	}
	return DefaultSleepResync
}

// workloads is what the sleep phase read in a namespace: the lifecycle view, and each object's
// resourceVersion by kind and name, for the writes' optimistic lock.
type workloads struct {
	observed []lifecycle.Observed
	versions map[string]string
	cronJobs map[string]*batchv1.CronJob
}

func workloadKey(kind tenancyv1alpha1.WorkloadKind, name string) string {
	return string(kind) + "/" + name
}

// observeWorkloads reads the Deployments, StatefulSets (metadata, then each one's scale) and CronJobs
// of namespace ns from the API server (no cache: the operator keeps no informer on them).
func (r *NamespaceClaimReconciler) observeWorkloads(ctx context.Context, ns string) (*workloads, error) {
	w := &workloads{versions: map[string]string{}, cronJobs: map[string]*batchv1.CronJob{}}
	for _, kind := range []tenancyv1alpha1.WorkloadKind{tenancyv1alpha1.WorkloadDeployment, tenancyv1alpha1.WorkloadStatefulSet} {
		list := &metav1.PartialObjectMetadataList{}
		list.SetGroupVersionKind(appsv1.SchemeGroupVersion.WithKind(string(kind) + "List"))
		if err := r.APIReader.List(ctx, list, client.InNamespace(ns)); err != nil {
			return nil, fmt.Errorf("listing %ss in %s: %w", kind, ns, err)
		}
		for i := range list.Items {
			m := &list.Items[i]
			if !m.DeletionTimestamp.IsZero() {
				continue
			}
			scale, generation, err := r.readScale(ctx, kind, m)
			if err != nil {
				return nil, err
			}
			if scale == nil {
				continue
			}
			w.observed = append(w.observed, lifecycle.Observed{Kind: kind, Name: m.Name, UID: string(scale.UID), Replicas: scale.Spec.Replicas, Generation: generation})
			w.versions[workloadKey(kind, m.Name)] = scale.ResourceVersion
		}
	}
	cronJobs := &batchv1.CronJobList{}
	if err := r.APIReader.List(ctx, cronJobs, client.InNamespace(ns)); err != nil {
		return nil, fmt.Errorf("listing CronJobs in %s: %w", ns, err)
	}
	for i := range cronJobs.Items {
		c := &cronJobs.Items[i]
		if !c.DeletionTimestamp.IsZero() {
			continue
		}
		w.observed = append(w.observed, lifecycle.Observed{Kind: tenancyv1alpha1.WorkloadCronJob, Name: c.Name, UID: string(c.UID),
			Suspended: c.Spec.Suspend != nil && *c.Spec.Suspend, Generation: c.Generation})
		w.cronJobs[c.Name] = c
	}
	return w, nil
}

// readScale reads the scale of the Deployment or StatefulSet m (listed metadata only) and the object's
// generation at the same resourceVersion, re-reading the metadata when a write came between the two
// reads (a Deployment controller's status write, say). The generation is 0 when they never agree in
// three tries: the object is then neither held nor restored in this reconcile (lifecycle.Hold,
// lifecycle.Restore). scale is nil when the object is gone.
func (r *NamespaceClaimReconciler) readScale(ctx context.Context, kind tenancyv1alpha1.WorkloadKind, m *metav1.PartialObjectMetadata) (*autoscalingv1.Scale, int64, error) {
	for try := 0; ; try++ {
		scale := &autoscalingv1.Scale{}
		if err := r.SubResource("scale").Get(ctx, scalable(kind, m.Namespace, m.Name), scale); err != nil {
			if apierrors.IsNotFound(err) {
				return nil, 0, nil
			}
			return nil, 0, fmt.Errorf("reading the scale of %s %s: %w", kind, klog.KObj(m), err)
		}
		if scale.ResourceVersion == m.ResourceVersion && scale.UID == m.UID {
			return scale, m.Generation, nil
		}
		if try == 2 {
			return scale, 0, nil
		}
		fresh := &metav1.PartialObjectMetadata{}
		fresh.SetGroupVersionKind(appsv1.SchemeGroupVersion.WithKind(string(kind)))
		if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(m), fresh); err != nil {
			if apierrors.IsNotFound(err) {
				return nil, 0, nil
			}
			return nil, 0, fmt.Errorf("reading %s %s: %w", kind, klog.KObj(m), err)
		}
		m = fresh
	}
}

// scalable is an empty Deployment or StatefulSet named for a scale subresource request.
func scalable(kind tenancyv1alpha1.WorkloadKind, ns, name string) client.Object {
	meta := metav1.ObjectMeta{Namespace: ns, Name: name}
	if kind == tenancyv1alpha1.WorkloadStatefulSet {
		return &appsv1.StatefulSet{ObjectMeta: meta}
	}
	return &appsv1.Deployment{ObjectMeta: meta}
}

// apply makes the writes of a sleep (replicas 0, suspend true), a hold or a wake in namespace ns. Each
// write names the object's UID and the resourceVersion read, so an object replaced or changed since is
// never written (Conflict; the next reconcile looks again). It returns the writes made, each with the
// object's generation right after it (lifecycle.Wrote records them), also when a later write failed.
func (r *NamespaceClaimReconciler) apply(ctx context.Context, ns string, w *workloads, steps []lifecycle.Step) ([]lifecycle.Step, error) {
	var written []lifecycle.Step
	for _, st := range steps {
		if st.Kind == tenancyv1alpha1.WorkloadCronJob {
			cur := w.cronJobs[st.Name]
			if cur == nil || string(cur.UID) != st.UID {
				continue
			}
			patch := client.MergeFromWithOptions(cur.DeepCopy(), client.MergeFromWithOptimisticLock{})
			suspend := st.Suspend
			cur.Spec.Suspend = &suspend
			if err := r.Patch(ctx, cur, patch, client.FieldOwner(kube.FieldOwner)); err != nil {
				return written, fmt.Errorf("setting suspend of CronJob %s to %t: %w", klog.KObj(cur), suspend, err)
			}
			// The patch returns the CronJob as written: its generation is the one this write left.
			st.Generation = cur.Generation
			written = append(written, st)
			continue
		}
		scale := &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: st.Name, UID: types.UID(st.UID),
			ResourceVersion: w.versions[workloadKey(st.Kind, st.Name)]}, Spec: autoscalingv1.ScaleSpec{Replicas: st.Replicas}}
		if err := r.SubResource("scale").Update(ctx, scalable(st.Kind, ns, st.Name), client.WithSubResourceBody(scale), client.FieldOwner(kube.FieldOwner)); err != nil {
			return written, fmt.Errorf("scaling %s %s/%s to %d: %w", st.Kind, ns, st.Name, st.Replicas, err)
		}
		// The scale carries no generation. The write was conditional on the resourceVersion at which
		// st.Generation was read and changed spec.replicas, so the API server made it st.Generation+1.
		if st.Generation != 0 {
			st.Generation++
		}
		written = append(written, st)
	}
	return written, nil
}

// sleep records what runs in the claim's namespace in status.sleep (written at once), then scales it
// down. A namespace with more than lifecycle.MaxSleptWorkloads objects to change is left awake.
func (r *NamespaceClaimReconciler) sleep(ctx context.Context, s *claimScope, now time.Time) error {
	ns := s.heldNamespace()
	w, err := r.observeWorkloads(ctx, ns)
	if err != nil {
		return err
	}
	record, ok := lifecycle.PlanSleep(w.observed)
	if !ok {
		logf.FromContext(ctx).Info("Not putting the namespace to sleep: too many objects to scale down or suspend",
			"namespace", ns, "objects", len(record), "max", lifecycle.MaxSleptWorkloads)
		return nil
	}
	before := s.claim.DeepCopy()
	s.claim.Status.Sleep = &tenancyv1alpha1.SleepStatus{Since: metav1.NewTime(now), Workloads: record}
	if err := r.Status().Patch(ctx, s.claim, client.MergeFrom(before), client.FieldOwner(kube.FieldOwner)); err != nil {
		s.claim.Status.Sleep = nil
		return fmt.Errorf("recording the sleep of namespace %s: %w", ns, err)
	}
	// The generations the sleep's writes left are recorded with the reconcile's status write: a wake
	// restores only objects still as those writes left them.
	written, err := r.apply(ctx, ns, w, lifecycle.Hold(record, w.observed))
	s.claim.Status.Sleep.Workloads = lifecycle.Wrote(record, written)
	if err != nil {
		return err
	}
	s.sleepAt = s.now.Add(r.sleepResync())
	monitoring.Slept(className(s.claim))
	r.event(s, corev1.EventTypeNormal, tenancyv1alpha1.SleptReason, "Sleep", sleptNote(s.found.lastActivity.or(s.claim.Status.LastActivity), s.class.Spec.Lifetime.SleepAfter, record))
	return nil
}

// holdAsleep scales the recorded objects that something scaled up again (or resumed) back down, and
// counts them in status.sleep.reapplied.
func (r *NamespaceClaimReconciler) holdAsleep(ctx context.Context, s *claimScope) error {
	ns := s.heldNamespace()
	w, err := r.observeWorkloads(ctx, ns)
	if err != nil {
		return err
	}
	steps := lifecycle.Hold(s.claim.Status.Sleep.Workloads, w.observed)
	written, err := r.apply(ctx, ns, w, steps)
	s.claim.Status.Sleep.Workloads = lifecycle.Wrote(s.claim.Status.Sleep.Workloads, written)
	if n := len(written); n > 0 {
		s.claim.Status.Sleep.Reapplied += int32(n)
		monitoring.SleepReapplied(className(s.claim), n)
		r.event(s, corev1.EventTypeNormal, tenancyv1alpha1.SleepReappliedReason, "Sleep", fmt.Sprintf(
			"The namespace sleeps, but %d recorded object(s) ran again (a GitOps controller or the tenant restored them): scaled down or suspended again; wake it with kubectl nsclaim wake", n))
	}
	return err
}

// wake restores the recorded objects still as the sleep (or a hold) left them (lifecycle.Restore), then
// clears status.sleep; objects someone else changed while asleep are left alone and counted in the
// Woke Event. A failed write leaves the record: the next reconcile wakes again, and writes only what
// is still as the sleep left it (an object the failed wake did restore then counts as changed).
func (r *NamespaceClaimReconciler) wake(ctx context.Context, s *claimScope, now time.Time) error {
	ns := s.heldNamespace()
	w, err := r.observeWorkloads(ctx, ns)
	if err != nil {
		return err
	}
	sl := s.claim.Status.Sleep
	steps := lifecycle.Restore(sl.Workloads, w.observed)
	if _, err := r.apply(ctx, ns, w, steps); err != nil {
		return err
	}
	left, changed := lifecycle.LeftAlone(sl.Workloads, w.observed)
	monitoring.Woke(className(s.claim), lifecycle.ReplicaSeconds(sl.Workloads, sl.Since.Time, now))
	note := fmt.Sprintf("Woken by a heartbeat after sleeping since %s: %d object(s) restored to their recorded replicas or resumed",
		sl.Since.UTC().Format(time.RFC3339), len(steps))
	if left > 0 {
		note += fmt.Sprintf("; %d recorded object(s) were deleted or replaced while asleep and were left alone", left)
	}
	if changed > 0 {
		note += fmt.Sprintf("; %d recorded object(s) were changed by someone else while asleep (held, scaled or edited) and were left as they are", changed)
	}
	s.claim.Status.Sleep = nil
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
