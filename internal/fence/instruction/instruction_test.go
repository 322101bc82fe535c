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

package instruction

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

func TestInstruction(t *testing.T) {
	for _, tc := range []struct {
		name          string
		part          Part
		serverVersion string
		want          []string
		notWant       []string
	}{
		{"validating, 1.30", PartValidating, "v1.30.0", []string{ApplyValidating, ApplyValidatingCheckout}, []string{"-k config/fence)", "-k config/fence;"}},
		{"validating, 1.35", PartValidating, "v1.35.4", []string{ApplyValidating, ApplyValidatingCheckout}, nil},
		{"validating, 1.37", PartValidating, "v1.37.1", []string{ApplyValidating, ApplyValidatingCheckout}, nil},
		{"validating, unknown version", PartValidating, "", []string{ApplyValidating, ApplyValidatingCheckout}, nil},
		{"validating, 1.29", PartValidating, "v1.29.9", []string{"needs 1.30 or newer"}, []string{ApplyValidating}},
		{"keyless, 1.36", PartKeyless, "v1.36.0", []string{ApplyKeyless, ApplyKeylessCheckout}, []string{"not available"}},
		{"keyless, 1.37 (a pre-release)", PartKeyless, "v1.37.0-alpha.1", []string{ApplyKeyless}, nil},
		{"keyless, 1.35", PartKeyless, "v1.35.2", []string{"below 1.36 keyless mode is not available", "credentials mode Token"}, []string{ApplyKeyless}},
		{"keyless, 1.30", PartKeyless, "v1.30.1", []string{"credentials mode Token"}, []string{ApplyKeyless}},
		{"keyless, unknown version", PartKeyless, "", []string{"on Kubernetes 1.36 or newer", ApplyKeyless, "credentials mode Token"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Instruction(tc.part, tc.serverVersion)
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("Instruction(%s, %q) = %q, want it to contain %q", tc.part, tc.serverVersion, got, w)
				}
			}
			for _, w := range tc.notWant {
				if strings.Contains(got, w) {
					t.Errorf("Instruction(%s, %q) = %q, must not contain %q", tc.part, tc.serverVersion, got, w)
				}
			}
		})
	}
}

func TestInstructionForNamesTheRelease(t *testing.T) {
	if got := InstructionFor(PartValidating, "v1.33.0", "0.4.0"); !strings.HasPrefix(got, "apply fence.yaml of release 0.4.0 (") {
		t.Errorf("InstructionFor() = %q, want it to name release 0.4.0", got)
	}
	if got := Instruction(PartValidating, ""); !strings.HasPrefix(got, "apply fence.yaml of the operator's release (") {
		t.Errorf("Instruction() = %q", got)
	}
}

// The docs give the same commands as Instruction, and none tells anyone to apply config/fence whole
// (MutatingAdmissionPolicies: Kubernetes 1.36) as the fix of FenceNotIntact or CreatorNotStamped.
func TestDocsGiveTheInstruction(t *testing.T) {
	read := func(p string) string {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	troubleshooting := read("../../../docs/troubleshooting.md")
	for reason, cmds := range map[string][]string{
		"FenceNotIntact":    {ApplyValidating, ApplyValidatingCheckout},
		"CreatorNotStamped": {ApplyKeyless, ApplyKeylessCheckout},
	} {
		row := regexp.MustCompile("(?m)^\\| `" + reason + "` \\|.*$").FindString(troubleshooting)
		if row == "" {
			t.Fatalf("docs/troubleshooting.md has no row for %s", reason)
		}
		for _, c := range cmds {
			if !strings.Contains(row, c) {
				t.Errorf("docs/troubleshooting.md's %s row does not give %q", reason, c)
			}
		}
	}
	bare := regexp.MustCompile("apply( --server-side)? -k config/fence([`) ;]|$)")
	for _, p := range []string{"../../../docs/troubleshooting.md", "../../../README.md", "../../../docs/pipelines.md", "../../../docs/runbooks.md"} {
		if m := bare.FindString(read(p)); m != "" {
			t.Errorf("%s says %q: config/fence as a whole needs Kubernetes 1.36; give %q (or %q on 1.36+)", p, m, ApplyValidatingCheckout, ApplyKeylessCheckout)
		}
	}
}
