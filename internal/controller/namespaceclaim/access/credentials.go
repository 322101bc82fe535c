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
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
	"github.com/nsclaim/nsclaim-operator/internal/claimpolicy"
	"github.com/nsclaim/nsclaim-operator/internal/claimstatus"
	"github.com/nsclaim/nsclaim-operator/internal/credentials"
	"github.com/nsclaim/nsclaim-operator/internal/credentials/tokensecret"
	"github.com/nsclaim/nsclaim-operator/internal/monitoring"
)

// credentialsPlan is what planCredentials decided: the tenant ServiceAccount, the state of the
// credentials Secret, and the token minted for it when one is due. The token is only ever written by
// writeCredentials, after the self-test proved the identity; until then it exists only in memory.
type credentialsPlan struct {
	sa    *corev1.ServiceAccount
	name  string
	state tokensecret.State
	// unprobed is set when the Secret was not probed because the claim never had one: it is then
	// created first, and probed only if the create finds one already there (secretAtCreate).
	unprobed bool
	decision credentials.Decision
	// token is the minted token to hand out; nil when none is due.
	token *credentials.Token
}

// planCredentials decides whether the claim's credentials Secret needs a (new) token and, if so, mints
// it, so the self-test runs with the very token that will be handed out. The operator never reads
// Secrets: what it issued is recorded in the claim's status, and the Secret is only ever created, or
// changed through a JSON patch whose first operation tests the claim-uid label, so a Secret of that
// name that nsclaim did not make for this claim is never read or changed (the claim is refused with
// SecretConflict). A token is due when there is none or its Secret is gone, when the ServiceAccount
// was recreated, or when renewal is due; with the only-once token policy it is issued once, valid
// until the claim expires, and never again. It returns nil when a refusal was recorded.
func (r *Phase) planCredentials(ctx context.Context, s *Claim) (*credentialsPlan, error) {
	claim := s.Claim
	p := &credentialsPlan{name: credentials.ClaimSecretName(claim), state: tokensecret.Ours}
	rec := credentials.RecordOf(&claim.Status)
	ns := s.Desired.Namespace.Name
	sa, err := r.tenantServiceAccount(ctx, ns)
	if err != nil {
		return nil, err
	}
	p.sa = sa
	if s.TokenOnce && rec != nil && claim.Status.CredentialsSecretName == p.name {
		if rec.ServiceAccountUID != "" && rec.ServiceAccountUID != string(sa.UID) {
			// The ServiceAccount was recreated: the only token this claim gets is dead, and none is
			// issued again.
			s.Refusal = &claimpolicy.Refusal{Reason: tenancyv1alpha1.TokenRevokedReason, Message: fmt.Sprintf(
				"ServiceAccount %s/%s was recreated, so the only-once token no longer works and is not issued again: delete the claim and ask again", ns, sa.Name)}
			return nil, nil
		}
		return p, nil
	}
	// In steady state (a Ready claim where nothing was repaired) the record is trusted without asking
	// the API server, except once every CredentialsCheckInterval: a Secret deleted behind the
	// operator's back (which no watch reports, since the operator cannot read Secrets) is re-created
	// then, or at the next renewal.
	if credentials.NeverIssued(&claim.Status) {
		// A claim that never had a token has, unless the operator crashed between creating the Secret
		// and recording it, no Secret yet: create it first and probe only if the create finds one.
		p.state, p.unprobed = tokensecret.Absent, true
		// Creating the Secret is its check: the next periodic one is an interval away.
		r.credentialsCheckedNow(s)
	} else if due := r.credentialsCheckDue(s); rec == nil || s.Repaired > 0 || !claimstatus.ReadyFor(claim) || claim.Status.CredentialsSecretName != p.name || due {
		r.credentialsCheckedNow(s)
		var err error
		var found *credentials.Record
		if p.state, found, err = tokensecret.ProbeRecord(ctx, r.Client, SecretRef(claim, p.name)); err != nil {
			return nil, err
		}
		// The Secret's own record is the latest word: the cached status may lag this operator's
		// last write.
		rec = found
	}
	if p.state == tokensecret.Foreign {
		s.Refusal = claimpolicy.SecretConflict(claim.Namespace, p.name)
		return nil, nil
	}
	p.decision = credentials.ScheduleBy(s.TokenOnce, s.Now, rec, string(sa.UID), claimpolicy.RenewBefore(s.Class))
	if !p.decision.Issue {
		keepToken(s, p.name, rec, p.decision)
		return p, nil
	}
	ttl := credentials.IssueTTL(s.TokenOnce, s.Now, s.ExpiresAt, claimpolicy.TokenTTL(s.Class))
	tok, err := tokensecret.Issue(ctx, r.Client, sa, ttl, tokenTimeout)
	if err != nil {
		monitoring.CredentialFailed(s.Class.Name)
		return nil, err
	}
	p.token = &tok
	return p, nil
}

