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

package cli

import (
	"encoding/base64"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	clientauthv1 "k8s.io/client-go/pkg/apis/clientauthentication/v1"
	"k8s.io/client-go/rest"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

func rawConfig() clientcmdapi.Config {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["c"] = &clientcmdapi.Cluster{Server: "https://k:6443", CertificateAuthorityData: []byte("CA")}
	cfg.Clusters["other"] = &clientcmdapi.Cluster{Server: "https://other"}
	cfg.AuthInfos["u"] = &clientcmdapi.AuthInfo{Token: "pipeline-token"}
	cfg.AuthInfos["admin"] = &clientcmdapi.AuthInfo{Token: "admin-token"}
	cfg.Contexts["ci"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u", Namespace: "pipelines"}
	cfg.Contexts["adm"] = &clientcmdapi.Context{Cluster: "other", AuthInfo: "admin"}
	cfg.CurrentContext = "adm"
	return *cfg
}

func TestKeylessKubeconfig(t *testing.T) {
	for _, tc := range []struct {
		name     string
		src      TokenSource
		wantAuth *clientcmdapi.AuthInfo
	}{
		{"the caller's credentials", TokenSource{}, &clientcmdapi.AuthInfo{Token: "pipeline-token"}},
		{"GitHub's ID token, fetched fresh", TokenSource{GitHubAudience: "https://k"}, ExecAuth(TokenSource{GitHubAudience: "https://k"})},
		{"an ID token in the environment", TokenSource{Env: "KUBE_ID_TOKEN"}, ExecAuth(TokenSource{Env: "KUBE_ID_TOKEN"})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			raw := rawConfig()
			raw.CurrentContext = "ci"
			got, err := KeylessKubeconfig(raw, "app-pr-1", tc.src)
			if err != nil {
				t.Fatal(err)
			}
			if len(got.Contexts) != 1 || len(got.Clusters) != 1 || len(got.AuthInfos) != 1 {
				t.Fatalf("not minified to the chosen context: %+v", got)
			}
			kctx := got.Contexts[got.CurrentContext]
			if kctx.Namespace != "app-pr-1" || got.Clusters[kctx.Cluster].Server != "https://k:6443" {
				t.Errorf("context %+v, cluster %+v", kctx, got.Clusters[kctx.Cluster])
			}
			if a := got.AuthInfos[kctx.AuthInfo]; a.Token != tc.wantAuth.Token || !reflect.DeepEqual(a.Exec, tc.wantAuth.Exec) {
				t.Errorf("user %+v, want %+v", a, tc.wantAuth)
			}
			if got.CurrentContext != "app-pr-1" {
				t.Errorf("context %q", got.CurrentContext)
			}
			if raw.Contexts["ci"].Namespace != "pipelines" {
				t.Error("the caller's config was changed")
			}
		})
	}
}

func TestExecAuthArgs(t *testing.T) {
	if got := ExecAuth(TokenSource{GitHubAudience: "aud"}).Exec.Args; !reflect.DeepEqual(got, []string{"token", "--github-audience", "aud"}) {
		t.Errorf("github args %v", got)
	}
	if got := ExecAuth(TokenSource{Env: "V"}).Exec.Args; !reflect.DeepEqual(got, []string{"token", "--from-env", "V"}) {
		t.Errorf("env args %v", got)
	}
}

func TestPipelineKubeconfig(t *testing.T) {
	got, err := PipelineKubeconfig(rawConfig(), "pipelines", "pipeline", "sa-token")
	if err != nil {
		t.Fatal(err)
	}
	kctx := got.Contexts[got.CurrentContext]
	if kctx.Namespace != "pipelines" || got.AuthInfos[kctx.AuthInfo].Token != "sa-token" || got.Clusters[kctx.Cluster].Server != "https://other" {
		t.Errorf("got %+v", got)
	}
	if _, leaked := got.AuthInfos["admin"]; leaked || len(got.AuthInfos) != 1 {
		t.Errorf("the caller's credentials leaked into the pipeline's kubeconfig: %+v", got.AuthInfos)
	}
}

func jwt(payload string) string {
	enc := base64.RawURLEncoding.EncodeToString
	return enc([]byte(`{"alg":"RS256"}`)) + "." + enc([]byte(payload)) + ".sig"
}

func TestJWTExpiry(t *testing.T) {
	for _, tc := range []struct {
		name    string
		token   string
		want    time.Time
		wantErr bool
	}{
		{"exp", jwt(`{"sub":"x","exp":1767261600}`), time.Unix(1767261600, 0), false},
		{"no exp", jwt(`{"sub":"x"}`), time.Time{}, false},
		{"not a JWT", "opaque", time.Time{}, true},
		{"bad payload", "a.!!!.c", time.Time{}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := JWTExpiry(tc.token)
			if (err != nil) != tc.wantErr || !got.Equal(tc.want) {
				t.Errorf("JWTExpiry() = %v, %v; want %v, error %v", got, err, tc.want, tc.wantErr)
			}
		})
	}
}

