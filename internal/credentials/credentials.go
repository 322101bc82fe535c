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

// Package credentials renders the credentials handed to a tenant (a kubeconfig and the Secret that
// carries it) and decides when a token must be renewed. It does no I/O.
package credentials

import (
	"encoding/json"
	"net/http"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
)

// Keys of a credentials Secret.
const (
	KubeconfigKey = "kubeconfig"
	TokenKey      = "token"
	CAKey         = "ca.crt"
	NamespaceKey  = "namespace"
)

// Token is an issued ServiceAccount token and what it was issued for.
type Token struct {
	Value             string
	ExpiresAt         time.Time
	ServiceAccountUID string
	// CredentialID is the token's jti, which the API server's audit log records for every request made
	// with it; empty if the token carried none.
	CredentialID string
}

// Endpoint is the API server a kubeconfig points at.
type Endpoint struct {
	Server string
	CAData []byte
	// Source says where Server came from (see ChooseServer).
	Source ServerSource
}

// InClusterOnly reports whether Server is an address only clients inside the cluster reach.
func (e Endpoint) InClusterOnly() bool { return e.Source == ServerInClusterOnly }

// Kubeconfig renders a kubeconfig for one namespace: a single cluster, user and context, with the
// namespace as the context's default.
func Kubeconfig(ep Endpoint, namespace, token string) ([]byte, error) {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["nsclaim"] = &clientcmdapi.Cluster{Server: ep.Server, CertificateAuthorityData: ep.CAData}
	cfg.AuthInfos[namespace] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts[namespace] = &clientcmdapi.Context{Cluster: "nsclaim", AuthInfo: namespace, Namespace: namespace}
	cfg.CurrentContext = namespace
	return clientcmd.Write(*cfg)
}

// SecretName is the name of the credentials Secret of the request named requestName.
func SecretName(requestName string) string { return requestName + "-kubeconfig" }

// SecretData renders the data of a credentials Secret.
func SecretData(ep Endpoint, namespace string, tok Token) (map[string][]byte, error) {
	kc, err := Kubeconfig(ep, namespace, tok.Value)
	if err != nil {
		return nil, err
	}
	return map[string][]byte{
		KubeconfigKey: kc,
		TokenKey:      []byte(tok.Value),
		CAKey:         ep.CAData,
		NamespaceKey:  []byte(namespace),
	}, nil
}

// Record is what the operator remembers about the token it last issued: when it expires and which
// ServiceAccount it was issued for. It is kept in the claim's status, because the operator never reads
// Secrets.
type Record struct {
	ExpiresAt         time.Time
	ServiceAccountUID string
}

// ReasonNoToken is the Decision reason for a first token (or one whose Secret is gone).
const ReasonNoToken = "no token"

// Decision says whether to issue a token now, and when to look again.
type Decision struct {
	Issue   bool
	Reason  string
	RenewAt time.Time
}

// Schedule decides about the token described by rec (nil if there is none, or if its Secret is gone)
// for the ServiceAccount with UID saUID, at now, renewing renewBefore ahead of expiry. A token is issued
// when there is none, when it was issued for another ServiceAccount (recreated, so the old token is
// dead), or when it is due for renewal. Otherwise the token is kept, and RenewAt says when to look again.
func Schedule(now time.Time, rec *Record, saUID string, renewBefore time.Duration) Decision {
	switch {
	case rec == nil:
		return Decision{Issue: true, Reason: ReasonNoToken}
	case rec.ServiceAccountUID != saUID:
		return Decision{Issue: true, Reason: "ServiceAccount recreated"}
	case !now.Before(rec.ExpiresAt.Add(-renewBefore)):
		return Decision{Issue: true, Reason: "renewal due"}
	}
	return Decision{RenewAt: rec.ExpiresAt.Add(-renewBefore)}
}

// ScheduleOnlyOnce is Schedule for a token issued only once, which is never renewed: it is kept, with
// no RenewAt, until it expires. A token is issued when there is none, when it was issued for another
// ServiceAccount, or when it has expired; an expired token is never kept.
func ScheduleOnlyOnce(now time.Time, rec *Record, saUID string) Decision {
	d := Schedule(now, rec, saUID, 0)
	d.RenewAt = time.Time{}
	return d
}