// keepToken records for the claim's status the token rec describes, in the Secret name, as kept by the
// decision d (credentials.ScheduleBy), and sets the scope's renewAt to d.RenewAt (zero for a token issued only
// once, which is never renewed).
func keepToken(s *Claim, name string, rec *credentials.Record, d credentials.Decision) {
	s.RenewAt = d.RenewAt
	s.Found.RecordToken(name, rec.ExpiresAt, rec.ServiceAccountUID)
}

// writeCredentials writes the token planCredentials minted to the claim's Secret (creating it, or
// replacing its token), once the self-test has passed. With no token minted the credentials already
// in place are kept.
func (r *Phase) writeCredentials(ctx context.Context, s *Claim, p *credentialsPlan) error {
	claim := s.Claim
	if p.token == nil {
		s.CredentialsReady = true
		return nil
	}
	tok := *p.token
	ns := s.Desired.Namespace.Name
	logf.FromContext(ctx).Info("Issued token", "serviceAccount", klog.KObj(p.sa), "reason", p.decision.Reason, "secret", p.state, "expiresAt", tok.ExpiresAt, "onlyOnce", s.TokenOnce)
	data, err := credentials.SecretData(r.Endpoint, ns, tok)
	if err != nil {
		return fmt.Errorf("rendering kubeconfig: %w", err)
	}
	replace := p.state != tokensecret.Absent
	if !replace {
		err = r.createSecret(ctx, s, p.name, data, tok)
		if apierrors.IsAlreadyExists(err) && p.unprobed {
			kept, perr := r.secretAtCreate(ctx, s, p)
			if perr != nil || kept || s.Refusal != nil {
				return perr
			}
			replace = true
		}
	}
	if replace {
		var foreign bool
		if foreign, err = tokensecret.Replace(ctx, r.Client, SecretRef(claim, p.name), data, tok); foreign {
			s.Refusal = claimpolicy.SecretConflict(claim.Namespace, p.name)
			return nil
		}
	}
	if err != nil {
		monitoring.CredentialFailed(s.Class.Name)
		return fmt.Errorf("writing Secret %s/%s: %w", claim.Namespace, p.name, err)
	}
	monitoring.CredentialIssued(s.Class.Name, p.decision.Reason != credentials.ReasonNoToken)
	s.TokenIssued = true
	s.Repaired++
	if !s.TokenOnce {
		s.RenewAt = tok.ExpiresAt.Add(-claimpolicy.RenewBefore(s.Class))
	}
	s.Found.RecordToken(p.name, tok.ExpiresAt, tok.ServiceAccountUID)
	if tok.CredentialID != "" {
		first := len(claim.Status.IssuedTokens) == 0 && len(s.Found.Issued) == 0
		s.Found.Issued = append(s.Found.Issued, claimstatus.IssuedToken{ID: tok.CredentialID, Expires: tok.ExpiresAt})
		if r.Recorder != nil && !first {
			// The credential ID joins the token's requests in the audit log to this claim; it cannot
			// authenticate, the token itself is never in an Event. The first token's ID is in the
			// Provisioned Event instead (provisionedNote).
			r.Recorder.Eventf(claim, nil, corev1.EventTypeNormal, "TokenIssued", "IssueToken",
				"Issued a token for ServiceAccount %s/%s in Secret %s: credential ID %s, expires %s (%s)", ns, p.sa.Name, p.name,
				tok.CredentialID, tok.ExpiresAt.UTC().Format(time.RFC3339), p.decision.Reason)
		}
	}
	s.CredentialsReady = true
	return nil
}

