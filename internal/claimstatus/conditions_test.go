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

package claimstatus

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
		facts      func(s *Facts, claim *tenancyv1alpha1.NamespaceClaim)
		wantStatus metav1.ConditionStatus
		wantReason string
		wantMsg    string
	}{
		{name: "nothing recorded yet", facts: func(*Facts, *tenancyv1alpha1.NamespaceClaim) {}, wantStatus: metav1.ConditionFalse, wantReason: tenancyv1alpha1.ProvisioningReason, wantMsg: "Waiting for NamespaceReady"},
		{name: "internal error on a new claim", err: errors.New("boom"), facts: func(*Facts, *tenancyv1alpha1.NamespaceClaim) {}, wantStatus: metav1.ConditionFalse, wantReason: tenancyv1alpha1.InternalErrorReason, wantMsg: "tell the cluster admin: NamespaceClaim ci/pr-1, UID 0b1c"},
		{name: "internal error keeps a Ready claim Ready", conds: ready, err: errors.New("boom"), facts: func(*Facts, *tenancyv1alpha1.NamespaceClaim) {}, wantStatus: metav1.ConditionTrue, wantReason: tenancyv1alpha1.ProvisionedReason},
		{name: "being deleted", conds: ready, facts: func(s *Facts, claim *tenancyv1alpha1.NamespaceClaim) { s.Deleting = "namespace x: terminating" }, wantStatus: metav1.ConditionFalse, wantReason: tenancyv1alpha1.NamespaceTerminatingReason, wantMsg: "waiting for namespace x"},
		{name: "expired", conds: ready, facts: func(s *Facts, claim *tenancyv1alpha1.NamespaceClaim) { s.Expired = true; s.ExpiresAt = now }, wantStatus: metav1.ConditionFalse, wantReason: tenancyv1alpha1.ExpiredReason, wantMsg: "2026-11-23T12:00:00Z; its namespace is deleted. Delete this claim (kubectl delete namespaceclaim pr-1) before"},
		{name: "released", facts: func(s *Facts, claim *tenancyv1alpha1.NamespaceClaim) { s.Released = true }, wantStatus: metav1.ConditionFalse, wantReason: tenancyv1alpha1.ReleasedReason},
		{name: "refused", facts: func(s *Facts, claim *tenancyv1alpha1.NamespaceClaim) {
			s.Refusal = &claimpolicy.Refusal{Reason: tenancyv1alpha1.ClassNotFoundReason, Message: "no class x"}
		}, wantStatus: metav1.ConditionFalse, wantReason: tenancyv1alpha1.ClassNotFoundReason, wantMsg: "no class x"},
		{name: "deletion wins over a refusal", facts: func(s *Facts, claim *tenancyv1alpha1.NamespaceClaim) {
			s.Deleting = "namespace y: terminating"
			s.Refusal = &claimpolicy.Refusal{Reason: tenancyv1alpha1.ClassNotFoundReason}
		}, wantStatus: metav1.ConditionFalse, wantReason: tenancyv1alpha1.NamespaceTerminatingReason},
		{name: "namespace not usable yet", facts: func(s *Facts, claim *tenancyv1alpha1.NamespaceClaim) {
			s.ChildrenReady = true
			s.Unusable = "waiting for the quota"
		}, wantStatus: metav1.ConditionFalse, wantReason: tenancyv1alpha1.PendingReason, wantMsg: "quota"},
		{name: "self-test found excess", facts: func(s *Facts, claim *tenancyv1alpha1.NamespaceClaim) {
			s.ChildrenReady = true
			s.SelfTest = &selftest.Result{Excess: []selftest.Failure{{Grant: "get secrets in every namespace"}}}
		}, wantStatus: metav1.ConditionFalse, wantReason: tenancyv1alpha1.ExcessPermissionsReason, wantMsg: "get secrets in every namespace"},
		{name: "missing right after a repair is pending", facts: func(s *Facts, claim *tenancyv1alpha1.NamespaceClaim) {
			s.ChildrenReady = true
			s.Repaired = 1
			s.SelfTest = &selftest.Result{Missing: []selftest.Failure{{Grant: "create pods"}}}
		}, wantStatus: metav1.ConditionFalse, wantReason: tenancyv1alpha1.PendingReason, wantMsg: "RoleBindings"},
		{name: "missing with nothing repaired", facts: func(s *Facts, claim *tenancyv1alpha1.NamespaceClaim) {
			s.ChildrenReady = true
			s.SelfTest = &selftest.Result{Missing: []selftest.Failure{{Grant: "create pods"}}}
		}, wantStatus: metav1.ConditionFalse, wantReason: tenancyv1alpha1.MissingPermissionsReason, wantMsg: "create pods"},
		{name: "verified but no credentials yet", facts: func(s *Facts, claim *tenancyv1alpha1.NamespaceClaim) { s.ChildrenReady = true; s.SelfTest = ok }, wantStatus: metav1.ConditionFalse, wantReason: tenancyv1alpha1.ProvisioningReason, wantMsg: "CredentialsReady"},
		{name: "all done, token", facts: func(s *Facts, claim *tenancyv1alpha1.NamespaceClaim) {
			s.ChildrenReady = true
			s.SelfTest = ok
			s.CredentialsReady = true
			claim.Status.CredentialsSecretName = "pr-1-kubeconfig"
			claim.Status.TokenExpiresAt = &metav1.Time{Time: now.Add(time.Hour)}
		}, wantStatus: metav1.ConditionTrue, wantReason: tenancyv1alpha1.ProvisionedReason, wantMsg: "Secret pr-1-kubeconfig"},
		{name: "all done, creator bound", facts: func(s *Facts, claim *tenancyv1alpha1.NamespaceClaim) {
			s.ChildrenReady = true
			s.SelfTest = ok
			s.CreatorBound = true
			claim.Status.BoundUser = "github:repo:org/app:ref:refs/heads/main"
		}, wantStatus: metav1.ConditionTrue, wantReason: tenancyv1alpha1.ProvisionedReason, wantMsg: "github:repo:org/app"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			claim := &tenancyv1alpha1.NamespaceClaim{ObjectMeta: metav1.ObjectMeta{Generation: 3, Namespace: "ci", Name: "pr-1", UID: "0b1c"}}
			claim.Status.Conditions = append([]metav1.Condition{}, tc.conds...)
			claim.Status.Namespace = "ci-pr-1"
			s := &Facts{Fields: &Fields{}, Now: now}
			tc.facts(s, claim)
			Derive(claim, s, tc.err)
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
		{"queued is a Normal wait", nil, cond(f, tenancyv1alpha1.QueuedReason), tenancyv1alpha1.QueuedReason, false},
		{"budget exhausted is a refusal", cond(f, tenancyv1alpha1.QueuedReason), cond(f, tenancyv1alpha1.BudgetExhaustedReason), tenancyv1alpha1.BudgetExhaustedReason, true},
		{"excess permissions", cond(f, tenancyv1alpha1.PendingReason), cond(f, tenancyv1alpha1.ExcessPermissionsReason), tenancyv1alpha1.ExcessPermissionsReason, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := Transition(tc.before, tc.after)
			switch {
			case tc.want == "" && e != nil:
				t.Fatalf("want no Event, got %+v", e)
			case tc.want != "" && e == nil:
				t.Fatalf("want Event %s, got none", tc.want)
			case e != nil && (e.Reason != tc.want || e.Warning != tc.warning || e.Note != "m"):
				t.Fatalf("got %+v, want reason %s warning %v note m", e, tc.want, tc.warning)
			}
		})
	}
}

