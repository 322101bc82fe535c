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
// Package tokensecret mints a tenant ServiceAccount's tokens and keeps a claim's credentials Secret: it
// creates the Secret, replaces its token, learns whether it exists and is the claim's, and deletes it,
// without ever reading or changing a Secret that nsclaim did not make for that claim. What the Secret
// holds, and when a token is due, is decided by package credentials, which does no I/O; which claim a
// Secret is for is named by its Ref.
package tokensecret

import (
	"context"
	"errors"
	"fmt"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
	"github.com/nsclaim/nsclaim-operator/internal/credentials"
	"github.com/nsclaim/nsclaim-operator/internal/kube"
)

// Ref names a claim's credentials Secret: its namespace (the claim's), its name, and the UID of the
// claim it is for, which its claim-uid label must carry.
type Ref struct {
	Namespace, Name string
	ClaimUID        types.UID
}

// State is what a probe learned about a credentials Secret.
type State int

const (
	// Ours: the Secret exists and carries the claim's UID label.
	Ours State = iota
	// Absent: there is no Secret of that name.
	Absent
	// Foreign: a Secret of that name exists that nsclaim did not make for the claim.
	Foreign
)

func (s State) String() string { return [...]string{"ours", "absent", "foreign"}[s] }

// Probe finds out whether the Secret exists and is the claim's, with a JSON patch that changes nothing
// and fails on any Secret that is not the claim's, so no other Secret is ever read. It returns the
// Secret when it is the claim's.
func Probe(ctx context.Context, c client.Client, ref Ref) (State, *corev1.Secret, error) {
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ref.Namespace, Name: ref.Name}}
	err := c.Patch(ctx, sec, client.RawPatch(types.JSONPatchType, credentials.ProbePatch(string(ref.ClaimUID))), client.FieldOwner(kube.FieldOwner))
	switch {
	case err == nil:
		return Ours, sec, nil
	case apierrors.IsNotFound(err):
		return Absent, nil, nil
	case IsPatchTestFailure(err):
		return Foreign, nil, nil
	}
	return Ours, nil, fmt.Errorf("checking Secret %s/%s: %w", ref.Namespace, ref.Name, err)
}

// ProbeRecord is Probe that returns, for the claim's own Secret, the token record the Secret carries
// (nil if it holds no token).
func ProbeRecord(ctx context.Context, c client.Client, ref Ref) (State, *credentials.Record, error) {
	state, sec, err := Probe(ctx, c, ref)
	if state != Ours || err != nil || len(sec.Data[credentials.TokenKey]) == 0 {
		return state, nil, err
	}
	return state, credentials.RecordFromAnnotations(sec.Annotations), nil
}

// Create creates the Secret holding data and the record of tok, labelled for its claim and owned by
// owners. A Secret already there is an error that apierrors.IsAlreadyExists reports: the caller probes
// it.
func Create(ctx context.Context, c client.Client, ref Ref, owners []metav1.OwnerReference, data map[string][]byte, tok credentials.Token) error {
	sec := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: ref.Name, Namespace: ref.Namespace, Labels: map[string]string{
			tenancyv1alpha1.ManagedByLabel: tenancyv1alpha1.ManagedByValue,
			tenancyv1alpha1.ClaimUIDLabel:  string(ref.ClaimUID),
		},
			Annotations: credentials.TokenAnnotations(tok), OwnerReferences: owners},
		Type: corev1.SecretTypeOpaque,
		Data: data,
	}
	err := c.Create(ctx, sec, client.FieldOwner(kube.FieldOwner))
	if apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("secret %s appeared while it was being created: %w", klog.KObj(sec), err)
	}
	return err
}

// Replace replaces the token of the claim's Secret with data and the record of tok, through a JSON
// patch whose first operation tests the claim-uid label: foreign reports a Secret that is not the
// claim's, which is left unchanged.
func Replace(ctx context.Context, c client.Client, ref Ref, data map[string][]byte, tok credentials.Token) (foreign bool, err error) {
	err = c.Patch(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ref.Namespace, Name: ref.Name}},
		client.RawPatch(types.JSONPatchType, credentials.ReplaceDataPatch(string(ref.ClaimUID), data, tok)), client.FieldOwner(kube.FieldOwner))
	if IsPatchTestFailure(err) {
		return true, nil
	}
	return false, err
}

// Delete deletes the claim's Secret, found with Probe and deleted on the UID and resourceVersion the
// probe returned, so no other Secret is ever deleted. It reports the Secret it deleted, or nil.
func Delete(ctx context.Context, c client.Client, ref Ref) (*corev1.Secret, error) {
	state, sec, err := Probe(ctx, c, ref)
	if err != nil || state != Ours {
		return nil, err
	}
	uid, rv := sec.UID, sec.ResourceVersion
	if err := c.Delete(ctx, sec, client.Preconditions{UID: &uid, ResourceVersion: &rv}); client.IgnoreNotFound(err) != nil {
		return nil, fmt.Errorf("deleting Secret %s: %w", klog.KObj(sec), err)
	}
	return sec, nil
}

// IsPatchTestFailure reports a JSON patch whose ownership test failed (credentials.OwnershipTestFailed):
// the Secret is not the claim's. Other errors, 422 or not, are errors.
func IsPatchTestFailure(err error) bool {
	var status apierrors.APIStatus
	return errors.As(err, &status) && credentials.OwnershipTestFailed(status.Status())
}

// Issue asks the TokenRequest API for a token of sa with the given lifetime, within timeout. The
// error names what is wrong with a token's shape, never the token.
func Issue(ctx context.Context, c client.Client, sa *corev1.ServiceAccount, ttl, timeout time.Duration) (credentials.Token, error) {
	seconds := int64(ttl.Seconds())
	tr := &authenticationv1.TokenRequest{}
	tr.Spec.ExpirationSeconds = &seconds
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := c.SubResource("token").Create(ctx, sa, tr); err != nil {
		return credentials.Token{}, fmt.Errorf("requesting token for ServiceAccount %s: %w", klog.KObj(sa), err)
	}
	tok := credentials.Token{Value: tr.Status.Token, ExpiresAt: tr.Status.ExpirationTimestamp.Time, ServiceAccountUID: string(sa.UID)}
	id, err := credentials.CredentialID(tok.Value)
	if err != nil {
		logf.FromContext(ctx).Info("The issued token has no readable credential ID; its requests cannot be joined to the claim in the audit log", "serviceAccount", klog.KObj(sa), "error", err.Error())
	}
	tok.CredentialID = id
	logf.FromContext(ctx).V(1).Info("Minted token", "serviceAccount", klog.KObj(sa), "credentialID", id, "expiresAt", tok.ExpiresAt)
	return tok, nil
}
