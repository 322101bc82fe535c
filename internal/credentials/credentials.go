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
	"time"

	corev1 "k8s.io/api/core/v1"
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
}

// Endpoint is the API server a kubeconfig points at.
type Endpoint struct {
	Server string
	CAData []byte
}

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

// TokenAnnotations records on the Secret what its token is, so a restarted operator can tell whether
// the token it finds is still good without issuing a new one.
func TokenAnnotations(tok Token) map[string]string {
	return map[string]string{
		tenancyv1alpha1.TokenExpiresAtAnnotation:    tok.ExpiresAt.UTC().Format(time.RFC3339),
		tenancyv1alpha1.ServiceAccountUIDAnnotation: tok.ServiceAccountUID,
	}
}

// Stored returns what a credentials Secret says about its token: its expiry and the ServiceAccount it
// was issued for. ok is false when the Secret has no usable record (then a token must be issued).
func Stored(s *corev1.Secret) (expiresAt time.Time, serviceAccountUID string, ok bool) {
	if s == nil || len(s.Data[TokenKey]) == 0 {
		return time.Time{}, "", false
	}
	t, err := time.Parse(time.RFC3339, s.Annotations[tenancyv1alpha1.TokenExpiresAtAnnotation])
	if err != nil {
		return time.Time{}, "", false
	}
	return t, s.Annotations[tenancyv1alpha1.ServiceAccountUIDAnnotation], true
}

// Decision says whether to issue a token now, and when to look again.
type Decision struct {
	Issue   bool
	Reason  string
	RenewAt time.Time
}

// Schedule decides about the token stored in secret (nil if there is none) for the ServiceAccount with
// UID saUID, at now, renewing renewBefore ahead of expiry. A token is issued when there is none, when
// it was issued for another ServiceAccount (recreated, so the old token is dead), or when it is due for
// renewal. Otherwise the stored token is kept, and RenewAt says when to look again.
func Schedule(now time.Time, secret *corev1.Secret, saUID string, renewBefore time.Duration) Decision {
	exp, uid, ok := Stored(secret)
	switch {
	case !ok:
		return Decision{Issue: true, Reason: "no token"}
	case uid != saUID:
		return Decision{Issue: true, Reason: "ServiceAccount recreated"}
	case !now.Before(exp.Add(-renewBefore)):
		return Decision{Issue: true, Reason: "renewal due"}
	}
	return Decision{RenewAt: exp.Add(-renewBefore)}
}

// Owned reports whether s is a credentials Secret made by nsclaim for the object with uid.
func Owned(s *corev1.Secret, uid string) bool {
	if s.Labels[tenancyv1alpha1.ManagedByLabel] != tenancyv1alpha1.ManagedByValue {
		return false
	}
	for _, ref := range s.OwnerReferences {
		if string(ref.UID) == uid {
			return true
		}
	}
	return false
}

// ExpiryTime converts t for status fields.
func ExpiryTime(t time.Time) *metav1.Time {
	mt := metav1.NewTime(t.UTC().Truncate(time.Second))
	return &mt
}
