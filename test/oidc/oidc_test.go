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

// Package oidc runs a CI pipeline that has nothing but an OIDC ID token, as GitHub Actions gives one,
// against a cluster whose kube-apiserver trusts the issuer (structured authentication), with a class
// of credentials mode Requester (docs/keyless.md). It runs from hack/test-oidc.sh, which starts the
// issuer of test/oidc/issuer on loopback, the cluster with an AuthenticationConfiguration that maps
// the token's `sub` to the username `github:<sub>` and its `repository` to the group
// `github:repo:<repository>` (and rejects repositories outside `org/`), and the operator under its own
// RBAC with the admission fence and the creator-stamping policy of config/fence.
//
// Environment:
//
//	KUBECONFIG                         an admin kubeconfig (sets up the class and the grants, checks)
//	NSCLAIM_OIDC_TOKEN_URL             the issuer's token endpoint (as ACTIONS_ID_TOKEN_REQUEST_URL)
//	NSCLAIM_OIDC_REQUEST_TOKEN_FILE    the file holding its request token (as ACTIONS_ID_TOKEN_REQUEST_TOKEN)
//	NSCLAIM_OIDC_CA_FILE               the issuer's CA certificate
//	NSCLAIM_OIDC_AUDIENCE              the audience the API server accepts
package oidc

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
)

const (
	// className is the keyless class: mode Requester, admitting org/app's pipelines only.
	className = "keyless"
	// requesterNamespace is where pipelines create their claims; each repository is granted the
	// shipped namespaceclaim-editor-role there, and nothing else.
	requesterNamespace = "pipelines"
	// otherNamespace is another team's namespace, which exists and which no pipeline may touch.
	otherNamespace = "other-team"
	// editorRole is the shipped config/rbac/namespaceclaim_editor_role.yaml, as kustomize names it.
	editorRole = "nsclaim-operator-namespaceclaim-editor-role"
	// pullRequestRef is the ref of org/app's pipeline run, mainRef org/other's.
	pullRequestRef = "refs/pull/42/merge"
	mainRef        = "refs/heads/main"
)

var (
	ctx      = context.Background()
	scheme   = runtime.NewScheme()
	admin    client.WithWatch
	adminCfg *rest.Config
	issuer   tokenSource
)

func TestMain(m *testing.M) {
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(tenancyv1alpha1.AddToScheme(scheme))
	logf.SetLogger(logr.Discard()) // the clients' own logging; the tests report what they see
	for _, v := range []string{"KUBECONFIG", "NSCLAIM_OIDC_TOKEN_URL", "NSCLAIM_OIDC_REQUEST_TOKEN_FILE", "NSCLAIM_OIDC_CA_FILE", "NSCLAIM_OIDC_AUDIENCE"} {
		if os.Getenv(v) == "" {
			fmt.Fprintf(os.Stderr, "%s must be set: run `make test-oidc`\n", v)
			os.Exit(1)
		}
	}
	var err error
	adminCfg, err = clientcmd.BuildConfigFromFlags("", os.Getenv("KUBECONFIG"))
	exitOn(err)
	admin, err = client.NewWithWatch(adminCfg, client.Options{Scheme: scheme})
	exitOn(err)
	issuer, err = newTokenSource()
	exitOn(err)
	exitOn(setUp())
	os.Exit(m.Run())
}

