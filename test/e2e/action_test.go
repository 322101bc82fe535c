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

// nsclaim's GitHub Action (action.yml: action/main.js, then action/post.js), run with node as a GitHub
// runner runs it: inputs as INPUT_* variables, and GITHUB_OUTPUT, GITHUB_ENV, GITHUB_STATE and
// GITHUB_STEP_SUMMARY files in a temporary directory; the post step gets main's state as STATE_*.

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
	"github.com/nsclaim/nsclaim-operator/internal/cli"
)

// runner is one job's runner files and environment.
type runner struct {
	dir string
	env []string
}

func newRunner(t *testing.T, extra ...string) *runner {
	t.Helper()
	dir := t.TempDir()
	r := &runner{dir: dir}
	for _, f := range []string{"output", "env", "state", "summary", "path"} {
		NewWithT(t).Expect(os.WriteFile(filepath.Join(dir, f), nil, 0o600)).To(Succeed())
	}
	r.env = append([]string{
		"GITHUB_ACTIONS=true", "RUNNER_TEMP=" + filepath.Join(dir, "temp"), "CI=true",
		"GITHUB_OUTPUT=" + filepath.Join(dir, "output"), "GITHUB_ENV=" + filepath.Join(dir, "env"),
		"GITHUB_STATE=" + filepath.Join(dir, "state"), "GITHUB_STEP_SUMMARY=" + filepath.Join(dir, "summary"),
		"GITHUB_PATH=" + filepath.Join(dir, "path"), "PATH=" + pathWithTools(t),
	}, extra...)
	NewWithT(t).Expect(os.Mkdir(filepath.Join(dir, "temp"), 0o700)).To(Succeed())
	return r
}

// step runs action/<script> with the inputs; it returns the exit code and stdout+stderr.
func (r *runner) step(t *testing.T, script string, inputs map[string]string, state map[string]string) (int, string) {
	t.Helper()
	node, err := exec.LookPath("node")
	NewWithT(t).Expect(err).NotTo(HaveOccurred(), "the GitHub Action's test needs node (a runner's node20)")
	cmd := exec.Command(node, filepath.Join("..", "..", "action", script))
	cmd.Env = append(append([]string{}, os.Environ()...), r.env...)
	for k, v := range inputs {
		cmd.Env = append(cmd.Env, "INPUT_"+strings.ToUpper(strings.ReplaceAll(k, " ", "_"))+"="+v)
	}
	for k, v := range state {
		cmd.Env = append(cmd.Env, "STATE_"+k+"="+v)
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	code := 0
	if exitErr, ok := err.(*exec.ExitError); ok {
		code = exitErr.ExitCode()
	} else {
		NewWithT(t).Expect(err).NotTo(HaveOccurred())
	}
	return code, out.String()
}

// file reads a runner file as the runner does: key=value lines and key<<DELIMITER blocks.
func (r *runner) file(t *testing.T, name string) map[string]string {
	t.Helper()
	f, err := os.Open(filepath.Join(r.dir, name))
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	defer func() { _ = f.Close() }()
	out := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if k, delim, ok := strings.Cut(line, "<<"); ok && !strings.Contains(k, "=") {
			var v []string
			for sc.Scan() && sc.Text() != delim {
				v = append(v, sc.Text())
			}
			out[k] = strings.Join(v, "\n")
			continue
		}
		if k, v, ok := strings.Cut(line, "="); ok {
			out[k] = v
		}
	}
	return out
}

func (r *runner) summary(t *testing.T) string {
	b, err := os.ReadFile(filepath.Join(r.dir, "summary"))
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	return string(b)
}

