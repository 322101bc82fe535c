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

package v1alpha1_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
	"github.com/nsclaim/nsclaim-operator/internal/testenv"
)

var k8s client.Client

// envtestUnavailable says why the API server is not there; empty when it is.
var envtestUnavailable string

// requireEnvtest skips a test that needs the API server when it is not there (a failure under
// NSCLAIM_REQUIRE_ENVTEST, as make test-unit sets it: testenv.Unavailable, the one envtest gate).
func requireEnvtest(t *testing.T) {
	t.Helper()
	testenv.Unavailable(t, envtestUnavailable)
}

// TestMain installs the generated CRDs into envtest's kube-apiserver, so every CEL rule and schema
// bound is checked by the real API server.
func TestMain(m *testing.M) {
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		envtestUnavailable = "KUBEBUILDER_ASSETS is not set: the CEL tests need a kube-apiserver (run `make test-unit`)"
		os.Exit(m.Run())
	}
	env := &envtest.Environment{CRDDirectoryPaths: []string{filepath.Join("..", "..", "config", "crd", "bases")}, ErrorIfCRDPathMissing: true}
	cfg, err := env.Start()
	if err != nil {
		envtestUnavailable = fmt.Sprintf("the control plane in KUBEBUILDER_ASSETS did not start: %v", err)
		os.Exit(m.Run())
	}
	s := runtime.NewScheme()
	_ = tenancyv1alpha1.AddToScheme(s)
	if k8s, err = client.New(cfg, client.Options{Scheme: s}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	_ = env.Stop()
	os.Exit(code)
}

func dur(d time.Duration) *metav1.Duration { return &metav1.Duration{Duration: d} }

var seq int

func name(p string) string { seq++; return fmt.Sprintf("%s-%d", p, seq) }

func TestClaimValidation(t *testing.T) {
	requireEnvtest(t)
	ctx := context.Background()
	cases := []struct {
		name    string
		objName string
		spec    tenancyv1alpha1.NamespaceClaimSpec
		wantErr string
	}{
		{name: "empty spec is valid"},
		{name: "all fields", spec: tenancyv1alpha1.NamespaceClaimSpec{ClassName: "ci", NamespaceName: "pr-1", TTL: dur(time.Hour), Labels: map[string]string{"branch": "x"}}},
		{name: "namespaceName not a label", spec: tenancyv1alpha1.NamespaceClaimSpec{NamespaceName: "PR_1"}, wantErr: "namespaceName must be a DNS-1123 label"},
		{name: "namespaceName too long", spec: tenancyv1alpha1.NamespaceClaimSpec{NamespaceName: strings.Repeat("a", 64)}, wantErr: "spec.namespaceName"},
		{name: "namespaceName kube-", spec: tenancyv1alpha1.NamespaceClaimSpec{NamespaceName: "kube-x"}, wantErr: "must not be a system namespace"},
		{name: "namespaceName default", spec: tenancyv1alpha1.NamespaceClaimSpec{NamespaceName: "default"}, wantErr: "must not be a system namespace"},
		{name: "ttl too short", spec: tenancyv1alpha1.NamespaceClaimSpec{TTL: dur(30 * time.Second)}, wantErr: "ttl must be between 1m and 8760h"},
		{name: "ttl too long", spec: tenancyv1alpha1.NamespaceClaimSpec{TTL: dur(9000 * time.Hour)}, wantErr: "ttl must be between 1m and 8760h"},
		{name: "keep", spec: tenancyv1alpha1.NamespaceClaimSpec{Keep: dur(8 * time.Hour)}},
		{name: "keep too short", spec: tenancyv1alpha1.NamespaceClaimSpec{Keep: dur(59 * time.Second)}, wantErr: "keep must be between 1m and 8760h"},
		{name: "keep too long", spec: tenancyv1alpha1.NamespaceClaimSpec{Keep: dur(8761 * time.Hour)}, wantErr: "keep must be between 1m and 8760h"},
		{name: "reserved label", spec: tenancyv1alpha1.NamespaceClaimSpec{Labels: map[string]string{"tenancy.nsclaim.dev/managed-by": "me"}}, wantErr: "labels must not use the reserved prefixes"},
		{name: "psa label", spec: tenancyv1alpha1.NamespaceClaimSpec{Labels: map[string]string{"pod-security.kubernetes.io/enforce": "privileged"}}, wantErr: "labels must not use the reserved prefixes"},
		{name: "claim name too long", objName: strings.Repeat("c", 64), wantErr: "metadata.name must be a DNS-1123 label of at most 63 characters"},
		{name: "claim name with a dot", objName: "claim.x", wantErr: "metadata.name must be a DNS-1123 label of at most 63 characters"},
		{name: "claim name of 63 characters", objName: strings.Repeat("c", 63)},
		{name: "namespaceName kube-public", spec: tenancyv1alpha1.NamespaceClaimSpec{NamespaceName: "kube-public"}, wantErr: "must not be a system namespace"},
		{name: "namespaceName kubex is fine", spec: tenancyv1alpha1.NamespaceClaimSpec{NamespaceName: "kubex"}},
		{name: "kubernetes.io label", spec: tenancyv1alpha1.NamespaceClaimSpec{Labels: map[string]string{"kubernetes.io/metadata.name": "kube-system"}}, wantErr: "labels must not use the reserved prefixes"},
		{name: "credentialsSecretName a subdomain", spec: tenancyv1alpha1.NamespaceClaimSpec{CredentialsSecretName: "ci.token-1"}},
		{name: "credentialsSecretName not a subdomain", spec: tenancyv1alpha1.NamespaceClaimSpec{CredentialsSecretName: "CI_token"}, wantErr: "credentialsSecretName must be a DNS-1123 subdomain"},
		{name: "credentialsSecretName ends with a dot", spec: tenancyv1alpha1.NamespaceClaimSpec{CredentialsSecretName: "token."}, wantErr: "credentialsSecretName must be a DNS-1123 subdomain"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			n := tc.objName
			if n == "" {
				n = name("claim")
			}
			c := &tenancyv1alpha1.NamespaceClaim{ObjectMeta: metav1.ObjectMeta{Name: n, Namespace: "default"}, Spec: tc.spec}
			err := k8s.Create(ctx, c)
			check(t, err, tc.wantErr)
		})
	}
}