func TestExecCredential(t *testing.T) {
	exp := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	out, err := ExecCredential("tok", exp)
	if err != nil {
		t.Fatal(err)
	}
	var cred clientauthv1.ExecCredential
	if err := json.Unmarshal(out, &cred); err != nil {
		t.Fatal(err)
	}
	if cred.Kind != "ExecCredential" || cred.APIVersion != "client.authentication.k8s.io/v1" || cred.Status.Token != "tok" ||
		!cred.Status.ExpirationTimestamp.Time.Equal(exp.Add(-time.Minute)) {
		t.Errorf("got %s", out)
	}
}

// kubectl's --server and --token without a kubeconfig make a context, cluster and user of empty names.
func TestKeylessKubeconfigFromFlagsOnly(t *testing.T) {
	merged := *clientcmdapi.NewConfig()
	merged.Clusters[""] = &clientcmdapi.Cluster{Server: "https://k", CertificateAuthorityData: []byte("CA")}
	merged.AuthInfos[""] = &clientcmdapi.AuthInfo{Token: "id-token"}
	merged.Contexts[""] = &clientcmdapi.Context{}
	got, err := KeylessKubeconfig(merged, "app-1", TokenSource{Env: "NSCLAIM_ID_TOKEN"})
	if err != nil {
		t.Fatal(err)
	}
	kctx := got.Contexts[got.CurrentContext]
	if got.Clusters[kctx.Cluster].Server != "https://k" || got.AuthInfos[kctx.AuthInfo].Exec == nil || got.AuthInfos[kctx.AuthInfo].Token != "" {
		t.Errorf("got %+v", got)
	}
	if _, err := KeylessKubeconfig(*clientcmdapi.NewConfig(), "x", TokenSource{}); err == nil {
		t.Error("an empty kubeconfig gave no error")
	}
}

func TestFromRESTConfig(t *testing.T) {
	cfg := &rest.Config{Host: "https://k", TLSClientConfig: rest.TLSClientConfig{CAData: []byte("CA")}, BearerToken: "t",
		Impersonate: rest.ImpersonationConfig{UserName: "bob"}}
	got, err := KeylessKubeconfig(FromRESTConfig(cfg), "ns-1", TokenSource{})
	if err != nil {
		t.Fatal(err)
	}
	kctx := got.Contexts[got.CurrentContext]
	c, u := got.Clusters[kctx.Cluster], got.AuthInfos[kctx.AuthInfo]
	if c.Server != "https://k" || string(c.CertificateAuthorityData) != "CA" || u.Token != "t" || u.Impersonate != "bob" || kctx.Namespace != "ns-1" {
		t.Errorf("got cluster %+v, user %+v, context %+v", c, u, kctx)
	}
}
