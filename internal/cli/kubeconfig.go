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
	"fmt"

	"k8s.io/client-go/rest"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// PluginCommand is the plugin's executable name, which a kubeconfig's exec credential plugin runs.
const PluginCommand = "kubectl-nsclaim"

// TokenSource says where "kubectl-nsclaim token" finds a CI's ID token.
type TokenSource struct {
	// GitHubAudience, when set, asks GitHub Actions' OIDC endpoint for a token of this audience
	// (ACTIONS_ID_TOKEN_REQUEST_URL and ACTIONS_ID_TOKEN_REQUEST_TOKEN).
	GitHubAudience string
	// Env, when set, names the environment variable holding the token (GitLab's id_tokens).
	Env string
}

// Args returns the arguments of "kubectl-nsclaim token" for this source.
func (s TokenSource) Args() []string {
	if s.GitHubAudience != "" {
		return []string{"token", "--github-audience", s.GitHubAudience}
	}
	return []string{"token", "--from-env", s.Env}
}

// IsZero reports whether no source is set.
func (s TokenSource) IsZero() bool { return s.GitHubAudience == "" && s.Env == "" }

// ExecAuth is a kubeconfig user that runs "kubectl-nsclaim token" for every connection, so a CI's
// short-lived ID token is fetched fresh instead of expiring mid-job.
func ExecAuth(src TokenSource) *clientcmdapi.AuthInfo {
	return &clientcmdapi.AuthInfo{Exec: &clientcmdapi.ExecConfig{
		APIVersion:      "client.authentication.k8s.io/v1",
		Command:         PluginCommand,
		Args:            src.Args(),
		InteractiveMode: clientcmdapi.NeverExecInteractiveMode,
	}}
}

// current returns the cluster and user of cfg's current context (a kubeconfig merged with kubectl's
// flags, where --server and --token alone make a context of empty name), with files embedded.
func current(cfg clientcmdapi.Config) (*clientcmdapi.Cluster, *clientcmdapi.AuthInfo, error) {
	kctx, ok := cfg.Contexts[cfg.CurrentContext]
	if !ok {
		return nil, nil, fmt.Errorf("the kubeconfig has no context %q", cfg.CurrentContext)
	}
	cluster, ok := cfg.Clusters[kctx.Cluster]
	if !ok || cluster.Server == "" {
		return nil, nil, fmt.Errorf("the kubeconfig's context %q names no cluster with a server", cfg.CurrentContext)
	}
	out := clientcmdapi.NewConfig()
	out.Clusters["c"] = cluster.DeepCopy()
	out.AuthInfos["u"] = clientcmdapi.NewAuthInfo()
	if a, ok := cfg.AuthInfos[kctx.AuthInfo]; ok {
		out.AuthInfos["u"] = a.DeepCopy()
	}
	if err := clientcmdapi.FlattenConfig(out); err != nil {
		return nil, nil, fmt.Errorf("embedding the kubeconfig's files: %w", err)
	}
	return out.Clusters["c"], out.AuthInfos["u"], nil
}

// single is a kubeconfig of one context, name, with cluster, user and default namespace.
func single(name string, cluster *clientcmdapi.Cluster, user *clientcmdapi.AuthInfo, namespace string) *clientcmdapi.Config {
	out := clientcmdapi.NewConfig()
	out.Clusters[name] = cluster
	out.AuthInfos[name] = user
	out.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name, Namespace: namespace}
	out.CurrentContext = name
	return out
}

// KeylessKubeconfig is the kubeconfig of a keyless claim (credentials mode Requester): the cluster and
// user of the caller's current context (merged, its certificates embedded) with the claim's namespace
// as default namespace, in one context named after the namespace. With a token source, the user is
// replaced by ExecAuth, so the kubeconfig keeps working after the ID token it was made with expires.
func KeylessKubeconfig(merged clientcmdapi.Config, namespace string, src TokenSource) (*clientcmdapi.Config, error) {
	cluster, user, err := current(merged)
	if err != nil {
		return nil, err
	}
	if !src.IsZero() {
		user = ExecAuth(src)
	}
	return single(namespace, cluster, user, namespace), nil
}

// PipelineKubeconfig is the kubeconfig of a pipeline identity: the cluster of the caller's current
// context (server, CA) with a bearer token, namespace as the default namespace, in one context named
// user. Nothing of the caller's own credentials is copied.
func PipelineKubeconfig(merged clientcmdapi.Config, namespace, user, token string) (*clientcmdapi.Config, error) {
	cluster, _, err := current(merged)
	if err != nil {
		return nil, err
	}
	return single(user, cluster, &clientcmdapi.AuthInfo{Token: token}, namespace), nil
}

// FromRESTConfig is a kubeconfig of one context (of empty name) that connects as cfg does: the
// kubeconfig and every kubectl flag (--server, --token, --context, --as, ...) as client-go resolved them.
func FromRESTConfig(cfg *rest.Config) clientcmdapi.Config {
	out := clientcmdapi.NewConfig()
	out.Clusters[""] = &clientcmdapi.Cluster{
		Server: cfg.Host, CertificateAuthority: cfg.CAFile, CertificateAuthorityData: cfg.CAData,
		InsecureSkipTLSVerify: cfg.Insecure, TLSServerName: cfg.ServerName,
	}
	out.AuthInfos[""] = &clientcmdapi.AuthInfo{
		Token: cfg.BearerToken, TokenFile: cfg.BearerTokenFile,
		ClientCertificate: cfg.CertFile, ClientCertificateData: cfg.CertData, ClientKey: cfg.KeyFile, ClientKeyData: cfg.KeyData,
		Username: cfg.Username, Password: cfg.Password, Exec: cfg.ExecProvider, AuthProvider: cfg.AuthProvider,
		Impersonate: cfg.Impersonate.UserName, ImpersonateUID: cfg.Impersonate.UID, ImpersonateGroups: cfg.Impersonate.Groups,
		ImpersonateUserExtra: cfg.Impersonate.Extra,
	}
	out.Contexts[""] = &clientcmdapi.Context{}
	return *out
}