func TestQuietUntil(t *testing.T) {
	const quiet = time.Minute
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
		{name: "a new claim waits quietly from its namespace's creation", created: created, want: created.Add(quiet)},
		{name: "other conditions but no Ready yet", conditions: []metav1.Condition{{Type: tenancyv1alpha1.NamespaceReadyCondition, Status: metav1.ConditionTrue}}, created: created, want: created.Add(quiet)},
		{name: "a claim that was Ready reports at once", conditions: ready(metav1.ConditionTrue, tenancyv1alpha1.ProvisionedReason), created: created},
		{name: "a claim that reported Pending keeps reporting", conditions: ready(metav1.ConditionFalse, tenancyv1alpha1.PendingReason), created: created},
		{name: "a refused claim reports at once", conditions: ready(metav1.ConditionFalse, tenancyv1alpha1.NamespaceTakenReason), created: created},
		{name: "no creation time", created: time.Time{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := QuietUntil(&tenancyv1alpha1.NamespaceClaimStatus{Conditions: tc.conditions}, tc.created, quiet)
			if !got.Equal(tc.want) {
				t.Fatalf("QuietUntil = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestExpiredMessage(t *testing.T) {
	at := time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)
	claim := &tenancyv1alpha1.NamespaceClaim{Status: tenancyv1alpha1.NamespaceClaimStatus{
		LastActivity: &metav1.Time{Time: at}, IdleExpiresAt: &metav1.Time{Time: at.Add(time.Hour)}}}
	reason, msg := expiredMessage(claim, &Facts{ExpiresAt: at.Add(24 * time.Hour)})
	if reason != tenancyv1alpha1.ExpiredReason || !strings.Contains(msg, "TTL ended at 2026-11-27T10:00:00Z") {
		t.Errorf("hard TTL: %s %q", reason, msg)
	}
	reason, msg = expiredMessage(claim, &Facts{ExpiresAt: at.Add(24 * time.Hour), IdleExpired: true})
	if reason != tenancyv1alpha1.IdleExpiredReason || !strings.Contains(msg, "idle (no Pod Pending or Running, no heartbeat) from 2026-11-26T10:00:00Z until its idle TTL ended at 2026-11-26T11:00:00Z") {
		t.Errorf("idle TTL: %s %q", reason, msg)
	}
}
