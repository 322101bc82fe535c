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
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"
)

func TestDefaultClaimName(t *testing.T) {
	for _, tc := range []struct {
		name   string
		env    map[string]string
		want   string
		wantCI bool
	}{
		{"github push", map[string]string{"GITHUB_ACTIONS": "true", "GITHUB_RUN_ID": "123", "GITHUB_RUN_ATTEMPT": "2", "GITHUB_JOB": "deploy", "GITHUB_REF": "refs/heads/main"}, "gh-123-2-deploy", true},
		{"github pull request", map[string]string{"GITHUB_ACTIONS": "true", "GITHUB_RUN_ID": "123", "GITHUB_RUN_ATTEMPT": "1", "GITHUB_JOB": "e2e", "GITHUB_REF": "refs/pull/42/merge"}, "gh-pr-42-123-1-e2e", true},
		{"github, job id with capitals and underscores", map[string]string{"GITHUB_ACTIONS": "true", "GITHUB_RUN_ID": "9", "GITHUB_JOB": "Deploy_Staging"}, "gh-9-1-deploy-staging-", true},
		{"gitlab", map[string]string{"GITLAB_CI": "true", "CI_JOB_ID": "777"}, "gl-777", true},
		{"no CI", map[string]string{}, "nsc-ab12cd", false},
		{"github without a run id", map[string]string{"GITHUB_ACTIONS": "true"}, "nsc-ab12cd", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ci := DefaultClaimName(func(k string) string { return tc.env[k] }, "AB12CD")
			if ci != tc.wantCI {
				t.Errorf("DefaultClaimName() from CI = %v, want %v", ci, tc.wantCI)
			}
			if !strings.HasPrefix(got, tc.want) {
				t.Errorf("DefaultClaimName() = %q, want %q (a prefix, for names that carry a hash)", got, tc.want)
			}
			if errs := validation.IsDNS1123Label(got); len(errs) > 0 {
				t.Errorf("%q is not a DNS-1123 label: %v", got, errs)
			}
		})
	}
}

// Re-runs (a new attempt) and parallel jobs of one run get different names.
func TestDefaultClaimNameSeparatesRuns(t *testing.T) {
	base := map[string]string{"GITHUB_ACTIONS": "true", "GITHUB_RUN_ID": "5", "GITHUB_RUN_ATTEMPT": "1", "GITHUB_JOB": "a", "GITHUB_REF": "refs/pull/1/merge"}
	name := func(change map[string]string) string {
		env := map[string]string{}
		for k, v := range base {
			env[k] = v
		}
		for k, v := range change {
			env[k] = v
		}
		n, _ := DefaultClaimName(func(k string) string { return env[k] }, "x")
		return n
	}
	first := name(nil)
	for what, change := range map[string]map[string]string{
		"re-run":       {"GITHUB_RUN_ATTEMPT": "2"},
		"another job":  {"GITHUB_JOB": "b"},
		"another run":  {"GITHUB_RUN_ID": "6"},
		"long job ids": {"GITHUB_JOB": strings.Repeat("j", 80)},
	} {
		if got := name(change); got == first {
			t.Errorf("%s: same name %q", what, got)
		}
	}
}
