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

package credentials

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
)

func TestClaimSecretName(t *testing.T) {
	claim := &tenancyv1alpha1.NamespaceClaim{ObjectMeta: metav1.ObjectMeta{Name: "pr-1"}}
	if got := ClaimSecretName(claim); got != "pr-1-kubeconfig" {
		t.Errorf("default: %q", got)
	}
	claim.Spec.CredentialsSecretName = "mine"
	if got := ClaimSecretName(claim); got != "mine" {
		t.Errorf("named: %q", got)
	}
}

// A claim's status says whether it ever had a token: the record, and whether its Secret is created
// without a probe first.
func TestRecordOfAndNeverIssued(t *testing.T) {
	exp := metav1.NewTime(time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC))
	refused := []metav1.Condition{{Type: tenancyv1alpha1.ReadyCondition, Status: metav1.ConditionFalse, Reason: tenancyv1alpha1.SecretConflictReason}}
	pending := []metav1.Condition{{Type: tenancyv1alpha1.ReadyCondition, Status: metav1.ConditionFalse, Reason: tenancyv1alpha1.ProvisioningReason}}
	for _, tc := range []struct {
		name      string
		st        tenancyv1alpha1.NamespaceClaimStatus
		wantRec   *Record
		wantNever bool
	}{
		{name: "new claim", wantNever: true},
		{name: "new claim, provisioning", st: tenancyv1alpha1.NamespaceClaimStatus{Conditions: pending}, wantNever: true},
		{name: "refused for a Secret in the way", st: tenancyv1alpha1.NamespaceClaimStatus{Conditions: refused}},
		{name: "a Secret recorded, no token", st: tenancyv1alpha1.NamespaceClaimStatus{CredentialsSecretName: "pr-1-kubeconfig"}},
		{name: "a token issued before", st: tenancyv1alpha1.NamespaceClaimStatus{IssuedTokens: []tenancyv1alpha1.IssuedToken{{CredentialID: "a"}}}},
		{name: "a token recorded", st: tenancyv1alpha1.NamespaceClaimStatus{TokenExpiresAt: &exp, TokenServiceAccountUID: "sa-1"},
			wantRec: &Record{ExpiresAt: exp.Time, ServiceAccountUID: "sa-1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := NeverIssued(&tc.st); got != tc.wantNever {
				t.Errorf("NeverIssued = %v, want %v", got, tc.wantNever)
			}
			got := RecordOf(&tc.st)
			if (got == nil) != (tc.wantRec == nil) || (got != nil && *got != *tc.wantRec) {
				t.Errorf("RecordOf = %+v, want %+v", got, tc.wantRec)
			}
		})
	}
}

// The token policy picks the schedule and the lifetime: only once is never renewed and lives until the
// claim expires, capped by the class; any other is renewed ahead of expiry and lives the class's TTL.
func TestScheduleByAndIssueTTL(t *testing.T) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	rec := &Record{ExpiresAt: now.Add(time.Hour), ServiceAccountUID: "sa-1"}
	if d := ScheduleBy(false, now, rec, "sa-1", 10*time.Minute); d.Issue || !d.RenewAt.Equal(now.Add(50*time.Minute)) {
		t.Errorf("renewable: %+v", d)
	}
	if d := ScheduleBy(true, now, rec, "sa-1", 10*time.Minute); d.Issue || !d.RenewAt.IsZero() {
		t.Errorf("only once: %+v", d)
	}
	if d := ScheduleBy(true, now, nil, "sa-1", 10*time.Minute); !d.Issue || d.Reason != ReasonNoToken {
		t.Errorf("only once, none yet: %+v", d)
	}
	for _, tc := range []struct {
		name      string
		once      bool
		expiresAt time.Time
		want      time.Duration
	}{
		{"renewable takes the class's TTL", false, now.Add(48 * time.Hour), 2 * time.Hour},
		{"only once lives until the claim expires", true, now.Add(90 * time.Minute), 90 * time.Minute},
		{"only once never beyond the class's TTL", true, now.Add(48 * time.Hour), 2 * time.Hour},
	} {
		if got := IssueTTL(tc.once, now, tc.expiresAt, 2*time.Hour); got != tc.want {
			t.Errorf("%s: IssueTTL = %s, want %s", tc.name, got, tc.want)
		}
	}
}
