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
	"errors"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
	"github.com/nsclaim/nsclaim-operator/internal/claimpolicy"
	"github.com/nsclaim/nsclaim-operator/internal/selftest"
)

// TestSetConditions derives the conditions from the facts a reconcile recorded, one fact set per row.
func TestSetConditions(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	ready := []metav1.Condition{{Type: tenancyv1alpha1.ReadyCondition, Status: metav1.ConditionTrue, Reason: tenancyv1alpha1.ProvisionedReason}}
	ok := &selftest.Result{}
	cases := []struct {
		name       string
		conds      []metav1.Condition
		err        error
		facts      func(s *claimScope)
		wantStatus metav1.ConditionStatus
		wantReason string
		wantMsg    string
	}{
		{name: "nothing recorded yet", facts: func(*claimScope) {}, wantStatus: metav1.ConditionFalse, wantReason: tenancyv1alpha1.ProvisioningReason, wantMsg: "Waiting for NamespaceReady"},
		{name: "internal error on a new claim", err: errors.New("boom"), facts: func(*claimScope) {}, wantStatus: metav1.ConditionFalse, wantReason: tenancyv1alpha1.InternalErrorReason, wantMsg: "tell the cluster admin: NamespaceClaim ci/pr-1, UID 0b1c"},
		{name: "internal error keeps a Ready claim Ready", conds: ready, err: errors.New("boom"), facts: func(*claimScope) {}, wantStatus: metav1.ConditionTrue, wantReason: tenancyv1alpha1.ProvisionedReason},
		{name: "being deleted", conds: ready, facts: func(s *claimScope) { s.deleting = "namespace x: terminating" }, wantStatus: metav1.ConditionFalse, wantReason: tenancyv1alpha1.NamespaceTerminatingReason, wantMsg: "waiting for namespace x"},
		{name: "expired", conds: ready, facts: func(s *claimScope) { s.expired = true; s.expiresAt = now }, wantStatus: metav1.ConditionFalse, wantReason: tenancyv1alpha1.ExpiredReason, wantMsg: "2026-11-23T12:00:00Z; its namespace is deleted. Delete this claim (kubectl delete namespaceclaim pr-1) before"},
		{name: "released", facts: func(s *claimScope) { s.released = true }, wantStatus: metav1.ConditionFalse, wantReason: tenancyv1alpha1.ReleasedReason},
		{name: "refused", facts: func(s *claimScope) {
			s.refusal = &claimpolicy.Refusal{Reason: tenancyv1alpha1.ClassNotFoundReason, Message: "no class x"}
		}, wantStatus: metav1.ConditionFalse, wantReason: tenancyv1alpha1.ClassNotFoundReason, wantMsg: "no class x"},
		{name: "deletion wins over a refusal", facts: func(s *claimScope) {
			s.deleting = "namespace y: terminating"
			s.refusal = &claimpolicy.Refusal{Reason: tenancyv1alpha1.ClassNotFoundReason}
		}, wantStatus: metav1.ConditionFalse, wantReason: tenancyv1alpha1.NamespaceTerminatingReason},
		{name: "namespace not usable yet", facts: func(s *claimScope) { s.childrenReady = true; s.unusable = "waiting for the quota" }, wantStatus: metav1.ConditionFalse, wantReason: tenancyv1alpha1.PendingReason, wantMsg: "quota"},
		{name: "self-test found excess", facts: func(s *claimScope) {
			s.childrenReady = true
			s.selfTest = &selftest.Result{Excess: []selftest.Failure{{Grant: "get secrets in every namespace"}}}
		}, wantStatus: metav1.ConditionFalse, wantReason: tenancyv1alpha1.ExcessPermissionsReason, wantMsg: "get secrets in every namespace"},
		{name: "missing right after a repair is pending", facts: func(s *claimScope) {
			s.childrenReady = true
			s.repaired = 1
			s.selfTest = &selftest.Result{Missing: []selftest.Failure{{Grant: "create pods"}}}
		}, wantStatus: metav1.ConditionFalse, wantReason: tenancyv1alpha1.PendingReason, wantMsg: "RoleBindings"},
		{name: "missing with nothing repaired", facts: func(s *claimScope) {
			s.childrenReady = true
			s.selfTest = &selftest.Result{Missing: []selftest.Failure{{Grant: "create pods"}}}
		}, wantStatus: metav1.ConditionFalse, wantReason: tenancyv1alpha1.MissingPermissionsReason, wantMsg: "create pods"},
		{name: "verified but no credentials yet", facts: func(s *claimScope) { s.childrenReady = true; s.selfTest = ok }, wantStatus: metav1.ConditionFalse, wantReason: tenancyv1alpha1.ProvisioningReason, wantMsg: "CredentialsReady"},
		{name: "all done, token", facts: func(s *claimScope) {
			s.childrenReady = true
			s.selfTest = ok
			s.credentialsReady = true
			s.claim.Status.CredentialsSecretName = "pr-1-kubeconfig"
			s.claim.Status.TokenExpiresAt = &metav1.Time{Time: now.Add(time.Hour)}
		}, wantStatus: metav1.ConditionTrue, wantReason: tenancyv1alpha1.ProvisionedReason, wantMsg: "Secret pr-1-kubeconfig"},
		{name: "all done, creator bound", facts: func(s *claimScope) {
			s.childrenReady = true
			s.selfTest = ok
			s.creatorBound = true
			s.claim.Status.BoundUser = "github:repo:org/app:ref:refs/heads/main"
		}, wantStatus: metav1.ConditionTrue, wantReason: tenancyv1alpha1.ProvisionedReason, wantMsg: "github:repo:org/app"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			claim := &tenancyv1alpha1.NamespaceClaim{ObjectMeta: metav1.ObjectMeta{Generation: 3, Namespace: "ci", Name: "pr-1", UID: "0b1c"}}
			claim.Status.Conditions = append([]metav1.Condition{}, tc.conds...)
			claim.Status.Namespace = "ci-pr-1"
			s := &claimScope{claim: claim, now: now}
			tc.facts(s)
			setStatus(s, tc.err)
			rc := meta.FindStatusCondition(claim.Status.Conditions, tenancyv1alpha1.ReadyCondition)
			if rc == nil {
				t.Fatal("no Ready condition")
			}
			if rc.Status != tc.wantStatus || rc.Reason != tc.wantReason || !strings.Contains(rc.Message, tc.wantMsg) {
				t.Fatalf("Ready = %s/%s %q, want %s/%s containing %q", rc.Status, rc.Reason, rc.Message, tc.wantStatus, tc.wantReason, tc.wantMsg)
			}
			if tc.err == nil && claim.Status.ObservedGeneration != 3 {
				t.Fatalf("observedGeneration %d, want 3", claim.Status.ObservedGeneration)
			}
			if tc.err != nil && claim.Status.ObservedGeneration != 0 {
				t.Fatal("a failed reconcile must not claim to have observed the generation")
			}
		})
	}
}