// secretAtCreate handles a create that found the Secret already there although the claim's status
// records none. It probes the Secret: one that is not this claim's is refused (SecretConflict) and
// never changed. This claim's own Secret was written by an operator that stopped before recording it
// in the status: its token, when still good by credentials.ScheduleBy (the same decision planCredentials takes),
// is kept and recorded (kept is true), so no second token is handed out; the freshly minted one is
// dropped, never written. Otherwise (no token in it, or due) the caller replaces its token.
func (r *Phase) secretAtCreate(ctx context.Context, s *Claim, p *credentialsPlan) (kept bool, err error) {
	claim := s.Claim
	state, sec, err := tokensecret.Probe(ctx, r.Client, SecretRef(claim, p.name))
	switch {
	case err != nil:
		return false, err
	case state == tokensecret.Foreign:
		s.Refusal = claimpolicy.SecretConflict(claim.Namespace, p.name)
		return false, nil
	case state == tokensecret.Absent:
		return false, fmt.Errorf("secret %s/%s was deleted while it was being created", claim.Namespace, p.name)
	}
	p.state = tokensecret.Ours
	value := string(sec.Data[credentials.TokenKey])
	found := credentials.RecordFromAnnotations(sec.Annotations)
	d := credentials.ScheduleBy(s.TokenOnce, s.Now, found, string(p.sa.UID), claimpolicy.RenewBefore(s.Class))
	if value == "" || d.Issue {
		return false, nil
	}
	logf.FromContext(ctx).Info("Kept the token of a Secret written before its claim's status recorded it", "secret", klog.KObj(sec), "expiresAt", found.ExpiresAt)
	keepToken(s, p.name, found, d)
	if id, err := credentials.CredentialID(value); err == nil && id != "" {
		s.Found.Issued = append(s.Found.Issued, claimstatus.IssuedToken{ID: id, Expires: found.ExpiresAt})
	}
	s.CredentialsReady = true
	return true, nil
}

// createSecret creates the credentials Secret, owned by the claim (garbage-collected with it) and by the
// namespace (so that, as the ConfigMap protocol promises, deleting the namespace removes it too).
func (r *Phase) createSecret(ctx context.Context, s *Claim, name string, data map[string][]byte, tok credentials.Token) error {
	owners := []metav1.OwnerReference{*metav1.NewControllerRef(s.Claim, tenancyv1alpha1.GroupVersion.WithKind("NamespaceClaim"))}
	if s.Namespace != nil {
		owners = append(owners, claimpolicy.NamespaceOwnerRef(s.Namespace))
	}
	// A Secret made since the probe (or, unprobed, before this claim's status recorded it) is an
	// AlreadyExists error: the caller probes it, or the next reconcile does.
	return tokensecret.Create(ctx, r.Client, SecretRef(s.Claim, name), owners, data, tok)
}

// SecretRef names the claim's credentials Secret name.
func SecretRef(claim *tenancyv1alpha1.NamespaceClaim, name string) tokensecret.Ref {
	return tokensecret.Ref{Namespace: claim.Namespace, Name: name, ClaimUID: claim.UID}
}

// credentialsCheckDue reports whether the claim's credentials Secret is due for a check, and schedules
// the next one in the scope (so the claim is requeued for it).
func (r *Phase) credentialsCheckDue(s *Claim) bool {
	if r.CheckInterval <= 0 {
		return false
	}
	every := r.CheckInterval
	last, seen := r.Memory.CheckedAt(s.Claim.UID)
	if !seen {
		last = s.Now.Add(-rand.N(every))
		r.Memory.Checked(s.Claim.UID, last)
	}
	s.CredentialsCheckAt = last.Add(every)
	return !s.Now.Before(s.CredentialsCheckAt)
}

// credentialsCheckedNow records that the claim's Secret was checked in this reconcile.
func (r *Phase) credentialsCheckedNow(s *Claim) {
	if r.CheckInterval <= 0 {
		return
	}
	r.Memory.Checked(s.Claim.UID, s.Now)
	s.CredentialsCheckAt = s.Now.Add(r.CheckInterval)
}

// tenantServiceAccount reads the tenant ServiceAccount of namespace ns from the cache and, when the
// cache misses it, from the API server: the children phase made it moments ago in this reconcile (a
// handout, a new namespace), and the cache may not have seen it yet. Failing the reconcile for that
// would cost a requeue with backoff and every request of the reconcile again.
func (r *Phase) tenantServiceAccount(ctx context.Context, ns string) (*corev1.ServiceAccount, error) {
	key := client.ObjectKey{Namespace: ns, Name: tenancyv1alpha1.TenantServiceAccountName}
	sa := &corev1.ServiceAccount{}
	err := r.Client.Get(ctx, key, sa)
	if apierrors.IsNotFound(err) && r.APIReader != nil {
		err = r.APIReader.Get(ctx, key, sa)
	}
	if err != nil {
		return nil, fmt.Errorf("reading ServiceAccount %s/%s: %w", ns, tenancyv1alpha1.TenantServiceAccountName, err)
	}
	return sa, nil
}
