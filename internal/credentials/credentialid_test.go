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
	"encoding/base64"
	"fmt"
	"strings"
	"testing"
	"time"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
)

func jwt(payload string) string {
	enc := base64.RawURLEncoding.EncodeToString
	return enc([]byte(`{"alg":"RS256"}`)) + "." + enc([]byte(payload)) + "." + enc([]byte("sig"))
}

func TestCredentialID(t *testing.T) {
	cases := []struct {
		name, token, want, wantErr string
	}{
		{name: "service account token", token: jwt(`{"jti":"6b1c7c1e-8f0e-4c39-9d55-0f3c2a4b5d6e","sub":"system:serviceaccount:ns:nsclaim-tenant","exp":1}`), want: "6b1c7c1e-8f0e-4c39-9d55-0f3c2a4b5d6e"},
		{name: "no jti", token: jwt(`{"sub":"x"}`), wantErr: "no jti"},
		{name: "not a JWT", token: "abc.def", wantErr: "not a JWT"},
		{name: "payload not base64url", token: "a.%%%.c", wantErr: "decoding"},
		{name: "payload not JSON", token: jwt(`not json`), wantErr: "reading"},
		{name: "jti not a string", token: jwt(`{"jti":42}`), wantErr: "reading"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := CredentialID(tc.token)
			switch {
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("want error containing %q, got %v", tc.wantErr, err)
			case tc.wantErr == "" && err != nil:
				t.Fatal(err)
			case got != tc.want:
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestRecordIssued(t *testing.T) {
	t0 := time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC)
	var issued []tenancyv1alpha1.IssuedToken
	for i := range MaxIssuedTokens + 3 {
		issued = RecordIssued(issued, fmt.Sprint("id-", i), t0.Add(time.Duration(i)*time.Hour), t0.Add(time.Duration(i+1)*time.Hour))
	}
	if len(issued) != MaxIssuedTokens {
		t.Fatalf("kept %d entries, want %d", len(issued), MaxIssuedTokens)
	}
	if issued[0].CredentialID != fmt.Sprint("id-", MaxIssuedTokens+2) || issued[MaxIssuedTokens-1].CredentialID != "id-3" {
		t.Fatalf("want newest first and the oldest dropped, got first %s last %s", issued[0].CredentialID, issued[MaxIssuedTokens-1].CredentialID)
	}
	if !issued[0].ExpiresAt.After(issued[0].IssuedAt.Time) {
		t.Fatal("expiry not recorded")
	}
	again := RecordIssued(issued, issued[3].CredentialID, t0, t0)
	if len(again) != MaxIssuedTokens || again[0].CredentialID != issued[3].CredentialID {
		t.Fatal("a repeated ID must move first, not be listed twice")
	}
	seen := map[string]bool{}
	for _, e := range again {
		if seen[e.CredentialID] {
			t.Fatalf("%s listed twice", e.CredentialID)
		}
		seen[e.CredentialID] = true
	}
}