func TestClaimImmutability(t *testing.T) {
	requireEnvtest(t)
	ctx := context.Background()
	cases := []struct {
		name    string
		from    tenancyv1alpha1.NamespaceClaimSpec
		mutate  func(*tenancyv1alpha1.NamespaceClaimSpec)
		wantErr string
	}{
		{"className changed", tenancyv1alpha1.NamespaceClaimSpec{ClassName: "a"}, func(s *tenancyv1alpha1.NamespaceClaimSpec) { s.ClassName = "b" }, "className is immutable"},
		{"className added", tenancyv1alpha1.NamespaceClaimSpec{}, func(s *tenancyv1alpha1.NamespaceClaimSpec) { s.ClassName = "b" }, "className is immutable"},
		{"className removed", tenancyv1alpha1.NamespaceClaimSpec{ClassName: "a"}, func(s *tenancyv1alpha1.NamespaceClaimSpec) { s.ClassName = "" }, "className is immutable"},
		{"namespaceName changed", tenancyv1alpha1.NamespaceClaimSpec{NamespaceName: "a"}, func(s *tenancyv1alpha1.NamespaceClaimSpec) { s.NamespaceName = "b" }, "namespaceName is immutable"},
		{"ttl raised", tenancyv1alpha1.NamespaceClaimSpec{TTL: dur(time.Hour)}, func(s *tenancyv1alpha1.NamespaceClaimSpec) { s.TTL = dur(2 * time.Hour) }, ""},
		{"labels changed", tenancyv1alpha1.NamespaceClaimSpec{}, func(s *tenancyv1alpha1.NamespaceClaimSpec) { s.Labels = map[string]string{"a": "b"} }, ""},
		{"creator added", tenancyv1alpha1.NamespaceClaimSpec{}, func(s *tenancyv1alpha1.NamespaceClaimSpec) {
			s.Creator = &tenancyv1alpha1.ClaimCreator{Username: "mallory"}
		}, "creator is recorded by the API server"},
		{"creator changed", tenancyv1alpha1.NamespaceClaimSpec{Creator: &tenancyv1alpha1.ClaimCreator{Username: "alice"}}, func(s *tenancyv1alpha1.NamespaceClaimSpec) { s.Creator.Username = "mallory" }, "creator is recorded by the API server"},
		{"creator group added", tenancyv1alpha1.NamespaceClaimSpec{Creator: &tenancyv1alpha1.ClaimCreator{Username: "alice"}}, func(s *tenancyv1alpha1.NamespaceClaimSpec) { s.Creator.Groups = []string{"admins"} }, "creator is recorded by the API server"},
		{"creator removed", tenancyv1alpha1.NamespaceClaimSpec{Creator: &tenancyv1alpha1.ClaimCreator{Username: "alice"}}, func(s *tenancyv1alpha1.NamespaceClaimSpec) { s.Creator = nil }, "creator is recorded by the API server"},
		{"className kept", tenancyv1alpha1.NamespaceClaimSpec{ClassName: "a"}, func(s *tenancyv1alpha1.NamespaceClaimSpec) { s.Labels = map[string]string{"a": "b"} }, ""},
		{"namespaceName kept", tenancyv1alpha1.NamespaceClaimSpec{NamespaceName: "a"}, func(s *tenancyv1alpha1.NamespaceClaimSpec) { s.TTL = dur(time.Hour) }, ""},
		{"namespaceName added", tenancyv1alpha1.NamespaceClaimSpec{}, func(s *tenancyv1alpha1.NamespaceClaimSpec) { s.NamespaceName = "b" }, "namespaceName is immutable"},
		{"credentialsSecretName changed", tenancyv1alpha1.NamespaceClaimSpec{CredentialsSecretName: "a"}, func(s *tenancyv1alpha1.NamespaceClaimSpec) { s.CredentialsSecretName = "b" }, "credentialsSecretName is immutable"},
		{"credentialsSecretName added", tenancyv1alpha1.NamespaceClaimSpec{}, func(s *tenancyv1alpha1.NamespaceClaimSpec) { s.CredentialsSecretName = "b" }, "credentialsSecretName is immutable"},
		{"credentialsSecretName removed", tenancyv1alpha1.NamespaceClaimSpec{CredentialsSecretName: "a"}, func(s *tenancyv1alpha1.NamespaceClaimSpec) { s.CredentialsSecretName = "" }, "credentialsSecretName is immutable"},
		{"credentialsSecretName kept", tenancyv1alpha1.NamespaceClaimSpec{CredentialsSecretName: "a"}, func(s *tenancyv1alpha1.NamespaceClaimSpec) { s.TTL = dur(time.Hour) }, ""},
		{"creator kept", tenancyv1alpha1.NamespaceClaimSpec{Creator: &tenancyv1alpha1.ClaimCreator{Username: "alice", Groups: []string{"dev"}}}, func(s *tenancyv1alpha1.NamespaceClaimSpec) { s.TTL = dur(time.Hour) }, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := &tenancyv1alpha1.NamespaceClaim{ObjectMeta: metav1.ObjectMeta{Name: name("imm"), Namespace: "default"}, Spec: tc.from}
			if err := k8s.Create(ctx, c); err != nil {
				t.Fatal(err)
			}
			tc.mutate(&c.Spec)
			check(t, k8s.Update(ctx, c), tc.wantErr)
		})
	}
}

