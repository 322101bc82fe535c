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
	"fmt"
	"io"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"

	"github.com/nsclaim/nsclaim-operator/internal/cli"
)

// options are the flags every command shares: kubectl's connection flags (--kubeconfig, --context,
// -n, ...) and the output streams.
type options struct {
	flags  *genericclioptions.ConfigFlags
	out    io.Writer
	errOut io.Writer
}

func newOptions(out, errOut io.Writer) *options {
	return &options{flags: genericclioptions.NewConfigFlags(true), out: out, errOut: errOut}
}

// logf writes a diagnostic line to stderr, never to stdout; a failed write is not worth failing for.
func (o *options) logf(format string, args ...any) {
	_, _ = fmt.Fprintf(o.errOut, format+"\n", args...)
}

func newRootCommand(o *options) *cobra.Command {
	root := &cobra.Command{
		Use:   "kubectl-nsclaim",
		Short: "Claim, use and release nsclaim namespaces from a pipeline",
		Long: `Claim, use and release nsclaim namespaces from a pipeline.

Stdout carries only what -o asks for; everything else goes to stderr. Exit codes:
  0 done, 1 other error, 2 usage, 3 refused (the reason, its message and who must act are printed),
  4 timed out, 5 forbidden or unauthenticated (the caller lacks a right of the pipeline role, or its token
  expired or was revoked), 6 not found, 7 exists (--if-exists=fail, another class, another caller's claim,
  or a Secret that is not the claim's). docs/pipelines.md has the full table.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		// An unknown subcommand is a usage error (exit 2), not "any other error".
		Args: func(_ *cobra.Command, a []string) error {
			if len(a) > 0 {
				return &cli.UsageError{Msg: fmt.Sprintf("unknown command %q for kubectl nsclaim (kubectl nsclaim --help lists them)", a[0])}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &cli.UsageError{Msg: err.Error()} })
	o.flags.AddFlags(root.PersistentFlags())
	root.AddCommand(newClaimCommand(o), newKubeconfigCommand(o), newExtendCommand(o), newHeartbeatCommand(o), newWakeCommand(o), newReleaseCommand(o),
		newListCommand(o), newWhyCommand(o), newPipelineIdentityCommand(o), newTokenCommand(o), newVersionCommand(o))
	return root
}

// args checks the number of positional arguments, as a usage error, and that each is a DNS-1123
// label (a claim's or a namespace's name): a value that looks like a flag never becomes one.
func args(lowest, highest int) cobra.PositionalArgs {
	return func(_ *cobra.Command, a []string) error {
		for _, v := range a {
			if err := cli.ValidateClaimName(v); err != nil {
				return err
			}
		}
		if len(a) < lowest || len(a) > highest {
			if lowest == highest {
				return &cli.UsageError{Msg: fmt.Sprintf("want %d argument(s), got %d", lowest, len(a))}
			}
			return &cli.UsageError{Msg: fmt.Sprintf("want %d to %d arguments, got %d", lowest, highest, len(a))}
		}
		return nil
	}
}
