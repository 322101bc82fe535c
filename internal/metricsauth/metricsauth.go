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

// Package metricsauth guards the metrics endpoint: a request is served only for a caller whose bearer
// token the API server authenticates (a TokenReview) and who may get the request's path (a
// SubjectAccessReview for a non-resource URL, such as the metrics-reader ClusterRole grants).
//
// It does what controller-runtime's filters.WithAuthenticationAndAuthorization does, with the same
// reviews, the same answers (401, 403, 500) and the same cache lifetimes, but with client-go alone.
// That filter links k8s.io/apiserver, and with it CEL, gRPC and OpenTelemetry: about 20 MB of code and
// tables that are mapped into the manager's memory (and counted in its RSS) for two API calls.
package metricsauth

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/go-logr/logr"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	authenticationclient "k8s.io/client-go/kubernetes/typed/authentication/v1"
	authorizationclient "k8s.io/client-go/kubernetes/typed/authorization/v1"
	"k8s.io/client-go/rest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// Cache lifetimes, as controller-runtime's filter sets them: an authenticated token is trusted for a
// minute and an allowed request for five, so a scrape every 15-30 s costs no review; a refusal is kept
// for 30 s, so a caller just granted access waits no longer than that.
const (
	AuthenticatedTTL   = time.Minute
	UnauthenticatedTTL = 30 * time.Second
	AllowTTL           = 5 * time.Minute
	DenyTTL            = 30 * time.Second
	// ReviewTimeout bounds each review.
	ReviewTimeout = 10 * time.Second
	// maxEntries bounds each cache (see ttlCache).
	maxEntries = 1024
)

// Filter is a metricsserver.Filter provider for metricsserver.Options.FilterProvider. The manager's
// identity needs to create tokenreviews and subjectaccessreviews (config/rbac/metrics_auth_role.yaml).
func Filter(cfg *rest.Config, httpClient *http.Client) (metricsserver.Filter, error) {
	authn, err := authenticationclient.NewForConfigAndClient(cfg, httpClient)
	if err != nil {
		return nil, err
	}
	authz, err := authorizationclient.NewForConfigAndClient(cfg, httpClient)
	if err != nil {
		return nil, err
	}
	g := newGuard(authn.TokenReviews(), authz.SubjectAccessReviews(), time.Now)
	return g.filter, nil
}

// tokenReviewer and accessReviewer are the two client-go calls the guard makes.
type tokenReviewer interface {
	Create(ctx context.Context, tr *authenticationv1.TokenReview, opts metav1.CreateOptions) (*authenticationv1.TokenReview, error)
}

type accessReviewer interface {
	Create(ctx context.Context, sar *authorizationv1.SubjectAccessReview, opts metav1.CreateOptions) (*authorizationv1.SubjectAccessReview, error)
}

// user is who a token authenticated as.
type user struct {
	Name   string                                 `json:"name"`
	UID    string                                 `json:"uid,omitempty"`
	Groups []string                               `json:"groups,omitempty"`
	Extra  map[string]authenticationv1.ExtraValue `json:"extra,omitempty"`
}

// authentication is a token's review: the user, or nil when the API server did not authenticate it.
type authentication struct{ user *user }

type guard struct {
	tokens  tokenReviewer
	access  accessReviewer
	users   *ttlCache[authentication]
	allowed *ttlCache[bool]
}

func newGuard(tokens tokenReviewer, access accessReviewer, now func() time.Time) *guard {
	return &guard{tokens: tokens, access: access,
		users: newTTLCache[authentication](maxEntries, now), allowed: newTTLCache[bool](maxEntries, now)}
}

func (g *guard) filter(log logr.Logger, handler http.Handler) (http.Handler, error) {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		status, msg := g.check(req.Context(), log, req)
		if status != http.StatusOK {
			http.Error(w, msg, status)
			return
		}
		// The token is the caller's, and of no use to the handler.
		req.Header.Del("Authorization")
		handler.ServeHTTP(w, req)
	}), nil
}

