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

	"github.com/nsclaim/nsclaim-operator/internal/claimpolicy"
)

// DefaultClaimName derives a claim name for a run that names none, from the CI's environment (getenv):
// unique per GitHub Actions run attempt and job ("gh-pr-42-<run id>-<attempt>-<job>"), per GitLab CI
// job ("gl-<job id>"), else "nsc-" and random (a random string supplied by the caller). So a re-run
// and a parallel run never share a claim (and one's release never deletes the other's namespace),
// and the namespace name the operator derives from it (keyed by the requester namespace) never
// collides with another repository's. The result is a DNS-1123 label of at most 63 characters.
// Inside a CI job the name is the same for every command of the job (claim, then kubeconfig or release),
// so they need no NAME; ok is false outside CI, where the name is random and commands other than
// claim must be given one.
func DefaultClaimName(getenv func(string) string, random string) (name string, ok bool) {
	switch {
	case getenv("GITHUB_ACTIONS") == "true" && getenv("GITHUB_RUN_ID") != "":
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
		return claimpolicy.Label(strings.ToLower(strings.Join(parts, "-"))), true
	case getenv("GITLAB_CI") == "true" && getenv("CI_JOB_ID") != "":
		return claimpolicy.Label("gl-" + getenv("CI_JOB_ID")), true
	}
	return claimpolicy.Label("nsc-" + strings.ToLower(random)), false
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
