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

import (
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
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
)

// readmeSnippet returns the shell code of README.md between the readme-snippet markers.
func readmeSnippet(t *testing.T) string {
	t.Helper()
	g := NewWithT(t)
	raw, err := os.ReadFile("../../README.md")
	g.Expect(err).NotTo(HaveOccurred())
	_, rest, ok := strings.Cut(string(raw), "<!-- readme-snippet:begin -->")
	g.Expect(ok).To(BeTrue(), "README.md has no readme-snippet:begin marker")
	block, _, ok := strings.Cut(rest, "<!-- readme-snippet:end -->")
	g.Expect(ok).To(BeTrue(), "README.md has no readme-snippet:end marker")
	_, code, ok := strings.Cut(block, "```sh\n")
	g.Expect(ok).To(BeTrue())
	code, _, ok = strings.Cut(code, "```")
	g.Expect(ok).To(BeTrue())
	return code
}

// envWithoutCI is the test's environment without a variable any CI sets (GitHub Actions, GitLab CI,
// Jenkins, Buildkite, Azure Pipelines, CircleCI, Tekton, generic CI) or nsclaim reads: a laptop's shell.
func envWithoutCI() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		ci := k == "CI" || k == "JENKINS_URL" || k == "BUILD_TAG" || k == "TF_BUILD" || k == "GITLAB_CI" || k == "BUILDKITE" || k == "CIRCLECI"
		for _, prefix := range []string{"GITHUB_", "RUNNER_", "CI_", "BUILDKITE_", "CIRCLE_", "SYSTEM_", "BUILD_", "TEKTON_", "NSCLAIM_", "KUBECONFIG"} {
			ci = ci || strings.HasPrefix(k, prefix)
		}
		if !ci {
			env = append(env, kv)
		}
	}
	return env
}

// TestREADMESnippet runs README.md's pipeline snippet, as written, with no CI variable at all (a
// laptop, or a CI the plugin does not know), as a pipeline identity holding only the shipped role: it
// claims, deploys deploy/ into the namespace with the kubeconfig it wrote, and releases, with no NAME
// anywhere (the claim record), leaving no claim behind.
func TestREADMESnippet(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ns, pipelineKC := pluginPipeline(t, "readme")
	dir := t.TempDir()
	g.Expect(os.Mkdir(filepath.Join(dir, "deploy"), 0o700)).To(Succeed())
	g.Expect(os.WriteFile(filepath.Join(dir, "deploy", "config.yaml"), []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: readme}\ndata: {a: b}\n"), 0o600)).To(Succeed())
	cmd := exec.Command("bash", "-euo", "pipefail", "-c", readmeSnippet(t))
	cmd.Dir = dir
	cmd.Env = append(envWithoutCI(), "KUBECONFIG="+pipelineKC, "PATH="+pathWithTools(t), "KUBECACHEDIR="+t.TempDir(),
		"NSCLAIM_CLASS="+className, "HOME="+t.TempDir(), "XDG_CACHE_HOME="+t.TempDir())
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	g.Expect(cmd.Run()).To(Succeed(), "stdout: %s\nstderr: %s", stdout.String(), stderr.String())
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	g.Expect(lines).To(HaveLen(2), stdout.String())
	tenantNS := lines[0]
	g.Expect(tenantNS).To(HavePrefix("e2e-"))
	g.Expect(lines[1]).To(Equal("configmap/readme created"))
	g.Expect(stderr.String()).To(MatchRegexp(`namespaceclaim %s/nsc-[0-9a-f]+ deleted`, ns), "release found the claim made from this directory")
	g.Eventually(func() []tenancyv1alpha1.NamespaceClaim {
		var claims tenancyv1alpha1.NamespaceClaimList
		g.Expect(admin.List(ctx, &claims, client.InNamespace(ns))).To(Succeed())
		return claims.Items
	}).WithTimeout(90*time.Second).Should(BeEmpty(), "no claim is left")
	g.Eventually(gone(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: tenantNS}})).WithTimeout(90 * time.Second).Should(BeTrue())
}
