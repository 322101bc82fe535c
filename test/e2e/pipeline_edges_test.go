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

// Pipelines outside the happy path, as pipeline identities holding only the shipped roles: matrix legs
// of one run, a claim name that looks like a flag, hostile inputs of the GitLab component, another
// pipeline's claim of the same name, and a revoked token.

import (
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
	"github.com/nsclaim/nsclaim-operator/internal/cli"
)

// listener is a TCP listener on 127.0.0.1 that counts the connections made to it: a credential sent
// to it would arrive as one.
func listener(t *testing.T) (string, func() int64) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = l.Close() })
	var n atomic.Int64
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			n.Add(1)
			_ = c.Close()
		}
	}()
	return "http://" + l.Addr().String(), n.Load
}

func claimsIn(g Gomega, ns string) []tenancyv1alpha1.NamespaceClaim {
	var claims tenancyv1alpha1.NamespaceClaimList
	g.Expect(admin.List(ctx, &claims, client.InNamespace(ns))).To(Succeed())
	return claims.Items
}

// TestMatrixLegsGetTheirOwnNamespaces: two legs of one matrix job (the same run, attempt and job id;
// the Action's job-index tells them apart) claim at once; each gets its own claim and namespace, and
// one leg's post step leaves the other's namespace working.
func TestMatrixLegsGetTheirOwnNamespaces(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ns, pipelineKC := pluginPipeline(t, "matrix")
	secret, err := os.ReadFile(pipelineKC)
	g.Expect(err).NotTo(HaveOccurred())
	runID := time.Now().Format("150405")
	legs := []*runner{
		newRunner(t, "GITHUB_RUN_ID="+runID, "GITHUB_RUN_ATTEMPT=1", "GITHUB_JOB=test"),
		newRunner(t, "GITHUB_RUN_ID="+runID, "GITHUB_RUN_ATTEMPT=1", "GITHUB_JOB=test"),
	}
	codes, outs := make([]int, 2), make([]string, 2)
	var wg sync.WaitGroup
	for i, leg := range legs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			codes[i], outs[i] = leg.step(t, "main.js", map[string]string{"kubeconfig": string(secret), "class": className,
				"ttl": "30m", "job-index": []string{"0", "1"}[i]}, nil)
		}()
	}
	wg.Wait()
	g.Expect(codes).To(Equal([]int{0, 0}), "leg 0: %s\nleg 1: %s", outs[0], outs[1])
	out0, out1 := legs[0].file(t, "output"), legs[1].file(t, "output")
	g.Expect(out0["claim"]).To(Equal("gh-" + runID + "-1-test-0"))
	g.Expect(out1["claim"]).To(Equal("gh-" + runID + "-1-test-1"))
	g.Expect(out0["namespace"]).NotTo(Equal(out1["namespace"]))
	g.Expect(claimsIn(g, ns)).To(HaveLen(2))

	// Leg 0 ends: its post step releases its claim only.
	code, out := legs[0].step(t, "post.js", nil, legs[0].file(t, "state"))
	g.Expect(code).To(Equal(0), out)
	g.Eventually(gone(&tenancyv1alpha1.NamespaceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: out0["claim"]}})).WithTimeout(90 * time.Second).Should(BeTrue())
	kout, err := kubectl(out1["kubeconfig"], "create", "configmap", "leg-1-still-deploys")
	g.Expect(err).NotTo(HaveOccurred(), kout)
	g.Expect(cli.Classify(claimOf(g, ns, out1["claim"])).Phase).To(Equal(cli.PhaseReady))

	code, out = legs[1].step(t, "post.js", nil, legs[1].file(t, "state"))
	g.Expect(code).To(Equal(0), out)
	g.Eventually(func() []tenancyv1alpha1.NamespaceClaim { return claimsIn(g, ns) }).WithTimeout(90 * time.Second).Should(BeEmpty())
}

// TestAFlagShapedNameNeverReachesItsServer: a claim name such as a branch-derived
// "--server=http://127.0.0.1:PORT" is refused by the Action, the GitLab component and the plugin, and
// nothing connects to that port (a listener there counts), so the pipeline's token stays home.
func TestAFlagShapedNameNeverReachesItsServer(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ns, pipelineKC := pluginPipeline(t, "flagname")
	secret, err := os.ReadFile(pipelineKC)
	g.Expect(err).NotTo(HaveOccurred())
	url, connections := listener(t)
	hostile := "--server=" + url

	job := newRunner(t, "GITHUB_RUN_ID=1", "GITHUB_RUN_ATTEMPT=1", "GITHUB_JOB=flag")
	code, out := job.step(t, "main.js", map[string]string{"kubeconfig": string(secret), "class": className, "name": hostile}, nil)
	g.Expect(code).To(Equal(1), out)
	g.Expect(out).To(ContainSubstring(`input name must not start with "-"`))

	r := runPlugin(t, pipelineKC, nil, "claim", "--class", className, "--", hostile)
	g.Expect(r.code).To(Equal(cli.ExitUsage), r.String())
	g.Expect(r.stderr).To(ContainSubstring("is not a name"))
	for _, cmd := range []string{"release", "kubeconfig", "why", "extend"} {
		r = runPlugin(t, pipelineKC, nil, cmd, "--", hostile)
		g.Expect(r.code).To(Equal(cli.ExitUsage), "%s: %s", cmd, r.String())
	}

	jobs := gitlabComponent(t, map[string]string{"class": className, "name": hostile})
	dir := t.TempDir()
	code, out = runGitLabJob(t, jobs, "nsclaim-claim", dir, gitlabEnv(t, dir, pipelineKC))
	g.Expect(code).To(Equal(cli.ExitUsage), out)
	g.Expect(out).To(ContainSubstring("is not a name"), "the plugin refused the name as an argument")

	g.Expect(connections()).To(BeZero(), "something connected to the name's server")
	g.Expect(claimsIn(g, ns)).To(BeEmpty())
}

