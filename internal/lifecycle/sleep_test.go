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
		{Kind: sts, Name: "db", UID: "u-db", Replicas: 1},
		{Kind: dep, Name: "web", UID: "u-web", Replicas: 3},
		{Kind: dep, Name: "off", UID: "u-off", Replicas: 0},
		{Kind: cj, Name: "nightly", UID: "u-n"},
		{Kind: cj, Name: "paused", UID: "u-p", Suspended: true},
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
	// The sleep's own writes are Hold of the record: the three that run.
	if diff := cmp.Diff([]Step{{Kind: cj, Name: "nightly", UID: "u-n", Suspend: true}, {Kind: dep, Name: "web", UID: "u-web", Suspend: true}, {Kind: sts, Name: "db", UID: "u-db", Suspend: true}}, Hold(got, objs)); diff != "" {
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

func TestHoldAndRestore(t *testing.T) {
	record := []tenancyv1alpha1.SleptWorkload{
		{Kind: cj, Name: "nightly", UID: "u-n"},
		{Kind: dep, Name: "web", UID: "u-web", Replicas: ptr(3)},
		{Kind: sts, Name: "db", UID: "u-db", Replicas: ptr(2)},
	}
	cases := []struct {
		name          string
		objs          []Observed
		hold, restore []Step
	}{
		{name: "all asleep as left", objs: []Observed{
			{Kind: cj, Name: "nightly", UID: "u-n", Suspended: true},
			{Kind: dep, Name: "web", UID: "u-web"},
			{Kind: sts, Name: "db", UID: "u-db"},
		}, restore: []Step{
			{Kind: cj, Name: "nightly", UID: "u-n"},
			{Kind: dep, Name: "web", UID: "u-web", Replicas: 3},
			{Kind: sts, Name: "db", UID: "u-db", Replicas: 2},
		}},
		{name: "a GitOps controller restored web and resumed nightly", objs: []Observed{
			{Kind: cj, Name: "nightly", UID: "u-n"},
			{Kind: dep, Name: "web", UID: "u-web", Replicas: 3},
			{Kind: sts, Name: "db", UID: "u-db"},
		}, hold: []Step{
			{Kind: cj, Name: "nightly", UID: "u-n", Suspend: true},
			{Kind: dep, Name: "web", UID: "u-web", Suspend: true},
		}, restore: []Step{
			{Kind: sts, Name: "db", UID: "u-db", Replicas: 2},
		}},
		{name: "replaced under the same name, deleted, created while asleep: left alone", objs: []Observed{
			{Kind: dep, Name: "web", UID: "u-other", Replicas: 0},
			{Kind: dep, Name: "new", UID: "u-new", Replicas: 5},
			{Kind: sts, Name: "db", UID: "u-db-2", Replicas: 7},
		}},
		{name: "the tenant scaled web to 1 while asleep: held at 0, restored to 3", objs: []Observed{
			{Kind: dep, Name: "web", UID: "u-web", Replicas: 1},
		}, hold: []Step{{Kind: dep, Name: "web", UID: "u-web", Suspend: true}},
			restore: []Step{{Kind: dep, Name: "web", UID: "u-web", Replicas: 3}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.hold, Hold(record, tc.objs)); diff != "" {
				t.Errorf("Hold (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.restore, Restore(record, tc.objs)); diff != "" {
				t.Errorf("Restore (-want +got):\n%s", diff)
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
