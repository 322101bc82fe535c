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
	"time"

	"k8s.io/apimachinery/pkg/api/meta"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
)

// The claim's credentials, as its spec and status describe them: the decisions the claim reconciler's
// access phase takes before it asks the API server anything.

// ClaimSecretName is the claim's credentials Secret: spec.credentialsSecretName or the default.
func ClaimSecretName(claim *tenancyv1alpha1.NamespaceClaim) string {
	if claim.Spec.CredentialsSecretName != "" {
		return claim.Spec.CredentialsSecretName
	}
	return SecretName(claim.Name)
}

// RecordOf is the status's record of the issued token, or nil.
func RecordOf(st *tenancyv1alpha1.NamespaceClaimStatus) *Record {
	if st.TokenExpiresAt == nil {
		return nil
	}
	return &Record{ExpiresAt: st.TokenExpiresAt.Time, ServiceAccountUID: st.TokenServiceAccountUID}
}

// NeverIssued reports a claim that, by its status, never had a token in a Secret of this name and was
// not refused for a Secret in the way: its Secret is created without a probe first.
func NeverIssued(st *tenancyv1alpha1.NamespaceClaimStatus) bool {
	ready := meta.FindStatusCondition(st.Conditions, tenancyv1alpha1.ReadyCondition)
	return st.TokenExpiresAt == nil && st.CredentialsSecretName == "" && len(st.IssuedTokens) == 0 &&
		(ready == nil || ready.Reason != tenancyv1alpha1.SecretConflictReason)
}

// ScheduleBy decides about the token rec describes (nil if none) for the ServiceAccount with UID
// saUID by the claim's token policy: a token issued only once (once) is never renewed and is kept until
// it expires (ScheduleOnlyOnce); any other is renewed renewBefore ahead of expiry (Schedule).
func ScheduleBy(once bool, now time.Time, rec *Record, saUID string, renewBefore time.Duration) Decision {
	if once {
		return ScheduleOnlyOnce(now, rec, saUID)
	}
	return Schedule(now, rec, saUID, renewBefore)
}

// IssueTTL is the lifetime of a token issued at now: the class's token TTL (classTTL), or, for a token
// issued only once (once), valid until the claim expires (OnceTTL) but never longer than the class allows.
func IssueTTL(once bool, now, claimExpiresAt time.Time, classTTL time.Duration) time.Duration {
	if once {
		return min(OnceTTL(now, claimExpiresAt), classTTL)
	}
	return classTTL
}
