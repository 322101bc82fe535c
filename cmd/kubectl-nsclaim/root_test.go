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
	"bytes"
	"strings"
	"testing"

	"github.com/nsclaim/nsclaim-operator/internal/cli"
)

// run executes the plugin's root command with args, as main does, against a kubeconfig that points
// nowhere reachable: a usage error must be found before anything is sent.
func run(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	root := newRootCommand(newOptions(&out, &errOut))
	root.SetArgs(append([]string{"--server", "http://127.0.0.1:1"}, args...))
	err := root.Execute()
	msg := ""
	if err != nil {
		msg = cli.Message(err)
	}
	return cli.ExitCode(err), out.String(), msg
}

func TestUsageErrorsExit2(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"unknown subcommand", []string{"clam"}, `unknown command "clam"`},
		{"a flag-shaped name after --", []string{"claim", "--", "--server=http://127.0.0.1:9"}, "is not a name"},
		{"a name that is no label", []string{"release", "--", "Feature/X"}, "is not a name"},
		{"kubeconfig of a flag-shaped name", []string{"kubeconfig", "--", "-n"}, "is not a name"},
		{"an unknown flag", []string{"claim", "--nope"}, "unknown flag"},
		{"a bad --if-exists", []string{"claim", "--if-exists", "maybe", "--", "a"}, "--if-exists must be"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, msg := run(t, tc.args...)
			if code != cli.ExitUsage || !strings.Contains(msg, tc.want) {
				t.Errorf("%v: exit %d, %q; want exit %d and %q", tc.args, code, msg, cli.ExitUsage, tc.want)
			}
		})
	}
}

func TestVersionClient(t *testing.T) {
	code, out, msg := run(t, "version", "--client")
	if code != cli.ExitOK || !strings.HasPrefix(out, "kubectl-nsclaim: dev (") || strings.Contains(out, "kubernetes:") {
		t.Errorf("version --client: exit %d, stdout %q, error %q", code, out, msg)
	}
}
