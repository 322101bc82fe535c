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
		{"github matrix leg (the Action's job index)", map[string]string{"GITHUB_ACTIONS": "true", "GITHUB_RUN_ID": "123", "GITHUB_RUN_ATTEMPT": "1", "GITHUB_JOB": "e2e", JobInstanceEnv: "3"}, "gh-123-1-e2e-3", true},
		{"github matrix leg (a digest of the matrix values)", map[string]string{"GITHUB_ACTIONS": "true", "GITHUB_RUN_ID": "123", "GITHUB_JOB": "e2e", JobInstanceEnv: `{"os":"linux","go":"1.24"}`}, "gh-123-1-e2e-", true},
		{"github, the runner tells legs apart", map[string]string{"GITHUB_ACTIONS": "true", "GITHUB_RUN_ID": "123", "GITHUB_JOB": "e2e", "RUNNER_NAME": "GitHub Actions 12"}, "gh-123-1-e2e-", true},
		{"jenkins", map[string]string{"JENKINS_URL": "https://ci/", "BUILD_TAG": "jenkins-Team/App-42"}, "jk-jenkins-team-app-42-", true},
		{"buildkite", map[string]string{"BUILDKITE": "true", "BUILDKITE_JOB_ID": "0190a1b2-c3d4"}, "bk-0190a1b2-c3d4", true},
		{"azure pipelines", map[string]string{"TF_BUILD": "True", "BUILD_BUILDID": "77", "SYSTEM_JOBID": "12f1170f-54f2-53f3-20dd-22fc7dff55f9"}, "az-77-", true},
		{"circleci", map[string]string{"CIRCLECI": "true", "CIRCLE_WORKFLOW_JOB_ID": "5a1b"}, "cc-5a1b", true},
		{"tekton (the Task passes its TaskRun's name)", map[string]string{JobInstanceEnv: "build-run-x7k2p-deploy"}, "job-build-run-x7k2p-deploy", true},
		{"another CI, a job instance that is no label", map[string]string{JobInstanceEnv: "Run #42 / deploy"}, "job-", true},
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
		"matrix leg":   {JobInstanceEnv: "1"},
		"other runner": {"RUNNER_NAME": "GitHub Actions 7"},
	} {
		if got := name(change); got == first {
			t.Errorf("%s: same name %q", what, got)
		}
	}
}

// Two matrix legs of one job get different names, whichever way they are told apart.
func TestDefaultClaimNameSeparatesMatrixLegs(t *testing.T) {
	for _, key := range []string{JobInstanceEnv, "RUNNER_NAME"} {
		names := map[string]bool{}
		for _, leg := range []string{"0", "1", `{"os":"linux"}`, `{"os":"windows"}`} {
			env := map[string]string{"GITHUB_ACTIONS": "true", "GITHUB_RUN_ID": "5", "GITHUB_JOB": "test", key: leg}
			n, _ := DefaultClaimName(func(k string) string { return env[k] }, "")
			if names[n] {
				t.Errorf("%s=%q: name %q taken by another leg", key, leg, n)
			}
			names[n] = true
		}
	}
}

func TestValidateClaimName(t *testing.T) {
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{"gh-1-2-deploy", true},
		{"--server=http://127.0.0.1:8080", false},
		{"-n", false},
		{"a b", false},
		{"$(touch x)", false},
		{"UPPER", false},
		{strings.Repeat("a", 64), false},
		{"", false},
	} {
		err := ValidateClaimName(tc.name)
		if (err == nil) != tc.ok {
			t.Errorf("ValidateClaimName(%q) = %v, want ok %v", tc.name, err, tc.ok)
		}
		if err != nil && ExitCode(err) != ExitUsage {
			t.Errorf("ValidateClaimName(%q) exits %d, want %d", tc.name, ExitCode(err), ExitUsage)
		}
	}
}

func TestClaimRecord(t *testing.T) {
	rec := ClaimRecord{Name: "nsc-ab12", UID: "0f1e"}
	got, err := ParseClaimRecord(rec.String())
	if err != nil || got != rec {
		t.Errorf("ParseClaimRecord(%q) = %v, %v; want %v", rec.String(), got, err, rec)
	}
	for _, bad := range []string{"", "--server=x 1", "Not A Name"} {
		if _, err := ParseClaimRecord(bad); err == nil {
			t.Errorf("ParseClaimRecord(%q) accepted a non-record", bad)
		}
	}
	base := ClaimStatePath("/s", "/w/a", "https://k:6443", "ci")
	for what, other := range map[string]string{
		"another directory": ClaimStatePath("/s", "/w/b", "https://k:6443", "ci"),
		"another server":    ClaimStatePath("/s", "/w/a", "https://j:6443", "ci"),
		"another namespace": ClaimStatePath("/s", "/w/a", "https://k:6443", "cd"),
	} {
		if other == base {
			t.Errorf("%s shares the claim record %s", what, base)
		}
	}
	if again := ClaimStatePath("/s", "/w/a", "https://k:6443", "ci"); again != base {
		t.Errorf("ClaimStatePath is not stable: %s, %s", base, again)
	}
}
