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
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"
	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
	"github.com/nsclaim/nsclaim-operator/internal/cli"
)

// Values of -o.
const (
	outputName       = "name"
	outputKubeconfig = "kubeconfig"
	outputJSON       = "json"
	outputNone       = "none"
)

type claimOptions struct {
	*options
	class, namespaceName, ifExists, output, writeKubeconfig, nameFile string
	ttl, keep, timeout                                                time.Duration
	wait                                                              bool
	tokens                                                            tokenSourceFlags
}

func newClaimCommand(o *options) *cobra.Command {
	c := &claimOptions{options: o}
	cmd := &cobra.Command{
		Use:   "claim [NAME]",
		Short: "Claim a namespace and wait until it is Ready",
		Long: `Claim a namespace: create a NamespaceClaim in the current namespace (-n), wait for it with a watch
until it is Ready, and print what -o asks for: the namespace's name (-o name, the default), a kubeconfig
(-o kubeconfig) or the claim (-o json). A refused claim fails at once (exit 3) with its reason, message
and who must act.

Without NAME the claim is named after the CI job instance (GitHub Actions: gh-[pr-N-]RUN-ATTEMPT-JOB-LEG;
GitLab CI: gl-JOB_ID; Jenkins, Buildkite, Azure Pipelines, CircleCI: their job ids; else nsc-RANDOM), so
re-runs, matrix legs and parallel jobs never share or delete each other's namespace. The claim made is
recorded (its name and UID, in the user's cache directory, per working directory), so "release",
"kubeconfig" and the others find it without NAME anywhere; --claim-name-file also writes its name.

An existing claim of the name is waited for only if it is this caller's own (the API server stamped the
caller as its spec.creator, or this machine's record holds its UID); another's is refused with exit 7
unless --if-exists=use is given. --if-exists=recreate deletes and claims again, --if-exists=fail refuses
any (exit 7). An expired claim of one's own is claimed again. --ttl applies to a new claim; on an
existing one of another TTL it is a usage error (exit 2): extend it with "kubectl nsclaim extend".`,
		Args: args(0, 1),
		RunE: func(cmd *cobra.Command, a []string) error {
			name := ""
			if len(a) == 1 {
				name = a[0]
			}
			return c.run(cmd.Context(), name)
		},
	}
	f := cmd.Flags()
	f.StringVar(&c.class, "class", os.Getenv("NSCLAIM_CLASS"), "NamespaceClass to claim from (default: $NSCLAIM_CLASS, else the cluster's default class)")
	f.DurationVar(&c.ttl, "ttl", 0, "how long the namespace lives, from now (default: the class's defaultTTL; at most its maxTTL)")
	f.DurationVar(&c.keep, "keep", 0, "how long the namespace may stay idle before it is deleted (default: the class's idleTTL; at most its maxKeep)")
	f.StringVar(&c.namespaceName, "namespace-name", "", "ask for this namespace name (after the class's prefix); unset derives a name that never collides")
	f.BoolVar(&c.wait, "wait", true, "wait until the claim is Ready")
	f.DurationVar(&c.timeout, "timeout", 3*time.Minute, "how long to wait")
	f.StringVar(&c.ifExists, "if-exists", cli.IfExistsOwn, "when a claim of the name exists: unset uses it only if it is this caller's own; use (any), recreate or fail")
	f.StringVar(&c.nameFile, "claim-name-file", "", "also write the claim's name to this file (for a later release NAME)")
	f.StringVarP(&c.output, "output", "o", outputName, "what to print on stdout: name (the namespace), kubeconfig, json or none")
	f.StringVar(&c.writeKubeconfig, "write-kubeconfig", "", "also write the namespace's kubeconfig to this file (mode 0600)")
	c.tokens.addFlags(cmd)
	return cmd
}

func (c *claimOptions) validate() error {
	switch {
	case !cli.ValidIfExists(c.ifExists):
		return &cli.UsageError{Msg: fmt.Sprintf("--if-exists must be unset, use, recreate or fail, not %q", c.ifExists)}
	case c.output != outputName && c.output != outputKubeconfig && c.output != outputJSON && c.output != outputNone:
		return &cli.UsageError{Msg: fmt.Sprintf("-o must be name, kubeconfig, json or none, not %q", c.output)}
	case c.ttl != 0 && (c.ttl < time.Minute || c.ttl > cli.MaxTTL):
		return &cli.UsageError{Msg: fmt.Sprintf("--ttl must be between 1m and %s", cli.MaxTTL)}
	case c.keep != 0 && (c.keep < time.Minute || c.keep > cli.MaxTTL):
		return &cli.UsageError{Msg: fmt.Sprintf("--keep must be between 1m and %s", cli.MaxTTL)}
	case !c.wait && (c.output == outputName || c.output == outputKubeconfig || c.writeKubeconfig != ""):
		return &cli.UsageError{Msg: "--wait=false prints no namespace or kubeconfig (neither exists yet): use -o json or -o none"}
	}
	return c.tokens.validate()
}