func TestTransitionEvent(t *testing.T) {
	cond := func(st metav1.ConditionStatus, reason string) []metav1.Condition {
		return []metav1.Condition{{Type: tenancyv1alpha1.ReadyCondition, Status: st, Reason: reason, Message: "m"}}
	}
	f, tr := metav1.ConditionFalse, metav1.ConditionTrue
	cases := []struct {
		name          string
		before, after []metav1.Condition
		want          string // reason of the Event, "" for none
		warning       bool
	}{
		{"first Ready", cond(f, tenancyv1alpha1.ProvisioningReason), cond(tr, tenancyv1alpha1.ProvisionedReason), "Provisioned", false},
		{"still Ready", cond(tr, tenancyv1alpha1.ProvisionedReason), cond(tr, tenancyv1alpha1.ProvisionedReason), "", false},
		{"no condition yet", nil, nil, "", false},
		{"refused", nil, cond(f, tenancyv1alpha1.ClassNotFoundReason), tenancyv1alpha1.ClassNotFoundReason, true},
		{"same refusal again", cond(f, tenancyv1alpha1.ClassNotFoundReason), cond(f, tenancyv1alpha1.ClassNotFoundReason), "", false},
		{"another refusal", cond(f, tenancyv1alpha1.ClassNotFoundReason), cond(f, tenancyv1alpha1.TTLExceedsMaximumReason), tenancyv1alpha1.TTLExceedsMaximumReason, true},
		{"expired", cond(tr, tenancyv1alpha1.ProvisionedReason), cond(f, tenancyv1alpha1.ExpiredReason), "Expired", false},
		{"released", cond(tr, tenancyv1alpha1.ProvisionedReason), cond(f, tenancyv1alpha1.ReleasedReason), "Released", false},
		{"pending is quiet", cond(tr, tenancyv1alpha1.ProvisionedReason), cond(f, tenancyv1alpha1.PendingReason), "", false},
		{"provisioning is quiet", nil, cond(f, tenancyv1alpha1.ProvisioningReason), "", false},
		{"internal error is quiet", nil, cond(f, tenancyv1alpha1.InternalErrorReason), "", false},
		{"excess permissions", cond(f, tenancyv1alpha1.PendingReason), cond(f, tenancyv1alpha1.ExcessPermissionsReason), tenancyv1alpha1.ExcessPermissionsReason, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := transitionEvent(tc.before, tc.after)
			switch {
			case tc.want == "" && e != nil:
				t.Fatalf("want no Event, got %+v", e)
			case tc.want != "" && e == nil:
				t.Fatalf("want Event %s, got none", tc.want)
			case e != nil && (e.reason != tc.want || e.warning != tc.warning || e.note != "m"):
				t.Fatalf("got %+v, want reason %s warning %v note m", e, tc.want, tc.warning)
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
		}, selfTestRetry},
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

func TestQuietUntil(t *testing.T) {
	created := time.Date(2026, 11, 24, 1, 0, 0, 0, time.UTC)
	ready := func(st metav1.ConditionStatus, reason string) []metav1.Condition {
		return []metav1.Condition{{Type: tenancyv1alpha1.ReadyCondition, Status: st, Reason: reason}}
	}
	for _, tc := range []struct {
		name       string
		conditions []metav1.Condition
		created    time.Time
		want       time.Time
	}{
		{name: "a new claim waits quietly from its namespace's creation", created: created, want: created.Add(pendingQuiet)},
		{name: "other conditions but no Ready yet", conditions: []metav1.Condition{{Type: tenancyv1alpha1.NamespaceReadyCondition, Status: metav1.ConditionTrue}}, created: created, want: created.Add(pendingQuiet)},
		{name: "a claim that was Ready reports at once", conditions: ready(metav1.ConditionTrue, tenancyv1alpha1.ProvisionedReason), created: created},
		{name: "a claim that reported Pending keeps reporting", conditions: ready(metav1.ConditionFalse, tenancyv1alpha1.PendingReason), created: created},
		{name: "a refused claim reports at once", conditions: ready(metav1.ConditionFalse, tenancyv1alpha1.NamespaceTakenReason), created: created},
		{name: "no creation time", created: time.Time{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := quietUntil(&tenancyv1alpha1.NamespaceClaimStatus{Conditions: tc.conditions}, tc.created, pendingQuiet)
			if !got.Equal(tc.want) {
				t.Fatalf("quietUntil = %v, want %v", got, tc.want)
			}
		})
	}
}
