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
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
)

// MaxIssuedTokens bounds the claim's status.issuedTokens (the API's maxItems).
const MaxIssuedTokens = 10

// CredentialID returns the credential ID of a ServiceAccount token the API server just issued: its
// `jti` claim, which the API server writes into the audit log of every request made with the token (user
// extra authentication.kubernetes.io/credential-id, value "JTI=<id>"). The token's signature is not
// checked (the operator received it from the TokenRequest API itself); only its payload is read. The
// ID identifies the token but cannot authenticate: it is safe to record in status and Events.
func CredentialID(token string) (string, error) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return "", errors.New("the token is not a JWT (three dot-separated parts)")
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return "", fmt.Errorf("decoding the token's payload: %w", err)
	}
	var claims struct {
		JTI string `json:"jti"`
	}
	if err := json.Unmarshal(payload, &claims); err != nil {
		return "", fmt.Errorf("reading the token's payload: %w", err)
	}
	if claims.JTI == "" {
		return "", errors.New("the token carries no jti claim")
	}
	return claims.JTI, nil
}

// RecordIssued puts a newly issued token first in issued, keeping at most MaxIssuedTokens entries (the
// newest). An entry with the same credential ID is not repeated.
func RecordIssued(issued []tenancyv1alpha1.IssuedToken, id string, at, expires time.Time) []tenancyv1alpha1.IssuedToken {
	out := []tenancyv1alpha1.IssuedToken{{CredentialID: id, IssuedAt: metav1.NewTime(at), ExpiresAt: metav1.NewTime(expires)}}
	for _, t := range issued {
		if len(out) == MaxIssuedTokens {
			break
		}
		if t.CredentialID != id {
			out = append(out, t)
		}
	}
	return out
}
