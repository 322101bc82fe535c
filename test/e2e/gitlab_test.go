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

package e2e

// nsclaim's GitLab CI/CD component (templates/nsclaim.yml), its jobs' scripts run with bash as a
// GitLab runner runs them (before_script and script in one shell, the job's variables expanded, a
// File variable as a path), after the component's inputs are interpolated.

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
)

type gitlabJob struct {
	Extends      string            `json:"extends"`
	Variables    map[string]string `json:"variables"`
	BeforeScript []string          `json:"before_script"`
	Script       []string          `json:"script"`
	Environment  map[string]string `json:"environment"`
	IDTokens     map[string]any    `json:"id_tokens"`
}

// gitlabComponent interpolates the component's inputs (defaults, then overrides) and returns its jobs.
func gitlabComponent(t *testing.T, overrides map[string]string) map[string]gitlabJob {
	t.Helper()
	g := NewWithT(t)
	raw, err := os.ReadFile("../../templates/nsclaim.yml")
	g.Expect(err).NotTo(HaveOccurred())
	header, body, ok := strings.Cut(string(raw), "\n---\n")
	g.Expect(ok).To(BeTrue(), "a component is a spec document and a jobs document")
	var spec struct {
		Spec struct {
			Inputs map[string]struct {
				Default string `json:"default"`
			} `json:"inputs"`
		} `json:"spec"`
	}
	g.Expect(yaml.Unmarshal([]byte(header), &spec)).To(Succeed())
	body = strings.ReplaceAll(body, "$[[ component.version ]]", componentVersion(t))
	body = regexp.MustCompile(`\$\[\[ inputs\.([a-z-]+) \]\]`).ReplaceAllStringFunc(body, func(m string) string {
		name := m[len("$[[ inputs.") : len(m)-len(" ]]")]
		in, declared := spec.Spec.Inputs[name]
		g.Expect(declared).To(BeTrue(), "input %s is used but not declared", name)
		if v, ok := overrides[name]; ok {
			return v
		}
		return in.Default
	})
	jobs := map[string]gitlabJob{}
	g.Expect(yaml.Unmarshal([]byte(body), &jobs)).To(Succeed())
	return jobs
}

// componentVersion is what GitLab interpolates as component.version: the release of this checkout.
func componentVersion(t *testing.T) string {
	raw, err := os.ReadFile("../../Makefile")
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	m := regexp.MustCompile(`(?m)^VERSION \?= (\S+)$`).FindStringSubmatch(string(raw))
	NewWithT(t).Expect(m).To(HaveLen(2), "Makefile has no VERSION")
	return m[1]
}

// runGitLabJob runs a job's before_script and script in one bash, with the job's variables (and its
// extends' variables) expanded against env, as a runner does; it returns the exit code and output.
func runGitLabJob(t *testing.T, jobs map[string]gitlabJob, name, dir string, env []string) (int, string) {
	t.Helper()
	job := jobs[name]
	base := jobs[job.Extends]
	lookup := map[string]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		lookup[k] = v
	}
	vars := []string{}
	for _, set := range []map[string]string{base.Variables, job.Variables} {
		for k, v := range set {
			vars = append(vars, k+"="+os.Expand(v, func(s string) string { return lookup[s] }))
		}
	}
	script := strings.Join(append(append(append([]string{}, base.BeforeScript...), job.BeforeScript...), job.Script...), "\n")
	cmd := exec.Command("bash", "-eo", "pipefail", "-c", script)
	cmd.Dir = dir
	cmd.Env = append(append(append([]string{}, os.Environ()...), env...), vars...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if exitErr, ok := err.(*exec.ExitError); ok {
		return exitErr.ExitCode(), out.String()
	}
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	return 0, out.String()
}

// TestGitLabComponent: the claim job claims a namespace for the environment and passes its name on
// in a dotenv report; auto_stop_in is the claim's TTL and the stop job is the environment's on_stop,
// which releases the claim.
func TestGitLabComponent(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ns, pipelineKC := pluginPipeline(t, "gitlab")
	jobs := gitlabComponent(t, map[string]string{"class": className, "ttl": "90m"})
	claimJob, stopJob := jobs["nsclaim-claim"], jobs["nsclaim-release"]
	g.Expect(claimJob.Environment).To(HaveKeyWithValue("on_stop", "nsclaim-release"))
	g.Expect(claimJob.Environment).To(HaveKeyWithValue("auto_stop_in", "90m"))
	g.Expect(stopJob.Environment).To(HaveKeyWithValue("action", "stop"))
	g.Expect(stopJob.Environment["name"]).To(Equal(claimJob.Environment["name"]))

	dir := t.TempDir()
	env := []string{"GITLAB_CI=true", "CI_PROJECT_ID=4711", "CI_ENVIRONMENT_SLUG=review-feat-x-abc123", "CI_COMMIT_REF_SLUG=feat-x",
		"NSCLAIM_KUBECONFIG=" + pipelineKC, "PATH=" + pathWithTools(t), "KUBECACHEDIR=" + t.TempDir(), "CI_PROJECT_DIR=" + dir, "CI_JOB_ID=1001"}
	code, out := runGitLabJob(t, jobs, "nsclaim-claim", dir, env)
	g.Expect(code).To(Equal(0), out)
	dotenv, err := os.ReadFile(filepath.Join(dir, "nsclaim.env"))
	g.Expect(err).NotTo(HaveOccurred())
	claim := claimOf(g, ns, "p4711-review-feat-x-abc123")
	g.Expect(string(dotenv)).To(Equal("NSCLAIM_CLAIM=p4711-review-feat-x-abc123\nNSCLAIM_NAMESPACE=" + claim.Status.Namespace + "\n"))
	g.Expect(claim.Spec.TTL.Duration).To(Equal(90 * time.Minute))

	// The stop job (another job id, the same environment) releases the claim.
	stopEnv := append(append([]string{}, env...), "CI_JOB_ID=1002")
	code, out = runGitLabJob(t, jobs, "nsclaim-release", dir, stopEnv)
	g.Expect(code).To(Equal(0), out)
	g.Expect(gone(&tenancyv1alpha1.NamespaceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "p4711-review-feat-x-abc123"}})()).To(BeTrue())
}