// TestStampedCreatorSurvivesAGoTypesUpdate: the stamp stores `uid: ""`, `groups: []` and `extra: {}`
// for an identity without them (an admin's client certificate); a client that reads such a claim into
// the Go types and updates it sends those fields absent. That is the same creator (found by the OLM
// upgrade test, which writes 0.3.0's claims back through these types); a real change still is not.
func TestStampedCreatorSurvivesAGoTypesUpdate(t *testing.T) {
	requireEnvtest(t)
	ctx := context.Background()
	cases := []struct {
		name    string
		creator map[string]any
		mutate  func(*tenancyv1alpha1.ClaimCreator)
		wantErr string
	}{
		{"empty uid, groups and extra sent absent", map[string]any{"username": "kubernetes-admin", "uid": "", "groups": []any{}, "extra": map[string]any{}}, func(*tenancyv1alpha1.ClaimCreator) {}, ""},
		{"empty uid set", map[string]any{"username": "kubernetes-admin", "uid": "", "groups": []any{}, "extra": map[string]any{}}, func(c *tenancyv1alpha1.ClaimCreator) { c.UID = "forged" }, "creator is recorded by the API server"},
		{"group added to an empty list", map[string]any{"username": "kubernetes-admin", "uid": "", "groups": []any{}, "extra": map[string]any{}}, func(c *tenancyv1alpha1.ClaimCreator) { c.Groups = []string{"system:masters"} }, "creator is recorded by the API server"},
		{"extra added to an empty map", map[string]any{"username": "kubernetes-admin", "uid": "", "groups": []any{}, "extra": map[string]any{}}, func(c *tenancyv1alpha1.ClaimCreator) { c.Extra = map[string][]string{"k": {"v"}} }, "creator is recorded by the API server"},
		{"groups removed", map[string]any{"username": "ci", "uid": "u1", "groups": []any{"dev"}, "extra": map[string]any{"k": []any{"v"}}}, func(c *tenancyv1alpha1.ClaimCreator) { c.Groups = nil }, "creator is recorded by the API server"},
		{"extra removed", map[string]any{"username": "ci", "uid": "u1", "groups": []any{"dev"}, "extra": map[string]any{"k": []any{"v"}}}, func(c *tenancyv1alpha1.ClaimCreator) { c.Extra = nil }, "creator is recorded by the API server"},
		{"uid removed", map[string]any{"username": "ci", "uid": "u1", "groups": []any{"dev"}}, func(c *tenancyv1alpha1.ClaimCreator) { c.UID = "" }, "creator is recorded by the API server"},
		{"full creator kept", map[string]any{"username": "ci", "uid": "u1", "groups": []any{"dev"}, "extra": map[string]any{"k": []any{"v"}}}, func(*tenancyv1alpha1.ClaimCreator) {}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			u := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": tenancyv1alpha1.GroupVersion.String(), "kind": "NamespaceClaim",
				"metadata": map[string]any{"name": name("stamped"), "namespace": "default"},
				"spec":     map[string]any{"creator": tc.creator},
			}}
			if err := k8s.Create(ctx, u); err != nil {
				t.Fatal(err)
			}
			c := &tenancyv1alpha1.NamespaceClaim{}
			if err := k8s.Get(ctx, client.ObjectKeyFromObject(u), c); err != nil {
				t.Fatal(err)
			}
			c.Labels = map[string]string{"written-back": "true"}
			tc.mutate(c.Spec.Creator)
			check(t, k8s.Update(ctx, c), tc.wantErr)
		})
	}
}

