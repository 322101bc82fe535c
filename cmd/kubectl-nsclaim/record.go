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
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"k8s.io/client-go/rest"

	"github.com/nsclaim/nsclaim-operator/internal/cli"
)

// The claim record: "claim" remembers the claim it made (its name and UID) in a file of the user's
// cache directory keyed by the working directory, the API server, the caller's credentials and the
// requester namespace, so
// "release", "kubeconfig" and the others find it without NAME wherever the job runs (a laptop, a CI
// the plugin does not know), and a later "claim" of the name knows the claim is its own.

// recordPath is the claim record's file for this command's working directory, server and namespace.
func (o *options) recordPath() (string, error) {
	base := os.Getenv(cli.StateDirEnv)
	if base == "" {
		cache, err := os.UserCacheDir()
		if err != nil {
			return "", fmt.Errorf("finding the directory of claim records (set %s): %w", cli.StateDirEnv, err)
		}
		base = filepath.Join(cache, "nsclaim", "claims")
	}
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	ns, _, err := o.flags.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return "", fmt.Errorf("reading the namespace: %w", err)
	}
	cfg, err := o.flags.ToRESTConfig()
	if err != nil {
		return "", fmt.Errorf("reading the kubeconfig: %w", err)
	}
	return cli.ClaimStatePath(base, dir, cfg.Host+"\x00"+credentialsKey(cfg), ns), nil
}

// credentialsKey tells apart the identities a kubeconfig may carry, so that two pipelines working from
// one directory never share a record: their tokens, token files, exec plugins or certificates differ.
func credentialsKey(cfg *rest.Config) string {
	key := strings.Join([]string{cfg.BearerToken, cfg.BearerTokenFile, cfg.Username, string(cfg.CertData), cfg.CertFile}, "\x00")
	if cfg.ExecProvider != nil {
		key += "\x00" + cfg.ExecProvider.Command + "\x00" + strings.Join(cfg.ExecProvider.Args, "\x00")
	}
	return key
}

// recall returns the claim record, or a zero record if there is none.
func (o *options) recall() (cli.ClaimRecord, error) {
	p, err := o.recordPath()
	if err != nil {
		return cli.ClaimRecord{}, err
	}
	b, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return cli.ClaimRecord{}, nil
	}
	if err != nil {
		return cli.ClaimRecord{}, err
	}
	return cli.ParseClaimRecord(string(b))
}

// remember writes the claim record (mode 0600 in a 0700 directory).
func (o *options) remember(rec cli.ClaimRecord) error {
	p, err := o.recordPath()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return err
	}
	return writePrivate(p, []byte(rec.String()))
}

// forget removes the claim record if it is of the claim name.
func (o *options) forget(name string) {
	if rec, err := o.recall(); err == nil && rec.Name == name {
		if p, err := o.recordPath(); err == nil {
			_ = os.Remove(p)
		}
	}
}

// claimName is the NAME argument (a DNS-1123 label), else the claim this directory's "claim" made (its
// record), else inside a known CI job the name "claim" derives for the job.
func (o *options) claimName(a []string) (string, error) {
	if len(a) == 1 {
		return a[0], cli.ValidateClaimName(a[0])
	}
	if rec, err := o.recall(); err == nil && rec.Name != "" {
		return rec.Name, nil
	}
	if name, ok := cli.DefaultClaimName(os.Getenv, ""); ok {
		return name, nil
	}
	return "", &cli.UsageError{Msg: "NAME is required: no claim was made from this directory (kubectl nsclaim claim records it), and this is not a CI job whose claim name is derived"}
}
