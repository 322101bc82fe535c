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
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
	"github.com/nsclaim/nsclaim-operator/internal/claimpolicy"
	"github.com/nsclaim/nsclaim-operator/internal/selftest"
)

// TestStopped is reconcileNormal's stop rule as a table: what stops every phase, and when a refused
// claim's namespace is still repaired.
func TestStopped(t *testing.T) {
	refused := &claimpolicy.Refusal{Reason: tenancyv1alpha1.TTLExceedsMaximumReason, Message: "x"}
	blocking := &claimpolicy.Refusal{Reason: tenancyv1alpha1.FenceNotIntactReason, Message: "x"}
	tests := []struct {
		name           string
		facts          func(s *claimScope)
		repair, access bool // stopped before a repair phase, before an access phase
	}{
		{name: "nothing recorded", facts: func(*claimScope) {}},
		{name: "expired", facts: func(s *claimScope) { s.expired = true }, repair: true, access: true},
		{name: "no class", facts: func(s *claimScope) { s.class = nil }, repair: true, access: true},
		{name: "released", facts: func(s *claimScope) { s.released = true }, repair: true, access: true},
		{name: "terminating", facts: func(s *claimScope) { s.terminating = "x" }, repair: true, access: true},
		{name: "waits for the fence check", facts: func(s *claimScope) { s.fencePending = true }, repair: true, access: true},
		{name: "namespace not usable yet", facts: func(s *claimScope) { s.unusable = "x" }, repair: true, access: true},
		{name: "refused, holds no namespace", facts: func(s *claimScope) { s.refusal, s.repairRefusal = refused, refused },
			repair: true, access: true},
		{name: "refused, holds its namespace: repaired, no access",
			facts: func(s *claimScope) {
				s.refusal, s.repairRefusal = refused, refused
				s.found.Namespace.Set("ci-pr-1")
			},
			access: true},
		{name: "refused for a reason that blocks repair",
			facts: func(s *claimScope) {
				s.refusal, s.repairRefusal = blocking, blocking
				s.claim.Status.Namespace = "ci-pr-1"
			},
			repair: true, access: true},
		{name: "refused by a phase after the lifecycle phases",
			facts: func(s *claimScope) {
				s.repairRefusal, s.refusal = refused, &claimpolicy.Refusal{Reason: tenancyv1alpha1.SecretConflictReason}
				s.claim.Status.Namespace = "ci-pr-1"
			},
			repair: true, access: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &claimScope{claim: &tenancyv1alpha1.NamespaceClaim{}, class: &tenancyv1alpha1.NamespaceClass{}}
			tt.facts(s)
			if got := s.stopped(true); got != tt.repair {
				t.Errorf("before a repair phase: stopped = %v, want %v", got, tt.repair)
			}
			if got := s.stopped(false); got != tt.access {
				t.Errorf("before an access phase: stopped = %v, want %v", got, tt.access)
			}
		})
	}
}

func TestRequeueAfter(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	cases := []struct {
		name  string
		facts func(s *claimScope)
		want  time.Duration
	}{
		{"nothing by the clock", func(*claimScope) {}, 0},
		{"expiry", func(s *claimScope) { s.expiresAt = now.Add(2 * time.Hour) }, 2 * time.Hour},
		{"renewal before expiry", func(s *claimScope) { s.expiresAt = now.Add(2 * time.Hour); s.renewAt = now.Add(40 * time.Minute) }, 40 * time.Minute},
		{"credentials check first", func(s *claimScope) {
			s.renewAt = now.Add(40 * time.Minute)
			s.credentialsCheckAt = now.Add(10 * time.Minute)
		}, 10 * time.Minute},
		{"past due is one second", func(s *claimScope) { s.renewAt = now.Add(-time.Minute) }, time.Second},
		{"expired: nothing by the clock", func(s *claimScope) { s.expired = true; s.expiresAt = now.Add(-time.Minute) }, 0},
		{"terminating namespace", func(s *claimScope) { s.expiresAt = now.Add(time.Hour); s.terminating = "x" }, terminatingPoll},
		{"unusable namespace", func(s *claimScope) { s.unusablePoll = true }, usablePoll},
		{"pooled children to mark, 3 s after the handout", func(s *claimScope) {
			s.marksDeferred, s.expiresAt = true, now.Add(time.Hour)
			meta.SetStatusCondition(&s.claim.Status.Conditions, metav1.Condition{Type: tenancyv1alpha1.PooledCondition, Status: metav1.ConditionTrue,
				Reason: tenancyv1alpha1.PoolHitReason, LastTransitionTime: metav1.NewTime(now.Add(-3 * time.Second))})
		}, pooledMarksDelay - 3*time.Second},
		{"quiet wait for a new namespace ends", func(s *claimScope) { s.quietUntil = now.Add(7 * time.Second); s.expiresAt = now.Add(time.Hour) }, 7 * time.Second},
		{"quiet wait over", func(s *claimScope) { s.quietUntil = now.Add(-time.Second); s.expiresAt = now.Add(time.Hour) }, time.Hour},
		{"Ready claim waits for the fence check", func(s *claimScope) { s.fencePending = true; s.expiresAt = now.Add(time.Hour) }, fencePendingPoll},
		{"fence pending", func(s *claimScope) { s.refusal = &claimpolicy.Refusal{Reason: tenancyv1alpha1.PendingReason} }, fencePendingPoll},
		{"fence not intact", func(s *claimScope) { s.refusal = &claimpolicy.Refusal{Reason: tenancyv1alpha1.FenceNotIntactReason} }, fencePoll},
		{"queued", func(s *claimScope) { s.refusal = &claimpolicy.Refusal{Reason: tenancyv1alpha1.QueuedReason} }, queuedPoll},
		{"queued, maxQueueWait runs out before the poll", func(s *claimScope) {
			s.refusal = &claimpolicy.Refusal{Reason: tenancyv1alpha1.QueuedReason}
			s.queueGiveUpAt = now.Add(3 * time.Second)
		}, 3 * time.Second},
		{"queued, maxQueueWait runs out after the poll", func(s *claimScope) {
			s.refusal = &claimpolicy.Refusal{Reason: tenancyv1alpha1.QueuedReason}
			s.queueGiveUpAt = now.Add(time.Hour)
		}, queuedPoll},
		{"other refusal", func(s *claimScope) { s.refusal = &claimpolicy.Refusal{Reason: tenancyv1alpha1.NamespaceTakenReason} }, refusalPoll},
		{"refusal but renewal sooner", func(s *claimScope) {
			s.refusal = &claimpolicy.Refusal{Reason: tenancyv1alpha1.NamespaceTakenReason}
			s.renewAt = now.Add(10 * time.Second)
		}, 10 * time.Second},
		{"failed self-test backs off", func(s *claimScope) {
			s.selfTest = &selftest.Result{Excess: []selftest.Failure{{Grant: "x"}}}
			s.selfTestBackoff = 40 * time.Second
		}, 40 * time.Second},
		{"failed self-test never faster than the retry", func(s *claimScope) {
			s.selfTest = &selftest.Result{Missing: []selftest.Failure{{Grant: "x"}}}
		}, selftest.RetryDelay},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := &claimScope{claim: &tenancyv1alpha1.NamespaceClaim{}, now: now}
			tc.facts(s)
			if got := s.requeueAfter(); got != tc.want {
				t.Fatalf("requeueAfter() = %s, want %s", got, tc.want)
			}
		})
	}
}