// TestGitHubActionTokenMode: the Action claims with the pipeline identity's kubeconfig (a secret),
// names the claim after the run, outputs the namespace and a kubeconfig that works there, exports it
// for the next steps, writes a step summary, and its post step releases the claim; a refused claim
// fails the step with the reason, and the post step still releases it.
func TestGitHubActionTokenMode(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ns, pipelineKC := pluginPipeline(t, "action")
	secret, err := os.ReadFile(pipelineKC)
	g.Expect(err).NotTo(HaveOccurred())
	runID := time.Now().Format("150405")
	job := newRunner(t, "GITHUB_RUN_ID="+runID, "GITHUB_RUN_ATTEMPT=1", "GITHUB_JOB=deploy", "GITHUB_REF=refs/pull/7/merge")
	inputs := map[string]string{"kubeconfig": string(secret), "class": className, "ttl": "30m", "timeout": "2m", "export-kubeconfig": "true"}

	code, out := job.step(t, "main.js", inputs, nil)
	g.Expect(code).To(Equal(0), out)
	g.Expect(out).NotTo(ContainSubstring("token:"), "no credential in the log")
	outputs := job.file(t, "output")
	wantName := "gh-pr-7-" + runID + "-1-deploy"
	g.Expect(outputs).To(HaveKeyWithValue("claim", wantName))
	claim := claimOf(g, ns, wantName)
	g.Expect(outputs).To(HaveKeyWithValue("namespace", claim.Status.Namespace))
	g.Expect(job.file(t, "env")).To(HaveKeyWithValue("KUBECONFIG", outputs["kubeconfig"]))
	g.Expect(job.summary(t)).To(ContainSubstring("| `" + wantName + "` | `" + claim.Status.Namespace + "` | " + className))
	// The next step deploys with the exported kubeconfig, into the namespace only.
	kout, err := kubectl(outputs["kubeconfig"], "create", "configmap", "deployed-by-action")
	g.Expect(err).NotTo(HaveOccurred(), kout)
	kout, err = kubectl(outputs["kubeconfig"], "-n", ns, "get", "configmaps")
	expectForbidden(g, kout, err, "the Action's kubeconfig outside its namespace")

	// The post step, with main's state: the claim is released, the kubeconfigs deleted.
	state := job.file(t, "state")
	g.Expect(state).To(HaveKeyWithValue("claim", wantName))
	code, out = job.step(t, "post.js", inputs, state)
	g.Expect(code).To(Equal(0), out)
	g.Eventually(gone(&tenancyv1alpha1.NamespaceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: wantName}})).WithTimeout(90 * time.Second).Should(BeTrue())
	g.Expect(gone(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: claim.Status.Namespace}})()).To(BeTrue())
	g.Expect(outputs["kubeconfig"]).NotTo(BeAnExistingFile())
	g.Expect(job.summary(t)).To(ContainSubstring("released claim `" + wantName + "`"))

	// A refused claim: the step fails with the plugin's exit code and the reason; post releases it.
	refused := newRunner(t, "GITHUB_RUN_ID="+runID, "GITHUB_RUN_ATTEMPT=2", "GITHUB_JOB=deploy")
	inputs["ttl"] = "200h"
	code, out = refused.step(t, "main.js", inputs, nil)
	g.Expect(code).To(Equal(cli.ExitRefused), out)
	g.Expect(out).To(ContainSubstring("::error title=nsclaim::"))
	g.Expect(out).To(ContainSubstring(tenancyv1alpha1.TTLExceedsMaximumReason))
	g.Expect(refused.summary(t)).To(ContainSubstring("who must act"))
	g.Expect(refused.file(t, "output")).NotTo(HaveKey("namespace"))
	state = refused.file(t, "state")
	g.Expect(state).To(HaveKeyWithValue("claim", "gh-"+runID+"-2-deploy"))
	code, out = refused.step(t, "post.js", inputs, state)
	g.Expect(code).To(Equal(0), out)
	g.Eventually(gone(&tenancyv1alpha1.NamespaceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: state["claim"]}})).WithTimeout(90 * time.Second).Should(BeTrue())
}

// TestGitHubActionKeyless: with the inputs audience, server and certificate-authority and a job's OIDC
// token endpoint (ACTIONS_ID_TOKEN_REQUEST_*), the Action claims keyless; the kubeconfig it outputs
// fetches fresh ID tokens and works in the namespace; post releases the claim.
func TestGitHubActionKeyless(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	const audience = "https://kubernetes.action.example"
	ns, class, pipelineKC, env, served := keylessPluginPipeline(t, "action-keyless", audience)
	kc, err := clientcmd.LoadFromFile(pipelineKC)
	g.Expect(err).NotTo(HaveOccurred())
	cluster := kc.Clusters[kc.Contexts[kc.CurrentContext].Cluster]
	job := newRunner(t, append(env, "GITHUB_RUN_ID=55", "GITHUB_RUN_ATTEMPT=1", "GITHUB_JOB=preview")...)
	inputs := map[string]string{"audience": audience, "server": cluster.Server, "certificate-authority": string(cluster.CertificateAuthorityData),
		"namespace": ns, "class": class}

	code, out := job.step(t, "main.js", inputs, nil)
	g.Expect(code).To(Equal(0), out)
	outputs := job.file(t, "output")
	claim := claimOf(g, ns, "gh-55-1-preview")
	g.Expect(outputs).To(HaveKeyWithValue("namespace", claim.Status.Namespace))
	g.Expect(job.summary(t)).To(ContainSubstring("keyless (system:serviceaccount:" + ns + ":ci)"))
	before := served()
	kout, err := kubectlEnv(outputs["kubeconfig"], env, "create", "configmap", "deployed-keyless")
	g.Expect(err).NotTo(HaveOccurred(), kout)
	g.Expect(served()).To(BeNumerically(">", before))

	code, out = job.step(t, "post.js", inputs, job.file(t, "state"))
	g.Expect(code).To(Equal(0), out)
	g.Eventually(gone(&tenancyv1alpha1.NamespaceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "gh-55-1-preview"}})).WithTimeout(90 * time.Second).Should(BeTrue())
}
