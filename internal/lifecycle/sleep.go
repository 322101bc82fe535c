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

// Package lifecycle decides a claimed namespace's life after it is made: how long it may stay idle
// (IdleTTL, the heartbeat, IdleActivity), when it sleeps and wakes, and what a sleep changes and a wake
// restores. It reads no API: the controller gives it what it observed and applies what it returns
// (the sleep's reads and writes are lifecycle/sleeper's).
package lifecycle

import (
	"sort"
	"time"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
)

// MaxSleptWorkloads is how many objects one sleep records (status.sleep.workloads' MaxItems). A
// namespace with more Deployments, StatefulSets and CronJobs to scale down or suspend is not put to
// sleep at all: half a sleep would save little and confuse everyone.
const MaxSleptWorkloads = 256

// Action is what the sleep phase does to a namespace in one reconcile.
type Action string

const (
	// Stay changes nothing: the namespace stays awake or asleep.
	Stay Action = "Stay"
	// Sleep scales the namespace's workloads down and records them.
	Sleep Action = "Sleep"
	// Wake restores what the sleep recorded and clears the record.
	Wake Action = "Wake"
)

// SleepInput is what one reconcile knows about a held namespace, for the sleep decision.
type SleepInput struct {
	// Now is the reconcile's time.
	Now time.Time
	// SleepAfter is the class's lifetime.sleepAfter; zero when it sets none.
	SleepAfter time.Duration
	// Active is set while a Pod counts as activity (see IdleActivity); a sleeping namespace's
	// Pods never do.
	Active bool
	// LastActivity is when the idle clock last started (status.lastActivity).
	LastActivity time.Time
	// Sleeping is set while status.sleep records a sleep; Since is its status.sleep.since.
	Sleeping bool
	Since    time.Time
	// Heartbeat is the accepted heartbeat (Heartbeat); zero when there is none.
	Heartbeat time.Time
}

// SleepDecision is the sleep phase's action, and when the clock next matters to it.
type SleepDecision struct {
	Action Action
	// At is when the namespace falls asleep if nothing happens before (awake and idle, Action Stay);
	// zero otherwise.
	At time.Time
}

// DecideSleep decides whether a held namespace falls asleep or wakes. An awake namespace sleeps once
// it has been idle for SleepAfter (never while a Pod is active, never without SleepAfter). A sleeping
// namespace wakes on a heartbeat dated at or after the moment it fell asleep (kubectl nsclaim
// heartbeat, extend and wake each send one: a heartbeat from before was already counted in
// LastActivity), or when its class no longer sets SleepAfter. Pods never wake it.
func DecideSleep(in SleepInput) SleepDecision {
	if in.Sleeping {
		if in.SleepAfter <= 0 || (!in.Heartbeat.IsZero() && !in.Heartbeat.Before(in.Since)) {
			return SleepDecision{Action: Wake}
		}
		return SleepDecision{Action: Stay}
	}
	if in.SleepAfter <= 0 || in.Active {
		return SleepDecision{Action: Stay}
	}
	at := in.LastActivity.Add(in.SleepAfter)
	if in.Now.Before(at) {
		return SleepDecision{Action: Stay, At: at}
	}
	return SleepDecision{Action: Sleep}
}

// Observed is a Deployment, StatefulSet or CronJob as the operator read it in the claimed namespace.
type Observed struct {
	Kind tenancyv1alpha1.WorkloadKind
	Name string
	UID  string
	// Replicas is a Deployment's or StatefulSet's spec.replicas (1 when unset, as the API defaults it).
	Replicas int32
	// Suspended is a CronJob's spec.suspend.
	Suspended bool
	// Generation is the object's metadata.generation, read together with the value above (same
	// resourceVersion); 0 when that could not be read consistently.
	Generation int64
}

// running reports whether a sleep has something to do to o: replicas above 0, or a CronJob not
// suspended.
func (o Observed) running() bool {
	if o.Kind == tenancyv1alpha1.WorkloadCronJob {
		return !o.Suspended
	}
	return o.Replicas > 0
}

// PlanSleep returns what a sleep records: every object that runs something (a Deployment or
// StatefulSet with replicas, a CronJob not suspended), with its UID and replica count, sorted by kind
// and name. Objects already at 0 or suspended are left out: a wake has nothing of theirs to restore.
// ok is false when there are more than MaxSleptWorkloads: the namespace is not put to sleep.
func PlanSleep(objs []Observed) (record []tenancyv1alpha1.SleptWorkload, ok bool) {
	for _, o := range objs {
		if !o.running() {
			continue
		}
		w := tenancyv1alpha1.SleptWorkload{Kind: o.Kind, Name: o.Name, UID: o.UID}
		if o.Kind != tenancyv1alpha1.WorkloadCronJob {
			r := o.Replicas
			w.Replicas = &r
		}
		record = append(record, w)
	}
	sort.Slice(record, func(i, j int) bool {
		if record[i].Kind != record[j].Kind {
			return record[i].Kind < record[j].Kind
		}
		return record[i].Name < record[j].Name
	})
	return record, len(record) <= MaxSleptWorkloads
}