// MinTokenTTL is the shortest lifetime the TokenRequest API issues.
const MinTokenTTL = 10 * time.Minute

// OnceTTL is the lifetime of a token issued only once: until the claim expires, and at least
// MinTokenTTL.
func OnceTTL(now, claimExpiresAt time.Time) time.Duration {
	return max(claimExpiresAt.Sub(now).Truncate(time.Second), MinTokenTTL)
}

// OwnershipTestFailed reports whether an API error status is the failure of the test operation that
// ProbePatch and ReplaceDataPatch start with (the Secret has no claim-uid label, or another one). The
// API server answers a failed JSON patch operation with a bare 422: reason Invalid, the generic message,
// and no kind, name or cause (the patch library's message is not returned). A 422 that says anything
// more (a validation error names the Secret and its fields, an admission webhook gives its own message)
// is not proof that the Secret belongs to someone else.
func OwnershipTestFailed(st metav1.Status) bool {
	if st.Code != http.StatusUnprocessableEntity || st.Reason != metav1.StatusReasonInvalid || st.Message != patchRejectedMessage {
		return false
	}
	d := st.Details
	return d == nil || (d.Kind == "" && d.Name == "" && len(d.Causes) == 0)
}

// patchRejectedMessage is the API machinery's message for a 422 it was given no details of.
const patchRejectedMessage = "the server rejected our request due to an error in our request"

// ownerLabelPath is the JSON pointer of the claim-uid label.
var ownerLabelPath = "/metadata/labels/" + strings.ReplaceAll(tenancyv1alpha1.ClaimUIDLabel, "/", "~1")

type patchOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value"`
}

// ProbePatch is a JSON patch that changes nothing and succeeds only on a Secret whose claim-uid label
// is uid. The API server answers 404 when the Secret is gone and 422 when it is not this claim's, and
// never returns (or changes) a Secret that is not this claim's: the operator learns whether its Secret
// is there without the right to read Secrets.
func ProbePatch(uid string) []byte {
	b, _ := json.Marshal([]patchOp{{Op: "test", Path: ownerLabelPath, Value: uid}})
	return b
}

// ReplaceDataPatch is a JSON patch that replaces the data and token annotations of the Secret of the
// claim with uid, and fails (422) without changing anything on any other Secret.
func ReplaceDataPatch(uid string, data map[string][]byte, tok Token) []byte {
	b, _ := json.Marshal([]patchOp{
		{Op: "test", Path: ownerLabelPath, Value: uid},
		{Op: "add", Path: "/data", Value: data},
		{Op: "add", Path: "/metadata/annotations", Value: TokenAnnotations(tok)},
	})
	return b
}

// TokenAnnotations record on the Secret what its token is: when it expires and which ServiceAccount it
// was issued for. With the record in the claim's status they let the operator tell, without issuing a
// new token, whether the token it finds is still good, even when its cached status lags its last write.
func TokenAnnotations(tok Token) map[string]string {
	return map[string]string{
		tenancyv1alpha1.TokenExpiresAtAnnotation:    tok.ExpiresAt.UTC().Format(time.RFC3339),
		tenancyv1alpha1.ServiceAccountUIDAnnotation: tok.ServiceAccountUID,
	}
}

// RecordFromAnnotations reads TokenAnnotations back; nil when they are missing or malformed.
func RecordFromAnnotations(a map[string]string) *Record {
	t, err := time.Parse(time.RFC3339, a[tenancyv1alpha1.TokenExpiresAtAnnotation])
	if err != nil || a[tenancyv1alpha1.ServiceAccountUIDAnnotation] == "" {
		return nil
	}
	return &Record{ExpiresAt: t, ServiceAccountUID: a[tenancyv1alpha1.ServiceAccountUIDAnnotation]}
}

// ExpiryTime converts t for status fields.
func ExpiryTime(t time.Time) *metav1.Time {
	mt := metav1.NewTime(t.UTC().Truncate(time.Second))
	return &mt
}
