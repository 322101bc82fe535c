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

package lifecycle

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
)

var t0 = time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)

func TestDecideSleep(t *testing.T) {
	cases := []struct {
		name string
		in   SleepInput
		want SleepDecision
	}{
		{name: "no sleepAfter: never sleeps", in: SleepInput{Now: t0.Add(100 * time.Hour), LastActivity: t0}, want: SleepDecision{Action: Stay}},
		{name: "idle, not long enough: sleeps at lastActivity+sleepAfter", in: SleepInput{Now: t0.Add(10 * time.Minute), SleepAfter: 30 * time.Minute, LastActivity: t0},
			want: SleepDecision{Action: Stay, At: t0.Add(30 * time.Minute)}},
		{name: "idle exactly sleepAfter: sleeps", in: SleepInput{Now: t0.Add(30 * time.Minute), SleepAfter: 30 * time.Minute, LastActivity: t0}, want: SleepDecision{Action: Sleep}},
		{name: "idle longer: sleeps", in: SleepInput{Now: t0.Add(5 * time.Hour), SleepAfter: 30 * time.Minute, LastActivity: t0}, want: SleepDecision{Action: Sleep}},
		{name: "a Pod active: never sleeps", in: SleepInput{Now: t0.Add(5 * time.Hour), SleepAfter: 30 * time.Minute, LastActivity: t0, Active: true}, want: SleepDecision{Action: Stay}},
		{name: "asleep, no heartbeat: stays asleep", in: SleepInput{Now: t0.Add(5 * time.Hour), SleepAfter: 30 * time.Minute, LastActivity: t0, Sleeping: true, Since: t0.Add(30 * time.Minute)},
			want: SleepDecision{Action: Stay}},
		{name: "asleep, a Pod active: stays asleep (Pods never wake it)", in: SleepInput{Now: t0.Add(5 * time.Hour), SleepAfter: 30 * time.Minute, LastActivity: t0, Active: true, Sleeping: true, Since: t0.Add(30 * time.Minute)},
			want: SleepDecision{Action: Stay}},
		{name: "asleep, heartbeat from before the sleep: stays asleep", in: SleepInput{Now: t0.Add(5 * time.Hour), SleepAfter: 30 * time.Minute, LastActivity: t0, Heartbeat: t0, Sleeping: true, Since: t0.Add(30 * time.Minute)},
			want: SleepDecision{Action: Stay}},
		{name: "asleep, heartbeat in the second it fell asleep: wakes", in: SleepInput{Now: t0.Add(5 * time.Hour), SleepAfter: 30 * time.Minute, LastActivity: t0, Heartbeat: t0.Add(30 * time.Minute), Sleeping: true, Since: t0.Add(30 * time.Minute)},
			want: SleepDecision{Action: Wake}},
		{name: "asleep, heartbeat after: wakes", in: SleepInput{Now: t0.Add(5 * time.Hour), SleepAfter: 30 * time.Minute, LastActivity: t0.Add(4 * time.Hour), Heartbeat: t0.Add(4 * time.Hour), Sleeping: true, Since: t0.Add(30 * time.Minute)},
			want: SleepDecision{Action: Wake}},
		{name: "asleep, class dropped sleepAfter: wakes", in: SleepInput{Now: t0.Add(5 * time.Hour), LastActivity: t0, Sleeping: true, Since: t0.Add(30 * time.Minute)}, want: SleepDecision{Action: Wake}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, DecideSleep(tc.in)); diff != "" {
				t.Errorf("DecideSleep (-want +got):\n%s", diff)
			}
		})
	}
}

func ptr(i int32) *int32 { return &i }

const (
	dep = tenancyv1alpha1.WorkloadDeployment
	sts = tenancyv1alpha1.WorkloadStatefulSet
	cj  = tenancyv1alpha1.WorkloadCronJob
)