func TestClassValidation(t *testing.T) {
	requireEnvtest(t)
	ctx := context.Background()
	cases := []struct {
		name    string
		spec    tenancyv1alpha1.NamespaceClassSpec
		wantErr string
	}{
		{name: "empty spec is valid (defaults)"},
		{name: "pool of 100", spec: tenancyv1alpha1.NamespaceClassSpec{Pool: tenancyv1alpha1.PoolSpec{Size: 100}}},
		{name: "pool too large", spec: tenancyv1alpha1.NamespaceClassSpec{Pool: tenancyv1alpha1.PoolSpec{Size: 101}}, wantErr: "pool.size must be between 0 (no pool) and 100"},
		{name: "pool negative", spec: tenancyv1alpha1.NamespaceClassSpec{Pool: tenancyv1alpha1.PoolSpec{Size: -1}}, wantErr: "pool.size must be between 0 (no pool) and 100"},
		{name: "ttl order", spec: tenancyv1alpha1.NamespaceClassSpec{Lifetime: tenancyv1alpha1.LifetimeSpec{DefaultTTL: dur(48 * time.Hour), MaxTTL: dur(24 * time.Hour)}}, wantErr: "lifetime.defaultTTL must not exceed lifetime.maxTTL"},
		{name: "default ttl above defaulted max", spec: tenancyv1alpha1.NamespaceClassSpec{Lifetime: tenancyv1alpha1.LifetimeSpec{DefaultTTL: dur(200 * time.Hour)}}, wantErr: "lifetime.defaultTTL must not exceed lifetime.maxTTL"},
		{name: "token ttl too short", spec: tenancyv1alpha1.NamespaceClassSpec{Credentials: tenancyv1alpha1.CredentialsSpec{TokenTTL: dur(5 * time.Minute), RenewBefore: dur(time.Minute)}}, wantErr: "credentials.tokenTTL must be between 10m and 48h"},
		{name: "renewBefore not shorter", spec: tenancyv1alpha1.NamespaceClassSpec{Credentials: tenancyv1alpha1.CredentialsSpec{TokenTTL: dur(time.Hour), RenewBefore: dur(time.Hour)}}, wantErr: "credentials.renewBefore must be shorter than credentials.tokenTTL"},
		{name: "bad prefix", spec: tenancyv1alpha1.NamespaceClassSpec{Naming: tenancyv1alpha1.NamingSpec{Prefix: "CI_"}}, wantErr: "spec.naming.prefix"},
		{name: "kube- prefix", spec: tenancyv1alpha1.NamespaceClassSpec{Naming: tenancyv1alpha1.NamingSpec{Prefix: "kube-"}}, wantErr: "naming.prefix must not start with kube-"},
		{name: "kube-x prefix", spec: tenancyv1alpha1.NamespaceClassSpec{Naming: tenancyv1alpha1.NamingSpec{Prefix: "kube-ci-"}}, wantErr: "naming.prefix must not start with kube-"},
		{name: "prefix kube alone", spec: tenancyv1alpha1.NamespaceClassSpec{Naming: tenancyv1alpha1.NamingSpec{Prefix: "kube"}}, wantErr: "naming.prefix must not start with kube-"},
		{name: "prefix kubex is fine", spec: tenancyv1alpha1.NamespaceClassSpec{Naming: tenancyv1alpha1.NamingSpec{Prefix: "kubex-"}}},
		{name: "bad network policy", spec: tenancyv1alpha1.NamespaceClassSpec{NetworkPolicy: "AllowAll"}, wantErr: "spec.networkPolicy"},
		{name: "bad psa level", spec: tenancyv1alpha1.NamespaceClassSpec{PodSecurity: "strict"}, wantErr: "spec.podSecurity"},
		{name: "reserved namespace label", spec: tenancyv1alpha1.NamespaceClassSpec{NamespaceLabels: map[string]string{"tenancy.nsclaim.dev/claim-uid": "x"}}, wantErr: "namespaceLabels must not use the reserved prefixes"},
		{name: "requester mode needs allowedUsernames", spec: tenancyv1alpha1.NamespaceClassSpec{Credentials: tenancyv1alpha1.CredentialsSpec{Mode: tenancyv1alpha1.CredentialsModeRequester}}, wantErr: "credentials.requester.allowedUsernames is required when credentials.mode is Requester"},
		{name: "requester mode with patterns", spec: tenancyv1alpha1.NamespaceClassSpec{Credentials: tenancyv1alpha1.CredentialsSpec{Mode: tenancyv1alpha1.CredentialsModeRequester, Requester: &tenancyv1alpha1.RequesterCredentials{AllowedUsernames: []string{"github:repo:org/app:*"}}}}},
		{name: "unknown mode", spec: tenancyv1alpha1.NamespaceClassSpec{Credentials: tenancyv1alpha1.CredentialsSpec{Mode: "Password"}}, wantErr: "spec.credentials.mode"},
		{name: "system group bound", spec: tenancyv1alpha1.NamespaceClassSpec{Credentials: tenancyv1alpha1.CredentialsSpec{Mode: tenancyv1alpha1.CredentialsModeRequester, Requester: &tenancyv1alpha1.RequesterCredentials{AllowedUsernames: []string{"a"}, BindGroups: []string{"system:masters"}}}}, wantErr: "credentials.requester.bindGroups must not name system: groups"},
		{name: "negative limit", spec: tenancyv1alpha1.NamespaceClassSpec{Access: tenancyv1alpha1.AccessSpec{MaxClaimsPerNamespace: -1}}, wantErr: "spec.access.maxClaimsPerNamespace"},
		{name: "ttl order equal", spec: tenancyv1alpha1.NamespaceClassSpec{Lifetime: tenancyv1alpha1.LifetimeSpec{DefaultTTL: dur(24 * time.Hour), MaxTTL: dur(24 * time.Hour)}}},
		{name: "idle TTL and maxKeep", spec: tenancyv1alpha1.NamespaceClassSpec{Lifetime: tenancyv1alpha1.LifetimeSpec{IdleTTL: dur(time.Hour), MaxKeep: dur(8 * time.Hour)}}},
		{name: "idle TTL equal to maxKeep", spec: tenancyv1alpha1.NamespaceClassSpec{Lifetime: tenancyv1alpha1.LifetimeSpec{IdleTTL: dur(time.Hour), MaxKeep: dur(time.Hour)}}},
		{name: "idle TTL too short", spec: tenancyv1alpha1.NamespaceClassSpec{Lifetime: tenancyv1alpha1.LifetimeSpec{IdleTTL: dur(30 * time.Second)}}, wantErr: "lifetime.idleTTL must be between 1m and 8760h"},
		{name: "maxKeep too long", spec: tenancyv1alpha1.NamespaceClassSpec{Lifetime: tenancyv1alpha1.LifetimeSpec{IdleTTL: dur(time.Hour), MaxKeep: dur(9000 * time.Hour)}}, wantErr: "lifetime.maxKeep must be between 1m and 8760h"},
		{name: "maxKeep without idle TTL", spec: tenancyv1alpha1.NamespaceClassSpec{Lifetime: tenancyv1alpha1.LifetimeSpec{MaxKeep: dur(time.Hour)}}, wantErr: "lifetime.maxKeep bounds spec.keep, which replaces lifetime.idleTTL: set lifetime.idleTTL too"},
		{name: "idle TTL above maxKeep", spec: tenancyv1alpha1.NamespaceClassSpec{Lifetime: tenancyv1alpha1.LifetimeSpec{IdleTTL: dur(2 * time.Hour), MaxKeep: dur(time.Hour)}}, wantErr: "lifetime.idleTTL must not exceed lifetime.maxKeep"},
		{name: "sleepAfter below idle TTL", spec: tenancyv1alpha1.NamespaceClassSpec{Lifetime: tenancyv1alpha1.LifetimeSpec{IdleTTL: dur(time.Hour), SleepAfter: dur(15 * time.Minute)}}},
		{name: "sleepAfter without idle TTL", spec: tenancyv1alpha1.NamespaceClassSpec{Lifetime: tenancyv1alpha1.LifetimeSpec{SleepAfter: dur(30 * time.Minute)}}},
		{name: "sleepAfter of 1m", spec: tenancyv1alpha1.NamespaceClassSpec{Lifetime: tenancyv1alpha1.LifetimeSpec{SleepAfter: dur(time.Minute)}}},
		{name: "sleepAfter equal to idle TTL", spec: tenancyv1alpha1.NamespaceClassSpec{Lifetime: tenancyv1alpha1.LifetimeSpec{IdleTTL: dur(time.Hour), SleepAfter: dur(time.Hour)}}, wantErr: "lifetime.sleepAfter must be shorter than lifetime.idleTTL"},
		{name: "sleepAfter above idle TTL", spec: tenancyv1alpha1.NamespaceClassSpec{Lifetime: tenancyv1alpha1.LifetimeSpec{IdleTTL: dur(time.Hour), SleepAfter: dur(2 * time.Hour)}}, wantErr: "lifetime.sleepAfter must be shorter than lifetime.idleTTL: a namespace sleeps before it idles out"},
		{name: "sleepAfter too short", spec: tenancyv1alpha1.NamespaceClassSpec{Lifetime: tenancyv1alpha1.LifetimeSpec{SleepAfter: dur(30 * time.Second)}}, wantErr: "lifetime.sleepAfter must be between 1m and 8760h"},
		{name: "sleepAfter too long", spec: tenancyv1alpha1.NamespaceClassSpec{Lifetime: tenancyv1alpha1.LifetimeSpec{SleepAfter: dur(9000 * time.Hour)}}, wantErr: "lifetime.sleepAfter must be between 1m and 8760h"},
		{name: "renewBefore shorter", spec: tenancyv1alpha1.NamespaceClassSpec{Credentials: tenancyv1alpha1.CredentialsSpec{TokenTTL: dur(time.Hour), RenewBefore: dur(59 * time.Minute)}}},
		{name: "psa namespace label", spec: tenancyv1alpha1.NamespaceClassSpec{NamespaceLabels: map[string]string{"pod-security.kubernetes.io/enforce": "privileged"}}, wantErr: "namespaceLabels must not use the reserved prefixes"},
		{name: "namespace label", spec: tenancyv1alpha1.NamespaceClassSpec{NamespaceLabels: map[string]string{"team": "a", "example.com/tier": "ci"}}},
		{name: "reserved namespace annotation", spec: tenancyv1alpha1.NamespaceClassSpec{NamespaceAnnotations: map[string]string{"tenancy.nsclaim.dev/claim-name": "x"}}, wantErr: "namespaceAnnotations must not use the reserved prefix tenancy.nsclaim.dev/"},
		{name: "namespace annotation", spec: tenancyv1alpha1.NamespaceClassSpec{NamespaceAnnotations: map[string]string{"scheduler.alpha.kubernetes.io/node-selector": "pool=ci"}}},
		{name: "defaultTTL too short", spec: tenancyv1alpha1.NamespaceClassSpec{Lifetime: tenancyv1alpha1.LifetimeSpec{DefaultTTL: dur(30 * time.Second)}}, wantErr: "lifetime.defaultTTL must be at least 1m"},
		{name: "defaultTTL of 1m", spec: tenancyv1alpha1.NamespaceClassSpec{Lifetime: tenancyv1alpha1.LifetimeSpec{DefaultTTL: dur(time.Minute)}}},
		{name: "maxTTL too short", spec: tenancyv1alpha1.NamespaceClassSpec{Lifetime: tenancyv1alpha1.LifetimeSpec{DefaultTTL: dur(30 * time.Second), MaxTTL: dur(30 * time.Second)}}, wantErr: "lifetime.maxTTL must be at least 1m"},
		{name: "maxTTL of 1m", spec: tenancyv1alpha1.NamespaceClassSpec{Lifetime: tenancyv1alpha1.LifetimeSpec{DefaultTTL: dur(time.Minute), MaxTTL: dur(time.Minute)}}},
		{name: "token ttl too long", spec: tenancyv1alpha1.NamespaceClassSpec{Credentials: tenancyv1alpha1.CredentialsSpec{TokenTTL: dur(49 * time.Hour)}}, wantErr: "credentials.tokenTTL must be between 10m and 48h"},
		{name: "token ttl of 48h", spec: tenancyv1alpha1.NamespaceClassSpec{Credentials: tenancyv1alpha1.CredentialsSpec{TokenTTL: dur(48 * time.Hour)}}},
		{name: "renewBefore too short", spec: tenancyv1alpha1.NamespaceClassSpec{Credentials: tenancyv1alpha1.CredentialsSpec{RenewBefore: dur(30 * time.Second)}}, wantErr: "credentials.renewBefore must be at least 1m"},
		{name: "renewBefore of 1m", spec: tenancyv1alpha1.NamespaceClassSpec{Credentials: tenancyv1alpha1.CredentialsSpec{RenewBefore: dur(time.Minute)}}},
		{name: "non-system group bound", spec: tenancyv1alpha1.NamespaceClassSpec{Credentials: tenancyv1alpha1.CredentialsSpec{Mode: tenancyv1alpha1.CredentialsModeRequester, Requester: &tenancyv1alpha1.RequesterCredentials{AllowedUsernames: []string{"a"}, BindGroups: []string{"ci:org", "developers"}}}}},
		{name: "requester mode with empty allowedUsernames", spec: tenancyv1alpha1.NamespaceClassSpec{Credentials: tenancyv1alpha1.CredentialsSpec{Mode: tenancyv1alpha1.CredentialsModeRequester, Requester: &tenancyv1alpha1.RequesterCredentials{AllowedUsernames: []string{}}}}, wantErr: "credentials.requester.allowedUsernames"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := &tenancyv1alpha1.NamespaceClass{ObjectMeta: metav1.ObjectMeta{Name: name("class")}, Spec: tc.spec}
			check(t, k8s.Create(ctx, c), tc.wantErr)
		})
	}
}

