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

package main

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"log"
	"math/big"
	"net/http"
	"strings"
	"time"
)

// rs256 is the one signing algorithm: RSASSA-PKCS1-v1_5 with SHA-256, as GitHub's issuer uses.
const rs256 = "RS256"

type issuer struct {
	url          string
	key          *rsa.PrivateKey
	kid          string
	requestToken string
	lifetime     time.Duration
	now          func() time.Time
}

func (i *issuer) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/openid-configuration", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, map[string]any{
			"issuer":                                i.url,
			"jwks_uri":                              i.url + "/keys",
			"response_types_supported":              []string{"id_token"},
			"subject_types_supported":               []string{"public"},
			"id_token_signing_alg_values_supported": []string{rs256},
			"claims_supported":                      []string{"sub", "aud", "exp", "iat", "iss", "jti", "nbf", "ref", "repository", "repository_owner"},
		})
	})
	mux.HandleFunc("GET /keys", func(w http.ResponseWriter, _ *http.Request) {
		pub := &i.key.PublicKey
		writeJSON(w, map[string]any{"keys": []map[string]string{{
			"kty": "RSA", "use": "sig", "alg": rs256, "kid": i.kid,
			"n": b64(pub.N.Bytes()), "e": b64(big.NewInt(int64(pub.E)).Bytes()),
		}}})
	})
	mux.HandleFunc("GET /token", i.token)
	return mux
}

// token answers as GitHub's ACTIONS_ID_TOKEN_REQUEST_URL does: {"value": "<jwt>"}.
func (i *issuer) token(w http.ResponseWriter, r *http.Request) {
	bearer, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || subtle.ConstantTimeCompare([]byte(bearer), []byte(i.requestToken)) != 1 {
		http.Error(w, "a request token is required", http.StatusUnauthorized)
		return
	}
	q := r.URL.Query()
	audience, repository, ref := q.Get("audience"), q.Get("repository"), q.Get("ref")
	if audience == "" || repository == "" || ref == "" {
		http.Error(w, "audience, repository and ref are required", http.StatusBadRequest)
		return
	}
	jwt, err := i.sign(githubClaims(i.url, audience, repository, ref, i.now(), i.lifetime))
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	log.Printf("issued a token for repo:%s:ref:%s (audience %s)", repository, ref, audience)
	writeJSON(w, map[string]string{"value": jwt})
}

// githubClaims are the claims of a GitHub Actions ID token, as far as the test needs them.
func githubClaims(iss, audience, repository, ref string, now time.Time, lifetime time.Duration) map[string]any {
	owner, _, _ := strings.Cut(repository, "/")
	jti := make([]byte, 16)
	_, _ = rand.Read(jti)
	return map[string]any{
		"iss": iss, "aud": audience,
		"sub":        "repo:" + repository + ":ref:" + ref,
		"repository": repository, "repository_owner": owner, "ref": ref,
		"jti": b64(jti),
		"iat": now.Unix(), "nbf": now.Add(-5 * time.Second).Unix(), "exp": now.Add(lifetime).Unix(),
	}
}

// sign makes a compact JWS (RS256) of claims.
func (i *issuer) sign(claims map[string]any) (string, error) {
	header, err := json.Marshal(map[string]string{"alg": rs256, "typ": "JWT", "kid": i.kid})
	if err != nil {
		return "", err
	}
	payload, err := json.Marshal(claims)
	if err != nil {
		return "", err
	}
	signingInput := b64(header) + "." + b64(payload)
	digest := sha256.Sum256([]byte(signingInput))
	sig, err := rsa.SignPKCS1v15(rand.Reader, i.key, crypto.SHA256, digest[:])
	if err != nil {
		return "", err
	}
	return signingInput + "." + b64(sig), nil
}

// keyID names a public key by a hash of its modulus.
func keyID(pub *rsa.PublicKey) string {
	sum := sha256.Sum256(pub.N.Bytes())
	return b64(sum[:8])
}

func b64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	if err := json.NewEncoder(w).Encode(v); err != nil {
		log.Printf("writing a response: %v", err)
	}
}
