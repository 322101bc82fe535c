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
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/nsclaim/nsclaim-operator/internal/cli"
)

type tokenOptions struct {
	*options
	githubAudience, env string
}

func newTokenCommand(o *options) *cobra.Command {
	t := &tokenOptions{options: o}
	cmd := &cobra.Command{
		Use:   "token",
		Short: "Print an ExecCredential with the CI's ID token (a kubeconfig's exec plugin runs it)",
		Long: `Print a client.authentication.k8s.io/v1 ExecCredential holding the CI job's OIDC ID token, fetched
fresh: from GitHub Actions' token endpoint (ACTIONS_ID_TOKEN_REQUEST_URL and
ACTIONS_ID_TOKEN_REQUEST_TOKEN, set for jobs with permissions id-token: write) for --github-audience, or
from the environment variable --from-env (GitLab's id_tokens). Kubeconfigs written by "claim" and
"kubeconfig" with --exec-github-audience or --exec-token-env run it; it is not meant to be run by hand.`,
		Args: args(0, 0),
		RunE: func(cmd *cobra.Command, _ []string) error { return t.run(cmd.Context()) },
	}
	cmd.Flags().StringVar(&t.githubAudience, "github-audience", "", "ask GitHub Actions for an ID token of this audience")
	cmd.Flags().StringVar(&t.env, "from-env", "", "read the ID token from this environment variable")
	return cmd
}

func (t *tokenOptions) run(ctx context.Context) error {
	var (
		token string
		err   error
	)
	switch {
	case t.githubAudience != "" && t.env == "":
		token, err = githubIDToken(ctx, os.Getenv("ACTIONS_ID_TOKEN_REQUEST_URL"), os.Getenv("ACTIONS_ID_TOKEN_REQUEST_TOKEN"), t.githubAudience)
	case t.env != "" && t.githubAudience == "":
		if token = os.Getenv(t.env); token == "" {
			err = &cli.NotFoundError{What: "an ID token in environment variable " + t.env}
		}
	default:
		err = &cli.UsageError{Msg: "set one of --github-audience and --from-env"}
	}
	if err != nil {
		return err
	}
	exp, err := cli.JWTExpiry(token)
	if err != nil {
		exp = time.Time{} // not a JWT: client-go uses it until the API server rejects it
	}
	b, err := cli.ExecCredential(token, exp)
	if err != nil {
		return err
	}
	_, err = t.out.Write(b)
	return err
}

// githubIDToken asks GitHub Actions' OIDC endpoint for an ID token of audience.
func githubIDToken(ctx context.Context, requestURL, requestToken, audience string) (string, error) {
	if requestURL == "" || requestToken == "" {
		return "", &cli.NotFoundError{What: "ACTIONS_ID_TOKEN_REQUEST_URL and ACTIONS_ID_TOKEN_REQUEST_TOKEN (give the job permissions: id-token: write)"}
	}
	sep := "?"
	if strings.Contains(requestURL, "?") {
		sep = "&"
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, requestURL+sep+"audience="+url.QueryEscape(audience), nil)
	if err != nil {
		return "", err
	}
	req.Header.Set("Authorization", "bearer "+requestToken)
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	resp, err := http.DefaultClient.Do(req.WithContext(ctx))
	if err != nil {
		return "", fmt.Errorf("asking GitHub Actions for an ID token: %w", err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return "", fmt.Errorf("reading GitHub Actions' ID token: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("asking GitHub Actions for an ID token: HTTP %d", resp.StatusCode)
	}
	var v struct {
		Value string `json:"value"`
	}
	if err := json.Unmarshal(body, &v); err != nil || v.Value == "" {
		return "", fmt.Errorf("GitHub Actions answered no ID token")
	}
	return v.Value, nil
}