func exitOn(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// setUp is the admin's part: the class, the requester namespace with one grant per repository, and
// another team's namespace.
func setUp() error {
	class := &tenancyv1alpha1.NamespaceClass{ObjectMeta: metav1.ObjectMeta{Name: className}, Spec: tenancyv1alpha1.NamespaceClassSpec{
		ClusterRole: "edit", Naming: tenancyv1alpha1.NamingSpec{Prefix: "ci-"},
		NetworkPolicy: tenancyv1alpha1.NetworkPolicyDenyFromOtherNamespaces, PodSecurity: tenancyv1alpha1.PodSecurityRestricted,
		Credentials: tenancyv1alpha1.CredentialsSpec{Mode: tenancyv1alpha1.CredentialsModeRequester,
			Requester: &tenancyv1alpha1.RequesterCredentials{AllowedUsernames: []string{"github:repo:org/app:*"}}},
	}}
	objs := make([]client.Object, 0, 6)
	objs = append(objs, class,
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: requesterNamespace}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: otherNamespace}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings", Namespace: otherNamespace}, Data: map[string]string{"owner": "other-team"}},
	)
	// The pipelines' only right: the shipped editor role on claims, in the requester namespace.
	for _, repo := range []string{"org/app", "org/other"} {
		objs = append(objs, &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "claims-" + strings.ReplaceAll(repo, "/", "-"), Namespace: requesterNamespace},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: editorRole},
			Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: "github:repo:" + repo}},
		})
	}
	for _, o := range objs {
		if err := admin.Create(ctx, o); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating %T %s: %w", o, o.GetName(), err)
		}
	}
	return waitForStamp()
}

// waitForStamp waits until admission stamps the creator of a new claim (a server-side dry run: the
// policy runs, nothing is stored), so that the tests' claims are made after the policy took effect.
func waitForStamp() error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		probe := &tenancyv1alpha1.NamespaceClaim{ObjectMeta: metav1.ObjectMeta{Name: "stamp-probe", Namespace: requesterNamespace},
			Spec: tenancyv1alpha1.NamespaceClaimSpec{ClassName: className}}
		err := admin.Create(ctx, probe, client.DryRunAll)
		if err == nil && probe.Spec.Creator != nil && probe.Spec.Creator.Username != "" {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("admission does not stamp spec.creator of new claims (is config/fence's stamp-creator policy installed?): %v", err)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// tokenSource asks the test issuer for ID tokens the way a GitHub Actions job asks its runner: a GET
// of the request URL with the request token and the audience, answered with {"value": "<jwt>"}.
type tokenSource struct {
	url, requestToken, audience string
	http                        *http.Client
}

func newTokenSource() (tokenSource, error) {
	requestToken, err := os.ReadFile(os.Getenv("NSCLAIM_OIDC_REQUEST_TOKEN_FILE"))
	if err != nil {
		return tokenSource{}, err
	}
	caPEM, err := os.ReadFile(os.Getenv("NSCLAIM_OIDC_CA_FILE"))
	if err != nil {
		return tokenSource{}, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return tokenSource{}, fmt.Errorf("no certificate in %s", os.Getenv("NSCLAIM_OIDC_CA_FILE"))
	}
	return tokenSource{url: os.Getenv("NSCLAIM_OIDC_TOKEN_URL"), requestToken: strings.TrimSpace(string(requestToken)),
		audience: os.Getenv("NSCLAIM_OIDC_AUDIENCE"),
		http: &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
			TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}}, nil
}

// token returns an ID token of a run of repository at ref.
func (s tokenSource) token(t *testing.T, repository, ref string) string {
	t.Helper()
	q := url.Values{"audience": {s.audience}, "repository": {repository}, "ref": {ref}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.url+"?"+q.Encode(), nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+s.requestToken)
	resp, err := s.http.Do(req)
	if err != nil {
		t.Fatalf("asking the issuer for a token: %v", err)
	}
	defer func() { _ = resp.Body.Close() }()
	var body struct {
		Value string `json:"value"`
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("the issuer answered %s", resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || body.Value == "" {
		t.Fatalf("the issuer's answer has no token: %v", err)
	}
	return body.Value
}

// pipeline returns a client that authenticates with nothing but the ID token: no client certificate,
// no kubeconfig user, only the cluster's address and CA.
func pipeline(t *testing.T, idToken string) client.WithWatch {
	t.Helper()
	cfg := rest.AnonymousClientConfig(adminCfg)
	cfg.BearerToken = idToken
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// username is the username the API server's claim mappings make of a GitHub Actions token.
func username(repository, ref string) string { return "github:repo:" + repository + ":ref:" + ref }