func gitlabEnv(t *testing.T, dir, pipelineKC string) []string {
	return []string{"GITLAB_CI=true", "CI_PROJECT_ID=4711", "CI_ENVIRONMENT_SLUG=review-x", "CI_COMMIT_REF_SLUG=x",
		"NSCLAIM_KUBECONFIG=" + pipelineKC, "PATH=" + pathWithTools(t), "KUBECACHEDIR=" + t.TempDir(), "CI_PROJECT_DIR=" + dir, "CI_JOB_ID=9"}
}

// TestGitLabComponentInputsAreData: each input the component's scripts use, given a value that would
// run a command if it were spliced in as shell, fails the claim job with a usage error (exit 2), runs
// nothing and claims nothing.
func TestGitLabComponentInputsAreData(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ns, pipelineKC := pluginPipeline(t, "glhostile")
	for input, value := range map[string]string{
		"class":               `x"; touch pwned; echo "`,
		"ttl":                 "1h$(touch pwned)",
		"timeout":             "1m`touch pwned`",
		"if-exists":           "use; touch pwned",
		"requester-namespace": "x$(touch pwned)",
		"version":             "0.4.0$(touch pwned)",
		"name":                "x$(touch pwned)",
	} {
		dir := t.TempDir()
		jobs := gitlabComponent(t, map[string]string{"class": className, input: value})
		code, out := runGitLabJob(t, jobs, "nsclaim-claim", dir, gitlabEnv(t, dir, pipelineKC))
		g.Expect(code).To(Equal(cli.ExitUsage), "%s=%q: %s", input, value, out)
		if input == "name" {
			g.Expect(out).To(ContainSubstring("is not a name"), "the plugin refused the name as an argument")
		} else {
			g.Expect(out).To(ContainSubstring("nsclaim: input "+input+" is not valid"), "%s=%q: %s", input, value, out)
		}
		g.Expect(filepath.Join(dir, "pwned")).NotTo(BeAnExistingFile(), "%s=%q ran a command", input, value)
	}
	g.Expect(claimsIn(g, ns)).To(BeEmpty())
}

// TestAnotherPipelinesClaimIsNotReused: two pipeline identities share a requester namespace; the
// second one's claim of the first one's name exits 7 and leaves the claim alone, while the first one
// reuses its own.
func TestAnotherPipelinesClaimIsNotReused(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ns, first := pluginPipeline(t, "twopipes")
	second := filepath.Join(t.TempDir(), "second.kubeconfig")
	r := runPlugin(t, os.Getenv("KUBECONFIG"), nil, "pipeline-identity", ns, "--name", "second-pipeline", "--duration", "1h", "-w", second)
	g.Expect(r.code).To(Equal(0), r.String())

	r = runPlugin(t, first, nil, "claim", "--class", className, "--ttl", "30m", "--", "shared")
	g.Expect(r.code).To(Equal(0), r.String())
	claim := claimOf(g, ns, "shared")

	r = runPlugin(t, second, nil, "claim", "--class", className, "--", "shared")
	g.Expect(r.code).To(Equal(cli.ExitExists), r.String())
	g.Expect(r.stderr).To(ContainSubstring("it is not this caller's"))
	g.Expect(r.stdout).To(BeEmpty(), "no namespace handed out")
	after := claimOf(g, ns, "shared")
	g.Expect(after.UID).To(Equal(claim.UID))
	g.Expect(after.Generation).To(Equal(claim.Generation))

	// Its own claim: reused, and a --ttl of another value is a usage error that says why.
	r = runPlugin(t, first, nil, "claim", "--class", className, "--", "shared")
	g.Expect(r.code).To(Equal(0), r.String())
	g.Expect(r.stdout).To(Equal(claim.Status.Namespace + "\n"))
	r = runPlugin(t, first, nil, "claim", "--ttl", "2h", "--", "shared")
	g.Expect(r.code).To(Equal(cli.ExitUsage), r.String())
	g.Expect(r.stderr).To(ContainSubstring("kubectl nsclaim extend"))

	r = runPlugin(t, first, nil, "release", "--", "shared")
	g.Expect(r.code).To(Equal(0), r.String())
}

// TestRevokedPipelineTokenExits5: a pipeline identity whose ServiceAccount was deleted (its tokens
// revoked) gets exit 5 and the message that says so, not "any other error".
func TestRevokedPipelineTokenExits5(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ns, pipelineKC := pluginPipeline(t, "revoked")
	r := runPlugin(t, pipelineKC, nil, "list")
	g.Expect(r.code).To(Equal(0), r.String())
	g.Expect(admin.Delete(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "nsclaim-pipeline"}})).To(Succeed())
	g.Eventually(func() int { return runPlugin(t, pipelineKC, nil, "list").code }).WithTimeout(60 * time.Second).Should(Equal(cli.ExitForbidden))
	r = runPlugin(t, pipelineKC, nil, "claim", "--class", className, "--", "after-revocation")
	g.Expect(r.code).To(Equal(cli.ExitForbidden), r.String())
	g.Expect(r.stderr).To(ContainSubstring(cli.UnauthorizedHint))
	g.Expect(claimsIn(g, ns)).To(BeEmpty())
}
