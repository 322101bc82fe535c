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
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
	"github.com/nsclaim/nsclaim-operator/internal/credentials"
)

// Found is a value a phase found for one status field, or nothing (the field keeps what it had).
type Found[T any] struct {
	v  T
	ok bool
}

// Set records v.
func (f *Found[T]) Set(v T) { f.v, f.ok = v, true }

// Or returns what was found, else v (the field as it was read).
func (f Found[T]) Or(v T) T {
	if f.ok {
		return f.v
	}
	return v
}

// IssuedToken is a token this reconcile handed out or found, for status.issuedTokens.
type IssuedToken struct {
	ID      string
	Expires time.Time
}

// Fields are the status fields the claim reconciler's phases found in one reconcile; Derive writes
// them, and nothing else writes a claim's status fields but status.sleep, which reconcileSleep records with a
// status write of its own before it scales anything down: the one exception to patchStatus, listed in
// TestStatusIsWrittenOnlyByTheListedWriters. A field a phase did not find keeps what it had.
type Fields struct {
	// ClassName is the resolved class (reconcileClass).
	ClassName Found[string]
	// ExpiresAt is the hard TTL's end (reconcileClass, when not refused).
	ExpiresAt Found[*metav1.Time]
	// Namespace is the namespace the claim holds (reconcileNamespace).
	Namespace Found[string]
	// PodsActive, LastActivity and IdleExpiresAt are the namespace's activity (reconcileActivity; an
	// expiry stops it, reconcileExpiry).
	PodsActive    Found[bool]
	LastActivity  Found[*metav1.Time]
	IdleExpiresAt Found[*metav1.Time]
	// BoundUser is the creator the namespace's RoleBindings name, or "" (reconcileCreator,
	// reconcileRequesterAccess).
	BoundUser Found[string]
	// SecretName, TokenExpiresAt and TokenSAUID describe the token in the credentials Secret
	// (keepToken, writeCredentials; deleteCredentials clears them).
	SecretName     Found[string]
	TokenExpiresAt Found[*metav1.Time]
	TokenSAUID     Found[string]
	// Issued are the tokens recorded for the audit trail, in the order they were handed out.
	Issued []IssuedToken
	// Seeds are the class's seeds in the namespace, with the source UID each was copied from
	// (reconcileSeeds).
	Seeds Found[[]tenancyv1alpha1.SeedStatus]
}

// RecordToken records the token in Secret name, valid until expires, of the ServiceAccount with UID
// saUID.
func (f *Fields) RecordToken(name string, expires time.Time, saUID string) {
	f.SecretName.Set(name)
	f.TokenExpiresAt.Set(credentials.ExpiryTime(expires))
	f.TokenSAUID.Set(saUID)
}

// ClearToken records that the claim has no token (its Secret was deleted).
func (f *Fields) ClearToken() {
	f.SecretName.Set("")
	f.TokenExpiresAt.Set(nil)
	f.TokenSAUID.Set("")
}

// Apply writes the facts into st; now is when the issued tokens were recorded.
func Apply(f *Fields, st *tenancyv1alpha1.NamespaceClaimStatus, now time.Time) {
	st.ClassName = f.ClassName.Or(st.ClassName)
	st.ExpiresAt = f.ExpiresAt.Or(st.ExpiresAt)
	st.Namespace = f.Namespace.Or(st.Namespace)
	st.PodsActive = f.PodsActive.Or(st.PodsActive)
	st.LastActivity = f.LastActivity.Or(st.LastActivity)
	st.IdleExpiresAt = f.IdleExpiresAt.Or(st.IdleExpiresAt)
	st.BoundUser = f.BoundUser.Or(st.BoundUser)
	st.CredentialsSecretName = f.SecretName.Or(st.CredentialsSecretName)
	st.TokenExpiresAt = f.TokenExpiresAt.Or(st.TokenExpiresAt)
	st.TokenServiceAccountUID = f.TokenSAUID.Or(st.TokenServiceAccountUID)
	st.Seeds = f.Seeds.Or(st.Seeds)
	for _, t := range f.Issued {
		st.IssuedTokens = credentials.RecordIssued(st.IssuedTokens, t.ID, now, t.Expires)
	}
}
