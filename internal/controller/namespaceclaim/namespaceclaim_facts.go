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

package namespaceclaim

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
	"github.com/nsclaim/nsclaim-operator/internal/credentials"
)

// found is a value a phase found for one status field, or nothing (the field keeps what it had).
type found[T any] struct {
	v  T
	ok bool
}

// set records v.
func (f *found[T]) set(v T) { f.v, f.ok = v, true }

// or returns what was found, else v (the field as it was read).
func (f found[T]) or(v T) T {
	if f.ok {
		return f.v
	}
	return v
}

// issuedToken is a token this reconcile handed out or found, for status.issuedTokens.
type issuedToken struct {
	id      string
	expires time.Time
}

// statusFacts are the status fields the phases found in one reconcile; setStatus writes them, and
// nothing else writes a claim's status fields but status.sleep, which reconcileSleep records with a
// status write of its own before it scales anything down: the one exception to patchStatus, listed in
// TestStatusIsWrittenOnlyByTheListedWriters. A field a phase did not find keeps what it had.
type statusFacts struct {
	// className is the resolved class (reconcileClass).
	className found[string]
	// expiresAt is the hard TTL's end (reconcileClass, when not refused).
	expiresAt found[*metav1.Time]
	// namespace is the namespace the claim holds (reconcileNamespace).
	namespace found[string]
	// podsActive, lastActivity and idleExpiresAt are the namespace's activity (reconcileActivity; an
	// expiry stops it, reconcileExpiry).
	podsActive    found[bool]
	lastActivity  found[*metav1.Time]
	idleExpiresAt found[*metav1.Time]
	// boundUser is the creator the namespace's RoleBindings name, or "" (reconcileCreator,
	// reconcileRequesterAccess).
	boundUser found[string]
	// secretName, tokenExpiresAt and tokenSAUID describe the token in the credentials Secret
	// (keepToken, writeCredentials; deleteCredentials clears them).
	secretName     found[string]
	tokenExpiresAt found[*metav1.Time]
	tokenSAUID     found[string]
	// issued are the tokens recorded for the audit trail, in the order they were handed out.
	issued []issuedToken
}

// recordToken records the token in Secret name, valid until expires, of the ServiceAccount with UID
// saUID.
func (f *statusFacts) recordToken(name string, expires time.Time, saUID string) {
	f.secretName.set(name)
	f.tokenExpiresAt.set(credentials.ExpiryTime(expires))
	f.tokenSAUID.set(saUID)
}

// clearToken records that the claim has no token (its Secret was deleted).
func (f *statusFacts) clearToken() {
	f.secretName.set("")
	f.tokenExpiresAt.set(nil)
	f.tokenSAUID.set("")
}

// applyFacts writes the facts into st; now is when the issued tokens were recorded.
func applyFacts(f *statusFacts, st *tenancyv1alpha1.NamespaceClaimStatus, now time.Time) {
	st.ClassName = f.className.or(st.ClassName)
	st.ExpiresAt = f.expiresAt.or(st.ExpiresAt)
	st.Namespace = f.namespace.or(st.Namespace)
	st.PodsActive = f.podsActive.or(st.PodsActive)
	st.LastActivity = f.lastActivity.or(st.LastActivity)
	st.IdleExpiresAt = f.idleExpiresAt.or(st.IdleExpiresAt)
	st.BoundUser = f.boundUser.or(st.BoundUser)
	st.CredentialsSecretName = f.secretName.or(st.CredentialsSecretName)
	st.TokenExpiresAt = f.tokenExpiresAt.or(st.TokenExpiresAt)
	st.TokenServiceAccountUID = f.tokenSAUID.or(st.TokenServiceAccountUID)
	for _, t := range f.issued {
		st.IssuedTokens = credentials.RecordIssued(st.IssuedTokens, t.id, now, t.expires)
	}
}
