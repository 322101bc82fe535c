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
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
)

// TestApply: a field the phases found is written, one they did not find keeps what the status
// had, a found zero value ("" or nil) clears the field, and issued tokens are recorded newest first.
func TestApply(t *testing.T) {
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	at := func(d time.Duration) *metav1.Time { mt := metav1.NewTime(now.Add(d)); return &mt }
	read := func() tenancyv1alpha1.NamespaceClaimStatus {
		return tenancyv1alpha1.NamespaceClaimStatus{
			ClassName: "ci", Namespace: "ci-pr-1", ExpiresAt: at(time.Hour), PodsActive: true, LastActivity: at(-time.Hour),
			IdleExpiresAt: at(time.Minute), BoundUser: "alice", CredentialsSecretName: "pr-1", TokenExpiresAt: at(30 * time.Minute),
			TokenServiceAccountUID: "sa-1",
			IssuedTokens:           []tenancyv1alpha1.IssuedToken{{CredentialID: "old", IssuedAt: *at(-time.Hour), ExpiresAt: *at(time.Hour)}},
		}
	}
	tests := []struct {
		name  string
		facts func(f *Fields)
		want  func(st *tenancyv1alpha1.NamespaceClaimStatus)
	}{
		{name: "nothing found keeps every field", facts: func(*Fields) {}, want: func(*tenancyv1alpha1.NamespaceClaimStatus) {}},
		{name: "class, namespace and expiry found",
			facts: func(f *Fields) {
				f.ClassName.Set("build")
				f.Namespace.Set("build-pr-1")
				f.ExpiresAt.Set(at(2 * time.Hour))
			},
			want: func(st *tenancyv1alpha1.NamespaceClaimStatus) {
				st.ClassName, st.Namespace, st.ExpiresAt = "build", "build-pr-1", at(2*time.Hour)
			}},
		{name: "an expiry stops the activity",
			facts: func(f *Fields) { f.PodsActive.Set(false); f.IdleExpiresAt.Set(nil) },
			want:  func(st *tenancyv1alpha1.NamespaceClaimStatus) { st.PodsActive, st.IdleExpiresAt = false, nil }},
		{name: "the creator is unbound",
			facts: func(f *Fields) { f.BoundUser.Set("") },
			want:  func(st *tenancyv1alpha1.NamespaceClaimStatus) { st.BoundUser = "" }},
		{name: "a token is issued and recorded",
			facts: func(f *Fields) {
				f.RecordToken("pr-1", now.Add(time.Hour), "sa-2")
				f.Issued = append(f.Issued, IssuedToken{ID: "new", Expires: now.Add(time.Hour)})
			},
			want: func(st *tenancyv1alpha1.NamespaceClaimStatus) {
				st.TokenExpiresAt, st.TokenServiceAccountUID = at(time.Hour), "sa-2"
				st.IssuedTokens = append([]tenancyv1alpha1.IssuedToken{{CredentialID: "new", IssuedAt: metav1.NewTime(now), ExpiresAt: *at(time.Hour)}}, st.IssuedTokens...)
			}},
		{name: "the token is deleted",
			facts: func(f *Fields) { f.ClearToken() },
			want: func(st *tenancyv1alpha1.NamespaceClaimStatus) {
				st.CredentialsSecretName, st.TokenExpiresAt, st.TokenServiceAccountUID = "", nil, ""
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var f Fields
			tt.facts(&f)
			got, want := read(), read()
			Apply(&f, &got, now)
			tt.want(&want)
			if !equality.Semantic.DeepEqual(got, want) {
				t.Fatalf("status\n got %+v\nwant %+v", got, want)
			}
		})
	}
}