func TestPlanSleep(t *testing.T) {
	objs := []Observed{
		{Kind: sts, Name: "db", UID: "u-db", Replicas: 1, Generation: 4},
		{Kind: dep, Name: "web", UID: "u-web", Replicas: 3, Generation: 7},
		{Kind: dep, Name: "off", UID: "u-off", Replicas: 0, Generation: 1},
		{Kind: cj, Name: "nightly", UID: "u-n", Generation: 2},
		{Kind: cj, Name: "paused", UID: "u-p", Suspended: true, Generation: 1},
	}
	got, ok := PlanSleep(objs)
	want := []tenancyv1alpha1.SleptWorkload{
		{Kind: cj, Name: "nightly", UID: "u-n"},
		{Kind: dep, Name: "web", UID: "u-web", Replicas: ptr(3)},
		{Kind: sts, Name: "db", UID: "u-db", Replicas: ptr(1)},
	}
	if !ok {
		t.Fatal("PlanSleep refused 5 objects")
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("PlanSleep (-want +got):\n%s", diff)
	}
	// The sleep's own writes are Hold of the record: the three that run, each on the generation read.
	if diff := cmp.Diff([]Step{{Kind: cj, Name: "nightly", UID: "u-n", Suspend: true, Generation: 2}, {Kind: dep, Name: "web", UID: "u-web", Suspend: true, Generation: 7},
		{Kind: sts, Name: "db", UID: "u-db", Suspend: true, Generation: 4}}, Hold(got, objs)); diff != "" {
		t.Errorf("Hold of a new record (-want +got):\n%s", diff)
	}

	many := make([]Observed, MaxSleptWorkloads+1)
	for i := range many {
		many[i] = Observed{Kind: dep, Name: string(rune('a'+i%26)) + string(rune('a'+i/26)), UID: "u", Replicas: 1}
	}
	if _, ok := PlanSleep(many[:MaxSleptWorkloads]); !ok {
		t.Errorf("PlanSleep refused %d objects", MaxSleptWorkloads)
	}
	if _, ok := PlanSleep(many); ok {
		t.Errorf("PlanSleep accepted %d objects", len(many))
	}
}

// TestHoldAndRestore: the record below is as the sleep left it (each object's generation after the
// sleep's own write). A hold re-applies the sleep to what runs again; a wake restores only the objects
// still exactly as the operator's own write left them.
func TestHoldAndRestore(t *testing.T) {
	record := []tenancyv1alpha1.SleptWorkload{
		{Kind: cj, Name: "nightly", UID: "u-n", Generation: 3},
		{Kind: dep, Name: "web", UID: "u-web", Replicas: ptr(3), Generation: 8},
		{Kind: sts, Name: "db", UID: "u-db", Replicas: ptr(2), Generation: 5},
	}
	asleep := []Observed{
		{Kind: cj, Name: "nightly", UID: "u-n", Suspended: true, Generation: 3},
		{Kind: dep, Name: "web", UID: "u-web", Generation: 8},
		{Kind: sts, Name: "db", UID: "u-db", Generation: 5},
	}
	cases := []struct {
		name          string
		record        []tenancyv1alpha1.SleptWorkload
		objs          []Observed
		hold, restore []Step
		gone, changed int
	}{
		{name: "all asleep as left: all restored", objs: asleep, restore: []Step{
			{Kind: cj, Name: "nightly", UID: "u-n"},
			{Kind: dep, Name: "web", UID: "u-web", Replicas: 3},
			{Kind: sts, Name: "db", UID: "u-db", Replicas: 2},
		}},
		{name: "a GitOps controller restored web and resumed nightly: held down, not restored until the hold's writes are recorded", objs: []Observed{
			{Kind: cj, Name: "nightly", UID: "u-n", Generation: 4},
			{Kind: dep, Name: "web", UID: "u-web", Replicas: 3, Generation: 9},
			{Kind: sts, Name: "db", UID: "u-db", Generation: 5},
		}, hold: []Step{
			{Kind: cj, Name: "nightly", UID: "u-n", Suspend: true, Generation: 4},
			{Kind: dep, Name: "web", UID: "u-web", Suspend: true, Generation: 9},
		}, restore: []Step{
			{Kind: sts, Name: "db", UID: "u-db", Replicas: 2},
		}, changed: 2},
		{name: "the hold's writes recorded: restored like the sleep's", record: []tenancyv1alpha1.SleptWorkload{
			{Kind: cj, Name: "nightly", UID: "u-n", Generation: 5},
			{Kind: dep, Name: "web", UID: "u-web", Replicas: ptr(3), Generation: 10},
		}, objs: []Observed{
			{Kind: cj, Name: "nightly", UID: "u-n", Suspended: true, Generation: 5},
			{Kind: dep, Name: "web", UID: "u-web", Generation: 10},
		}, restore: []Step{
			{Kind: cj, Name: "nightly", UID: "u-n"},
			{Kind: dep, Name: "web", UID: "u-web", Replicas: 3},
		}},
		{name: "an admin held web at 0 and nightly suspended (changed since the sleep's write, same value): left alone", objs: []Observed{
			{Kind: cj, Name: "nightly", UID: "u-n", Suspended: true, Generation: 4},
			{Kind: dep, Name: "web", UID: "u-web", Generation: 10},
			{Kind: sts, Name: "db", UID: "u-db", Generation: 5},
		}, restore: []Step{{Kind: sts, Name: "db", UID: "u-db", Replicas: 2}}, changed: 2},
		{name: "the sleep's write was never recorded (generation 0): left alone", record: []tenancyv1alpha1.SleptWorkload{
			{Kind: dep, Name: "web", UID: "u-web", Replicas: ptr(3)},
		}, objs: []Observed{{Kind: dep, Name: "web", UID: "u-web", Generation: 8}}, changed: 1},
		{name: "generation not read consistently: neither held nor restored", objs: []Observed{
			{Kind: dep, Name: "web", UID: "u-web", Replicas: 3},
		}, changed: 1, gone: 2},
		{name: "replaced under the same name, deleted, created while asleep: left alone", objs: []Observed{
			{Kind: dep, Name: "web", UID: "u-other", Replicas: 0, Generation: 8},
			{Kind: dep, Name: "new", UID: "u-new", Replicas: 5, Generation: 1},
			{Kind: sts, Name: "db", UID: "u-db-2", Replicas: 7, Generation: 5},
		}, gone: 3},
		{name: "the tenant scaled web to 1 while asleep: held at 0, not restored until the hold is recorded", objs: []Observed{
			{Kind: dep, Name: "web", UID: "u-web", Replicas: 1, Generation: 9},
		}, hold: []Step{{Kind: dep, Name: "web", UID: "u-web", Suspend: true, Generation: 9}}, changed: 1, gone: 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rec := record
			if tc.record != nil {
				rec = tc.record
			}
			if diff := cmp.Diff(tc.hold, Hold(rec, tc.objs)); diff != "" {
				t.Errorf("Hold (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.restore, Restore(rec, tc.objs)); diff != "" {
				t.Errorf("Restore (-want +got):\n%s", diff)
			}
			gone, changed := LeftAlone(rec, tc.objs)
			if gone != tc.gone || changed != tc.changed {
				t.Errorf("LeftAlone = %d gone, %d changed; want %d, %d", gone, changed, tc.gone, tc.changed)
			}
		})
	}
}

