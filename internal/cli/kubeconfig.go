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

// KeylessKubeconfig is the kubeconfig of a keyless claim (credentials mode Requester): the caller's
// current context (from raw, after --context; its cluster and user, certificates embedded) with the
// claim's namespace as default namespace. With a token source, the user is replaced by ExecAuth, so the
// kubeconfig keeps working after the ID token it was made with expires.
func KeylessKubeconfig(raw clientcmdapi.Config, contextName, namespace string, src TokenSource) (*clientcmdapi.Config, error) {
	if contextName != "" {
		raw.CurrentContext = contextName
	}
	cfg := raw.DeepCopy()
	if err := clientcmdapi.MinifyConfig(cfg); err != nil {
		return nil, fmt.Errorf("reading the current context: %w", err)
	}
	if err := clientcmdapi.FlattenConfig(cfg); err != nil {
		return nil, fmt.Errorf("embedding the kubeconfig's files: %w", err)
	}
	kctx := cfg.Contexts[cfg.CurrentContext]
	kctx.Namespace = namespace
	if !src.IsZero() {
		cfg.AuthInfos = map[string]*clientcmdapi.AuthInfo{kctx.AuthInfo: ExecAuth(src)}
	}
	return cfg, nil
}

// PipelineKubeconfig is the kubeconfig of a pipeline identity: the cluster of the caller's current
// context (server, CA) with a bearer token, namespace as the default namespace.
func PipelineKubeconfig(raw clientcmdapi.Config, contextName, namespace, user, token string) (*clientcmdapi.Config, error) {
	if contextName != "" {
		raw.CurrentContext = contextName
	}
	cfg := raw.DeepCopy()
	if err := clientcmdapi.MinifyConfig(cfg); err != nil {
		return nil, fmt.Errorf("reading the current context: %w", err)
	}
	if err := clientcmdapi.FlattenConfig(cfg); err != nil {
		return nil, fmt.Errorf("embedding the kubeconfig's files: %w", err)
	}
	clusterName := cfg.Contexts[cfg.CurrentContext].Cluster
	out := clientcmdapi.NewConfig()
	out.Clusters[clusterName] = cfg.Clusters[clusterName]
	out.AuthInfos[user] = &clientcmdapi.AuthInfo{Token: token}
	out.Contexts[user] = &clientcmdapi.Context{Cluster: clusterName, AuthInfo: user, Namespace: namespace}
	out.CurrentContext = user
	return out, nil
}
