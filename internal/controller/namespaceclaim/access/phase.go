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

// Package access is the claim reconciler's access phase (Phase.Reconcile): in credentials mode Token
// the token due is minted, proven by the self-test, and only then written to the claim's Secret; in
// mode Requester the creator is proven and bound. It reads and records only what Claim holds.
package access

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
	"github.com/nsclaim/nsclaim-operator/internal/claimpolicy"
	"github.com/nsclaim/nsclaim-operator/internal/claimstatus"
	"github.com/nsclaim/nsclaim-operator/internal/credentials"
	"github.com/nsclaim/nsclaim-operator/internal/selftest"
)

// tokenTimeout bounds the TokenRequest and self-test calls of one reconcile.
const tokenTimeout = 30 * time.Second

// Phase is the access phase and its collaborators.
type Phase struct {
	// Client reads the tenant ServiceAccount from the cache, and requests tokens and writes the
	// credentials Secret through the API server.
	Client client.Client
	// APIReader reads the tenant ServiceAccount when the cache has not seen it yet (made in this
	// reconcile); nil waits for the cache.
	APIReader client.Reader
	// Recorder emits the TokenIssued Event; nil emits none.
	Recorder recorder.EventRecorder
	// Endpoint is the API server and CA written into issued kubeconfigs.
	Endpoint credentials.Endpoint
	// CheckInterval is how often a Ready claim's credentials Secret is checked; 0 checks only when
	// something changes and at renewal.
	CheckInterval time.Duration
	// Tester runs the self-tests.
	Tester Tester
	// Memory is what the claim reconciler remembers of the Secret checks and the self-test backoff.
	Memory Memory
}

// Tester proves the permissions of the identity a claim hands out: an issued token, or the claim's
// creator (selftest.Tester implements it).
type Tester interface {
	Token(ctx context.Context, subj selftest.Subject, token string) (selftest.Result, error)
	Creator(ctx context.Context, subj selftest.Subject, creator selftest.Identity) (selftest.Result, error)
}

// Memory is what the phase asks of the claim reconciler's memory (memory.Memory implements it).
type Memory interface {
	CheckedAt(uid types.UID) (time.Time, bool)
	Checked(uid types.UID, at time.Time)
	SelfTestBackoff(uid types.UID) (selftest.Backoff, bool)
	SelfTestFailed(uid types.UID, b selftest.Backoff)
	SelfTestPassed(uid types.UID)
}

// Claim is the part of one reconcile of a claim that the phase reads (the first group) and records
// (the rest); the claim reconciler copies it from its scope and back.
type Claim struct {
	Claim *tenancyv1alpha1.NamespaceClaim
	Now   time.Time
	// Class is the resolved class, Desired what the namespace and its objects should be, Namespace the
	// claim's namespace (nil when not observed in this reconcile).
	Class     *tenancyv1alpha1.NamespaceClass
	Desired   *claimpolicy.Desired
	Namespace *corev1.Namespace
	// TokenOnce is set when the claim asks for its token to be issued only once; ExpiresAt is when
	// the claim expires by its hard TTL.
	TokenOnce bool
	ExpiresAt time.Time
	// CreatorBoundBefore is set when status.boundUser names the claim's creator.
	CreatorBoundBefore bool

	// Repaired counts the objects created or changed in this reconcile (a written Secret adds one).
	Repaired int
	// Refusal is a user-fixable reason that stops provisioning (SecretConflict, TokenRevoked).
	Refusal *claimpolicy.Refusal
	// Found are the status fields found (the token, the bound creator).
	Found *claimstatus.Fields
	// RenewAt is when the token is to be renewed; CredentialsCheckAt when the Secret is next checked.
	RenewAt, CredentialsCheckAt time.Time
	// CredentialsReady is set when the Secret holds a valid token, TokenIssued when this reconcile
	// issued one, CreatorBound when, in mode Requester, the creator is bound and verified.
	CredentialsReady, TokenIssued, CreatorBound bool
	// SelfTest is the self-test's outcome (nil when not run), SelfTestSkipped set when a previous one
	// still holds, SelfTestBackoff when to retry one that failed.
	SelfTest        *selftest.Result
	SelfTestSkipped bool
	SelfTestBackoff time.Duration
}