func check(t *testing.T, err error, wantErr string) {
	t.Helper()
	switch {
	case wantErr == "" && err != nil:
		t.Fatalf("want success, got %v", err)
	case wantErr != "" && err == nil:
		t.Fatalf("want error containing %q, got success", wantErr)
	case wantErr != "" && !strings.Contains(err.Error(), wantErr):
		t.Fatalf("want error containing %q, got %v", wantErr, err)
	}
}

// TestClaimSleepStatus: the sleep record in the claim's status is bounded: known kinds only, at most 256
// objects, a name and UID each, no negative replica count; the phase Sleeping is accepted.
func TestClaimSleepStatus(t *testing.T) {
	requireEnvtest(t)
	ctx := context.Background()
	three, minus := int32(3), int32(-1)
	many := make([]tenancyv1alpha1.SleptWorkload, 257)
	for i := range many {
		many[i] = tenancyv1alpha1.SleptWorkload{Kind: tenancyv1alpha1.WorkloadCronJob, Name: fmt.Sprintf("c%d", i), UID: "u"}
	}
	cases := []struct {
		name    string
		sleep   *tenancyv1alpha1.SleepStatus
		wantErr string
	}{
		{name: "deployment and cronjob", sleep: &tenancyv1alpha1.SleepStatus{Since: metav1.Now(), Workloads: []tenancyv1alpha1.SleptWorkload{
			{Kind: tenancyv1alpha1.WorkloadDeployment, Name: "web", UID: "11111111-2222-3333-4444-555555555555", Replicas: &three},
			{Kind: tenancyv1alpha1.WorkloadCronJob, Name: "nightly", UID: "66666666-2222-3333-4444-555555555555"}}}},
		{name: "unknown kind", sleep: &tenancyv1alpha1.SleepStatus{Since: metav1.Now(), Workloads: []tenancyv1alpha1.SleptWorkload{{Kind: "DaemonSet", Name: "x", UID: "u"}}}, wantErr: "status.sleep.workloads[0].kind"},
		{name: "negative replicas", sleep: &tenancyv1alpha1.SleepStatus{Since: metav1.Now(), Workloads: []tenancyv1alpha1.SleptWorkload{{Kind: tenancyv1alpha1.WorkloadStatefulSet, Name: "db", UID: "u", Replicas: &minus}}}, wantErr: "status.sleep.workloads[0].replicas"},
		{name: "empty name", sleep: &tenancyv1alpha1.SleepStatus{Since: metav1.Now(), Workloads: []tenancyv1alpha1.SleptWorkload{{Kind: tenancyv1alpha1.WorkloadStatefulSet, Name: "", UID: "u"}}}, wantErr: "status.sleep.workloads[0].name"},
		{name: "too many", sleep: &tenancyv1alpha1.SleepStatus{Since: metav1.Now(), Workloads: many}, wantErr: "status.sleep.workloads"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := &tenancyv1alpha1.NamespaceClaim{ObjectMeta: metav1.ObjectMeta{Name: name("sleep"), Namespace: "default"}}
			if err := k8s.Create(ctx, c); err != nil {
				t.Fatal(err)
			}
			c.Status.Phase = tenancyv1alpha1.ClaimPhaseSleeping
			c.Status.Sleep = tc.sleep
			check(t, k8s.Status().Update(ctx, c), tc.wantErr)
		})
	}
}