// TestWrote: the generation each write left is recorded on the object of the same kind, name and
// UID only; the record passed in is not changed.
func TestWrote(t *testing.T) {
	record := []tenancyv1alpha1.SleptWorkload{
		{Kind: cj, Name: "nightly", UID: "u-n", Generation: 3},
		{Kind: dep, Name: "web", UID: "u-web", Replicas: ptr(3)},
		{Kind: sts, Name: "web", UID: "u-sts", Replicas: ptr(1)},
	}
	for _, tc := range []struct {
		name    string
		written []Step
		want    []int64
	}{
		{name: "no writes: unchanged", want: []int64{3, 0, 0}},
		{name: "the sleep's writes", written: []Step{{Kind: dep, Name: "web", UID: "u-web", Generation: 2}, {Kind: sts, Name: "web", UID: "u-sts", Generation: 6}}, want: []int64{3, 2, 6}},
		{name: "a hold's write replaces the sleep's", written: []Step{{Kind: cj, Name: "nightly", UID: "u-n", Generation: 5}}, want: []int64{5, 0, 0}},
		{name: "a write on another UID or kind is not this record's", written: []Step{{Kind: dep, Name: "web", UID: "u-other", Generation: 9}, {Kind: cj, Name: "web", UID: "u-web", Generation: 9}}, want: []int64{3, 0, 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Wrote(record, tc.written)
			for i := range got {
				if got[i].Generation != tc.want[i] {
					t.Errorf("%s %s: generation %d, want %d", got[i].Kind, got[i].Name, got[i].Generation, tc.want[i])
				}
			}
			if record[1].Generation != 0 || record[0].Generation != 3 {
				t.Error("Wrote changed the record passed in")
			}
		})
	}
}

func TestReplicaSeconds(t *testing.T) {
	record := []tenancyv1alpha1.SleptWorkload{{Kind: cj, Name: "n", UID: "1"}, {Kind: dep, Name: "w", UID: "2", Replicas: ptr(3)}, {Kind: sts, Name: "d", UID: "3", Replicas: ptr(1)}}
	for _, tc := range []struct {
		name         string
		since, until time.Time
		want         float64
	}{
		{name: "an hour asleep with 4 replicas", since: t0, until: t0.Add(time.Hour), want: 4 * 3600},
		{name: "no time", since: t0, until: t0, want: 0},
		{name: "clock went back", since: t0, until: t0.Add(-time.Hour), want: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ReplicaSeconds(record, tc.since, tc.until); got != tc.want {
				t.Errorf("ReplicaSeconds = %v, want %v", got, tc.want)
			}
		})
	}
}