// Step is one write a sleep or a wake makes: set Kind Name (of UID) to Replicas, or its CronJob's
// suspend to Suspend.
type Step struct {
	Kind     tenancyv1alpha1.WorkloadKind
	Name     string
	UID      string
	Replicas int32
	Suspend  bool
	// Generation is, for a sleep's or a hold's write, the object's generation the write is made on
	// (the write is conditional on the resourceVersion it was read at): the write changes the spec, so
	// the object's generation after it is Generation+1. Zero for a wake's writes.
	Generation int64
}

// find returns the observed object of kind and name, if any.
func find(objs []Observed, kind tenancyv1alpha1.WorkloadKind, name string) (Observed, bool) {
	for _, o := range objs {
		if o.Kind == kind && o.Name == name {
			return o, true
		}
	}
	return Observed{}, false
}

// Hold returns the writes that keep a sleeping namespace asleep: the recorded objects (same UID) that
// run something again (a GitOps controller or the tenant restored them) go back to 0 or suspended.
// Objects that are gone, were replaced under the same name (another UID) or were created while
// asleep are left alone, and so is one whose generation could not be read with its value (the next
// reconcile looks again). Called with the record just made, it returns the sleep's own writes.
func Hold(record []tenancyv1alpha1.SleptWorkload, objs []Observed) []Step {
	var out []Step
	for _, w := range record {
		o, ok := find(objs, w.Kind, w.Name)
		if !ok || o.UID != w.UID || !o.running() || o.Generation == 0 {
			continue
		}
		out = append(out, Step{Kind: w.Kind, Name: w.Name, UID: w.UID, Suspend: true, Generation: o.Generation})
	}
	return out
}

// Wrote returns the record with the generation each of the operator's own writes (written, with the
// generation the object had right after the write) left on its object, matched by kind, name and UID.
// The record is copied, never changed in place.
func Wrote(record []tenancyv1alpha1.SleptWorkload, written []Step) []tenancyv1alpha1.SleptWorkload {
	out := make([]tenancyv1alpha1.SleptWorkload, len(record))
	copy(out, record)
	for i := range out {
		for _, st := range written {
			if st.Kind == out[i].Kind && st.Name == out[i].Name && st.UID == out[i].UID {
				out[i].Generation = st.Generation
			}
		}
	}
	return out
}

// asLeft reports whether o is the recorded object exactly as the operator's own last write left it:
// the same UID, the generation that write left and the value it wrote (0 replicas, or suspended).
// The API server bumps metadata.generation on every change of a Deployment's, StatefulSet's or
// CronJob's spec (and a Deployment's annotations), and no client can set it, so an equal generation
// proves that no one changed the spec since. resourceVersion would not do (controllers' status writes
// move it), nor would an annotation (anyone who may write the object may write it). A write that
// sets the value the object already has is no write at all: it leaves no trace to tell it from the
// sleep's own.
func asLeft(w tenancyv1alpha1.SleptWorkload, o Observed) bool {
	return o.UID == w.UID && w.Generation != 0 && o.Generation == w.Generation && !o.running()
}

// Restore returns the writes of a wake: each recorded object still as the operator's own last write
// left it (asLeft) gets back its recorded replica count, or, a CronJob, suspend false (a CronJob is
// recorded only when it was not suspended). Every other object is left alone: one that is gone or was
// replaced under the same name, one created while asleep, and one that someone else changed since
// (an admin holding it at 0 or suspended, a tenant's deploy, a GitOps sync the hold did not undo yet):
// a wake restores only values the sleep itself wrote.
func Restore(record []tenancyv1alpha1.SleptWorkload, objs []Observed) []Step {
	var out []Step
	for _, w := range record {
		o, ok := find(objs, w.Kind, w.Name)
		if !ok || !asLeft(w, o) {
			continue
		}
		s := Step{Kind: w.Kind, Name: w.Name, UID: w.UID}
		switch {
		case w.Kind == tenancyv1alpha1.WorkloadCronJob:
		case w.Replicas == nil || o.Replicas == *w.Replicas:
			continue
		default:
			s.Replicas = *w.Replicas
		}
		out = append(out, s)
	}
	return out
}

// LeftAlone counts the recorded objects a wake does not restore: gone (deleted, or replaced under the
// same name) and changed (same UID, but not as the operator's own last write left it).
func LeftAlone(record []tenancyv1alpha1.SleptWorkload, objs []Observed) (gone, changed int) {
	for _, w := range record {
		o, ok := find(objs, w.Kind, w.Name)
		switch {
		case !ok || o.UID != w.UID:
			gone++
		case !asLeft(w, o):
			changed++
		}
	}
	return gone, changed
}

// ReplicaSeconds is what a sleep avoided, as counted by nsclaim_sleep_replica_seconds_total: the
// replicas it recorded times the seconds from since to until. It is an upper bound of the Pod-seconds
// saved: it assumes the recorded replicas would all have run the whole time, and it does not subtract
// a Pod that kept running while it terminated, nor a replica a GitOps controller restored until the
// operator scaled it down again. CronJobs count nothing.
func ReplicaSeconds(record []tenancyv1alpha1.SleptWorkload, since, until time.Time) float64 {
	if !until.After(since) {
		return 0
	}
	var replicas int64
	for _, w := range record {
		if w.Replicas != nil {
			replicas += int64(*w.Replicas)
		}
	}
	return float64(replicas) * until.Sub(since).Seconds()
}
