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

package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/tools/clientcmd"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
	"github.com/nsclaim/nsclaim-operator/internal/cli"
)

// tokenSourceFlags choose the exec credential plugin of a keyless kubeconfig.
type tokenSourceFlags struct {
	githubAudience, env string
}

func (t *tokenSourceFlags) addFlags(cmd *cobra.Command) {
	cmd.Flags().StringVar(&t.githubAudience, "exec-github-audience", "",
		"keyless: authenticate the kubeconfig with a fresh GitHub Actions ID token of this audience at every use (kubectl-nsclaim token)")
	cmd.Flags().StringVar(&t.env, "exec-token-env", "",
		"keyless: authenticate the kubeconfig with the ID token in this environment variable at every use (GitLab's id_tokens)")
}

func (t *tokenSourceFlags) validate() error {
	if t.githubAudience != "" && t.env != "" {
		return &cli.UsageError{Msg: "--exec-github-audience and --exec-token-env exclude each other"}
	}
	return nil
}

func (t *tokenSourceFlags) source() cli.TokenSource {
	return cli.TokenSource{GitHubAudience: t.githubAudience, Env: t.env}
}

type kubeconfigOptions struct {
	*options
	timeout time.Duration
	tokens  tokenSourceFlags
	output  string
}

func newKubeconfigCommand(o *options) *cobra.Command {
	k := &kubeconfigOptions{options: o}
	cmd := &cobra.Command{
		Use:   "kubeconfig [NAME]",
		Short: "Print the kubeconfig of a claim's namespace",
		Long: `Print the kubeconfig of a claim's namespace, waiting up to --timeout for the claim to be Ready.

Token mode: the kubeconfig of the claim's credentials Secret (the caller needs get on Secrets).
Keyless (credentials mode Requester): the caller's own cluster and credentials with the claim's
namespace as default; with --exec-github-audience or --exec-token-env its user runs
"kubectl-nsclaim token" at every use, so a CI's short-lived ID token never goes stale.`,
		Args: args(0, 1),
		RunE: func(cmd *cobra.Command, a []string) error {
			name, err := k.claimName(a)
			if err != nil {
				return err
			}
			return k.run(cmd.Context(), name)
		},
	}
	cmd.Flags().DurationVar(&k.timeout, "timeout", time.Minute, "how long to wait for the claim to be Ready")
	cmd.Flags().StringVarP(&k.output, "write", "w", "", "write to this file (mode 0600) instead of stdout")
	k.tokens.addFlags(cmd)
	return cmd
}

func (k *kubeconfigOptions) run(ctx context.Context, name string) error {
	if err := k.tokens.validate(); err != nil {
		return err
	}
	s, err := k.session()
	if err != nil {
		return err
	}
	if _, err := s.mustGet(ctx, name); err != nil {
		return err
	}
	claim, err := s.waitReady(ctx, name, k.timeout)
	if err != nil {
		return err
	}
	b, err := kubeconfigOf(ctx, k.options, s, claim, k.tokens.source())
	if err != nil {
		return err
	}
	if k.output != "" {
		return writePrivate(k.output, b)
	}
	_, err = k.out.Write(b)
	return err
}

// kubeconfigOf returns the kubeconfig of a Ready claim: its credentials Secret's in token mode, else
// (keyless) the caller's own context pointed at the claim's namespace.
func kubeconfigOf(ctx context.Context, o *options, s *session, claim *tenancyv1alpha1.NamespaceClaim, src cli.TokenSource) ([]byte, error) {
	if name := claim.Status.CredentialsSecretName; name != "" {
		sec, err := s.kube.CoreV1().Secrets(s.ns).Get(ctx, name, metaGet)
		if err != nil {
			return nil, fmt.Errorf("reading the credentials Secret %s/%s: %w", s.ns, name, err)
		}
		if err := cli.SecretOfClaim(sec.Labels, claim); err != nil {
			return nil, err
		}
		kc := sec.Data["kubeconfig"]
		if len(kc) == 0 {
			return nil, &cli.NotFoundError{What: fmt.Sprintf("kubeconfig in Secret %s/%s", s.ns, name)}
		}
		return kc, nil
	}
	rc, err := o.flags.ToRESTConfig()
	if err != nil {
		return nil, fmt.Errorf("reading the kubeconfig: %w", err)
	}
	cfg, err := cli.KeylessKubeconfig(cli.FromRESTConfig(rc), claim.Status.Namespace, src)
	if err != nil {
		return nil, err
	}
	return clientcmd.Write(*cfg)
}
