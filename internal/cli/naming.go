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
	"crypto/sha256"
	"encoding/hex"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/nsclaim/nsclaim-operator/internal/claimpolicy"
)

// JobInstanceEnv names the variable that tells the legs of one CI job apart when the CI does not:
// GitHub Actions gives every matrix leg the same run, attempt and job id, so the Action sets it to
// `${{ strategy.job-index }}` and a plain workflow may set it to that or to `${{ toJSON(matrix) }}`.
const JobInstanceEnv = "NSCLAIM_JOB_INSTANCE"

// DefaultClaimName derives a claim name for a run that names none, from the CI's environment (getenv).
// It is unique per job instance: GitHub Actions "gh-[pr-N-]RUN-ATTEMPT-JOB[-LEG]" (LEG from
// NSCLAIM_JOB_INSTANCE, else from RUNNER_NAME, as matrix legs that run at once run on different
// runners), GitLab CI "gl-JOB_ID", Jenkins "jk-BUILD_TAG", Buildkite "bk-JOB_ID", Azure Pipelines
// "az-BUILD_ID-JOB_ID", CircleCI "cc-WORKFLOW_JOB_ID"; in any other CI that sets NSCLAIM_JOB_INSTANCE
// (Tekton, from $(context.taskRun.name)) "job-INSTANCE"; elsewhere "nsc-" and random (a random string
// supplied by the caller). So re-runs, matrix legs and parallel jobs never share a claim (and one's
// release never deletes another's namespace). The result is a DNS-1123 label of at most 63
// characters. Inside a known CI the name is the same for every command of the job (claim, then
// kubeconfig or release), so they need no NAME; ok is false elsewhere, where commands other than
// claim find the name in the state file "claim" writes (ClaimStateKey).
func DefaultClaimName(getenv func(string) string, random string) (name string, ok bool) {
	if parts := ciParts(getenv); parts != nil {
		return claimpolicy.Label(strings.ToLower(strings.Join(parts, "-"))), true
	}
	return claimpolicy.Label("nsc-" + strings.ToLower(random)), false
}

// envTrue is the value CIs give their marker variables (GITHUB_ACTIONS, GITLAB_CI, ...).
const envTrue = "true"

// ciParts returns the parts of a known CI's job-instance name, or nil outside one.
func ciParts(getenv func(string) string) []string {
	switch {
	case getenv("GITHUB_ACTIONS") == envTrue && getenv("GITHUB_RUN_ID") != "":
		return githubParts(getenv)
	case getenv("GITLAB_CI") == envTrue && getenv("CI_JOB_ID") != "":
		return []string{"gl", getenv("CI_JOB_ID")}
	case getenv("JENKINS_URL") != "" && getenv("BUILD_TAG") != "":
		return []string{"jk", getenv("BUILD_TAG")}
	case getenv("BUILDKITE") == envTrue && getenv("BUILDKITE_JOB_ID") != "":
		return []string{"bk", getenv("BUILDKITE_JOB_ID")}
	case strings.EqualFold(getenv("TF_BUILD"), envTrue) && getenv("BUILD_BUILDID") != "" && getenv("SYSTEM_JOBID") != "":
		return []string{"az", getenv("BUILD_BUILDID"), digest(getenv("SYSTEM_JOBID"))}
	case getenv("CIRCLECI") == envTrue && getenv("CIRCLE_WORKFLOW_JOB_ID") != "":
		return []string{"cc", getenv("CIRCLE_WORKFLOW_JOB_ID")}
	case getenv(JobInstanceEnv) != "":
		// A CI that exports no run id to a step's environment (Tekton: its TaskRun's name is a
		// variable the Task passes in, $(context.taskRun.name)) names the job instance itself.
		return []string{"job", instancePart(getenv(JobInstanceEnv), maxInstanceLength)}
	}
	return nil
}

// maxInstanceLength is the longest job instance kept as it is in a name of its own ("job-..."); a longer
// one, or one that is not a DNS-1123 label, is replaced by its digest.
const maxInstanceLength = 48

// instancePart is a job instance as part of a name: itself if it is a DNS-1123 label of at most max
// characters, else its digest.
func instancePart(instance string, max int) string {
	if len(validation.IsDNS1123Label(instance)) == 0 && len(instance) <= max {
		return instance
	}
	return digest(instance)
}

func githubParts(getenv func(string) string) []string {
	parts := []string{"gh"}
	if pr, ok := githubPR(getenv("GITHUB_REF")); ok {
		parts = append(parts, "pr", pr)
	}
	attempt := getenv("GITHUB_RUN_ATTEMPT")
	if attempt == "" {
		attempt = "1"
	}
	parts = append(parts, getenv("GITHUB_RUN_ID"), attempt)
	if job := getenv("GITHUB_JOB"); job != "" {
		parts = append(parts, job)
	}
	switch leg := getenv(JobInstanceEnv); {
	case leg != "":
		parts = append(parts, instancePart(leg, maxLegLength))
	case getenv("RUNNER_NAME") != "":
		parts = append(parts, digest(getenv("RUNNER_NAME")))
	}
	return parts
}

// maxLegLength is the longest matrix leg (GitHub's strategy.job-index) kept as it is after the job's id.
const maxLegLength = 8

// digest is a short stable stand-in for a value too long or too free-form for a name.
func digest(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])[:8]
}

// githubPR returns N of a pull request's ref (refs/pull/N/merge).
func githubPR(ref string) (string, bool) {
	rest, ok := strings.CutPrefix(ref, "refs/pull/")
	if !ok {
		return "", false
	}
	n, _, ok := strings.Cut(rest, "/")
	return n, ok && n != ""
}

// ValidateClaimName checks a NAME given on the command line: a DNS-1123 label, so a value such as
// "--server=http://host" (a branch name, an input of a pipeline) is refused as a name and never read
// as a flag. The error is a UsageError (exit 2).
func ValidateClaimName(name string) error {
	if errs := validation.IsDNS1123Label(name); len(errs) > 0 {
		return &UsageError{Msg: "argument " + quoteShort(name) + " is not a name (a DNS-1123 label: lower case letters, digits and -, at most 63): " + strings.Join(errs, "; ")}
	}
	return nil
}

// quoteShort quotes s, cut to 70 characters.
func quoteShort(s string) string {
	if len(s) > 70 {
		s = s[:70] + "..."
	}
	return `"` + strings.ReplaceAll(s, `"`, `\"`) + `"`
}