func randomSuffix() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func (c *claimOptions) run(ctx context.Context, name string) error {
	if err := c.validate(); err != nil {
		return err
	}
	if name == "" {
		name, _ = cli.DefaultClaimName(os.Getenv, randomSuffix())
	}
	s, err := c.session()
	if err != nil {
		return err
	}
	start := time.Now()
	claim, err := c.ensure(ctx, s, name)
	if err != nil {
		return err
	}
	if err := c.record(claim); err != nil {
		return err
	}
	if c.wait {
		if claim, err = s.waitReady(ctx, name, c.timeout); err != nil {
			return err
		}
		c.logf("namespaceclaim %s/%s is Ready: namespace %s, expires %s (%s)", s.ns, name, claim.Status.Namespace,
			cli.Expiry(claim), time.Since(start).Round(10*time.Millisecond))
	}
	return c.print(ctx, s, claim)
}

// ensure makes sure a claim of the name exists that "claim" may wait for, creating, or deleting and
// re-creating, as DecideExisting says. A claim created meanwhile by a parallel run is decided on again.
func (c *claimOptions) ensure(ctx context.Context, s *session, name string) (*tenancyv1alpha1.NamespaceClaim, error) {
	for attempt := 0; ; attempt++ {
		existing, err := s.get(ctx, name)
		if err != nil {
			return nil, err
		}
		owned, err := c.owned(ctx, s, existing)
		if err != nil {
			return nil, err
		}
		action, err := cli.DecideExisting(existing, c.ifExists, c.class, owned)
		if err != nil {
			return nil, err
		}
		switch action {
		case cli.ActionUse:
			if err := cli.TTLOnReuse(existing, c.ttl); err != nil {
				return nil, err
			}
			c.logf("namespaceclaim %s/%s exists (%s); using it", s.ns, name, cli.Classify(existing).Phase)
			return existing, nil
		case cli.ActionRecreate, cli.ActionWaitGone:
			if action == cli.ActionRecreate {
				c.logf("namespaceclaim %s/%s exists (%s); deleting it to claim again", s.ns, name, cli.Classify(existing).Phase)
				if err := s.delete(ctx, name, existing.UID); err != nil {
					return nil, err
				}
			} else {
				c.logf("namespaceclaim %s/%s is being deleted; waiting until it is gone", s.ns, name)
			}
			if err := s.waitGone(ctx, name, c.timeout); err != nil {
				return nil, err
			}
		}
		claim, err := s.create(ctx, c.desired(name))
		if apierrors.IsAlreadyExists(err) && attempt < 2 {
			continue
		}
		if err == nil {
			c.logf("namespaceclaim %s/%s created", s.ns, name)
		}
		return claim, err
	}
}

// owned reports whether the existing claim is the caller's: its UID is in this directory's claim
// record, or the API server stamped the caller as its creator (asked only when the claim carries a
// stamp). Only the default --if-exists asks.
func (c *claimOptions) owned(ctx context.Context, s *session, existing *tenancyv1alpha1.NamespaceClaim) (bool, error) {
	if existing == nil || c.ifExists != cli.IfExistsOwn {
		return false, nil
	}
	rec, err := c.recall()
	if err != nil {
		return false, err
	}
	if cli.Owned(existing, "", rec.UID) || existing.Spec.Creator == nil {
		return cli.Owned(existing, "", rec.UID), nil
	}
	me, err := s.kube.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		return false, fmt.Errorf("asking the API server who this caller is: %w", err)
	}
	return cli.Owned(existing, me.Status.UserInfo.Username, rec.UID), nil
}

// record remembers the claim as this directory's (and writes --claim-name-file).
func (c *claimOptions) record(claim *tenancyv1alpha1.NamespaceClaim) error {
	if c.nameFile != "" {
		if err := writePrivate(c.nameFile, []byte(claim.Name+"\n")); err != nil {
			return err
		}
	}
	if err := c.remember(cli.ClaimRecord{Name: claim.Name, UID: claim.UID}); err != nil {
		c.logf("warning: cannot record claim %s for later commands (give them NAME): %v", claim.Name, err)
	}
	return nil
}

// desired is the claim "claim" creates.
func (c *claimOptions) desired(name string) *tenancyv1alpha1.NamespaceClaim {
	claim := &tenancyv1alpha1.NamespaceClaim{ObjectMeta: metav1.ObjectMeta{Name: name,
		Labels: map[string]string{"app.kubernetes.io/created-by": cli.PluginCommand}}}
	claim.Spec.ClassName = c.class
	claim.Spec.NamespaceName = c.namespaceName
	if c.ttl != 0 {
		claim.Spec.TTL = &metav1.Duration{Duration: c.ttl.Round(time.Second)}
	}
	if c.keep != 0 {
		claim.Spec.Keep = &metav1.Duration{Duration: c.keep.Round(time.Second)}
	}
	return claim
}

func (c *claimOptions) print(ctx context.Context, s *session, claim *tenancyv1alpha1.NamespaceClaim) error {
	var kubeconfig []byte
	if c.output == outputKubeconfig || c.writeKubeconfig != "" {
		var err error
		if kubeconfig, err = kubeconfigOf(ctx, c.options, s, claim, c.tokens.source()); err != nil {
			return err
		}
	}
	if c.writeKubeconfig != "" {
		if err := writePrivate(c.writeKubeconfig, kubeconfig); err != nil {
			return err
		}
	}
	switch c.output {
	case outputName:
		_, err := fmt.Fprintln(c.out, claim.Status.Namespace)
		return err
	case outputKubeconfig:
		_, err := c.out.Write(kubeconfig)
		return err
	case outputJSON:
		return printJSON(c.options, claim)
	}
	return nil
}

func printJSON(o *options, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(o.out, string(b))
	return err
}
