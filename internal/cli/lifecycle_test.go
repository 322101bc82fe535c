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

package cli

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
)

func TestHeartbeatRecorded(t *testing.T) {
	at := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	asleep := &tenancyv1alpha1.SleepStatus{Since: metav1.NewTime(at.Add(-time.Hour))}
	for _, tc := range []struct {
		name       string
		last       *metav1.Time
		sleep      *tenancyv1alpha1.SleepStatus
		wake, want bool
	}{
		{name: "not recorded yet", last: &metav1.Time{Time: at.Add(-time.Hour)}},
		{name: "no activity recorded", last: nil},
		{name: "recorded", last: &metav1.Time{Time: at}, want: true},
		{name: "recorded a second early (operator clock lags)", last: &metav1.Time{Time: at.Add(-time.Second)}, want: true},
		{name: "recorded, still asleep: a heartbeat is done", last: &metav1.Time{Time: at}, sleep: asleep, want: true},
		{name: "recorded, still asleep: a wake waits", last: &metav1.Time{Time: at}, sleep: asleep, wake: true},
		{name: "recorded and awake: a wake is done", last: &metav1.Time{Time: at}, wake: true, want: true},
		{name: "awake but not recorded: a wake waits", last: &metav1.Time{Time: at.Add(-time.Hour)}, wake: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &tenancyv1alpha1.NamespaceClaim{Status: tenancyv1alpha1.NamespaceClaimStatus{LastActivity: tc.last, Sleep: tc.sleep}}
			if got := HeartbeatRecorded(c, at, tc.wake); got != tc.want {
				t.Errorf("HeartbeatRecorded = %t, want %t", got, tc.want)
			}
		})
	}
}

func TestLifecycleAsleep(t *testing.T) {
	since := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	three := int32(3)
	c := &tenancyv1alpha1.NamespaceClaim{Status: tenancyv1alpha1.NamespaceClaimStatus{Phase: tenancyv1alpha1.ClaimPhaseSleeping,
		IdleExpiresAt: &metav1.Time{Time: since.Add(time.Hour)},
		Sleep: &tenancyv1alpha1.SleepStatus{Since: metav1.NewTime(since), Workloads: []tenancyv1alpha1.SleptWorkload{
			{Kind: tenancyv1alpha1.WorkloadDeployment, Name: "web", UID: "1", Replicas: &three},
			{Kind: tenancyv1alpha1.WorkloadCronJob, Name: "n", UID: "2"}}}}}
	got := Lifecycle(c)
	for _, want := range []string{"Sleeping (asleep since 2026-11-26T12:00:00Z", "1 Deployment(s) and StatefulSet(s) scaled to 0, 1 CronJob(s) suspended",
		"kubectl nsclaim wake", "deleted for idleness at 2026-11-26T13:00:00Z unless woken first"} {
		if !strings.Contains(got, want) {
			t.Errorf("Lifecycle = %q, want it to contain %q", got, want)
		}
	}
}
