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

package access

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
	"github.com/nsclaim/nsclaim-operator/internal/claimpolicy"
	"github.com/nsclaim/nsclaim-operator/internal/claimstatus"
	"github.com/nsclaim/nsclaim-operator/internal/credentials"
)

// TestScheduleAndKeepToken decides about a token found in place by the claim's token policy, one token
// per row, and checks what keepToken records for a kept one. The class renews 20m before expiry.
func TestScheduleAndKeepToken(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	class := &tenancyv1alpha1.NamespaceClass{}
	class.Spec.Credentials.TokenTTL = &metav1.Duration{Duration: time.Hour}
	class.Spec.Credentials.RenewBefore = &metav1.Duration{Duration: 20 * time.Minute}
	rec := func(in time.Duration, uid string) *credentials.Record {
		return &credentials.Record{ExpiresAt: now.Add(in), ServiceAccountUID: uid}
	}
	cases := []struct {
		name    string
		once    bool
		rec     *credentials.Record
		issue   bool
		renewAt time.Time
	}{
		{name: "no token", rec: nil, issue: true},
		{name: "ServiceAccount recreated", rec: rec(time.Hour, "old"), issue: true},
		{name: "good: kept, renewed 20m before expiry", rec: rec(time.Hour, "sa"), renewAt: now.Add(40 * time.Minute)},
		{name: "renewal due", rec: rec(10*time.Minute, "sa"), issue: true},
		{name: "expired", rec: rec(-time.Minute, "sa"), issue: true},
		{name: "only once: no token", once: true, rec: nil, issue: true},
		{name: "only once: ServiceAccount recreated", once: true, rec: rec(time.Hour, "old"), issue: true},
		{name: "only once: good, kept and never renewed", once: true, rec: rec(time.Hour, "sa")},
		{name: "only once: within the renewal window, kept", once: true, rec: rec(10*time.Minute, "sa")},
		{name: "only once: expired, never kept", once: true, rec: rec(-time.Minute, "sa"), issue: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := &Claim{Claim: &tenancyv1alpha1.NamespaceClaim{}, Now: now, Class: class, TokenOnce: tc.once, Found: &claimstatus.Fields{}}
			d := credentials.ScheduleBy(s.TokenOnce, s.Now, tc.rec, "sa", claimpolicy.RenewBefore(s.Class))
			if d.Issue != tc.issue || !d.RenewAt.Equal(tc.renewAt) {
				t.Fatalf("got %+v, want issue %v renewAt %v", d, tc.issue, tc.renewAt)
			}
			if d.Issue {
				return
			}
			s.RenewAt = now.Add(time.Minute) // a kept token overrides whatever was there
			keepToken(s, "creds", tc.rec, d)
			claimstatus.Apply(s.Found, &s.Claim.Status, s.Now)
			st := s.Claim.Status
			if st.CredentialsSecretName != "creds" || !st.TokenExpiresAt.Time.Equal(tc.rec.ExpiresAt) || st.TokenServiceAccountUID != "sa" {
				t.Fatalf("status records %q %v %q", st.CredentialsSecretName, st.TokenExpiresAt, st.TokenServiceAccountUID)
			}
			if !s.RenewAt.Equal(tc.renewAt) {
				t.Fatalf("renewAt %v, want %v", s.RenewAt, tc.renewAt)
			}
		})
	}
}