// check answers whether req may be served: http.StatusOK, or the status and message to refuse it with.
// Neither the token nor its digest is ever logged.
func (g *guard) check(ctx context.Context, log logr.Logger, req *http.Request) (int, string) {
	token, ok := BearerToken(req.Header.Get("Authorization"))
	if !ok {
		return http.StatusUnauthorized, "Unauthorized"
	}
	u, err := g.authenticate(ctx, token)
	if err != nil {
		log.Error(err, "Authentication failed")
		return http.StatusInternalServerError, "Authentication failed"
	}
	if u == nil {
		log.V(4).Info("Authentication failed")
		return http.StatusUnauthorized, "Unauthorized"
	}
	verb := strings.ToLower(req.Method)
	allowed, err := g.authorize(ctx, u, verb, req.URL.Path)
	if err != nil {
		msg := fmt.Sprintf("Authorization for user %s failed", u.Name)
		log.Error(err, msg)
		return http.StatusInternalServerError, msg
	}
	if !allowed {
		msg := fmt.Sprintf("Authorization denied for user %s", u.Name)
		log.V(4).Info(msg, "verb", verb, "path", req.URL.Path)
		return http.StatusForbidden, msg
	}
	return http.StatusOK, ""
}

// BearerToken returns the token of an "Authorization: Bearer <token>" header (the scheme in any case),
// as the API server reads it; false for any other header, or an empty token.
func BearerToken(header string) (string, bool) {
	scheme, token, ok := strings.Cut(strings.TrimSpace(header), " ")
	if !ok || !strings.EqualFold(scheme, "bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	// A token holds no whitespace; anything after one is not part of it (the API server refuses it).
	if token == "" || strings.ContainsAny(token, " \t") {
		return "", false
	}
	return token, true
}

// authenticate reviews the token, through the cache, keyed by the token's SHA-256 so that the cache
// holds no token.
func (g *guard) authenticate(ctx context.Context, token string) (*user, error) {
	key := digest([]byte(token))
	if a, ok := g.users.get(key); ok {
		return a.user, nil
	}
	ctx, cancel := context.WithTimeout(ctx, ReviewTimeout)
	defer cancel()
	tr, err := g.tokens.Create(ctx, &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: token}}, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("TokenReview: %w", err)
	}
	if !tr.Status.Authenticated {
		g.users.put(key, authentication{}, UnauthenticatedTTL)
		return nil, nil
	}
	info := tr.Status.User
	u := &user{Name: info.Username, UID: info.UID, Groups: info.Groups, Extra: info.Extra}
	g.users.put(key, authentication{user: u}, AuthenticatedTTL)
	return u, nil
}

// authorize asks whether u may verb path, through the cache.
func (g *guard) authorize(ctx context.Context, u *user, verb, path string) (bool, error) {
	raw, err := json.Marshal(struct {
		User *user  `json:"user"`
		Verb string `json:"verb"`
		Path string `json:"path"`
	}{u, verb, path})
	if err != nil {
		return false, err
	}
	key := digest(raw)
	if allowed, ok := g.allowed.get(key); ok {
		return allowed, nil
	}
	extra := make(map[string]authorizationv1.ExtraValue, len(u.Extra))
	for k, v := range u.Extra {
		extra[k] = authorizationv1.ExtraValue(v)
	}
	ctx, cancel := context.WithTimeout(ctx, ReviewTimeout)
	defer cancel()
	sar, err := g.access.Create(ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: u.Name, UID: u.UID, Groups: u.Groups, Extra: extra,
		NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: path, Verb: verb},
	}}, metav1.CreateOptions{})
	if err != nil {
		return false, fmt.Errorf("SubjectAccessReview: %w", err)
	}
	allowed := sar.Status.Allowed && !sar.Status.Denied
	ttl := DenyTTL
	if allowed {
		ttl = AllowTTL
	}
	g.allowed.put(key, allowed, ttl)
	return allowed, nil
}

// digest is the cache key of b: its SHA-256 in hex, so that no cache holds a token.
func digest(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
