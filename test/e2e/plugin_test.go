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

// The kubectl-nsclaim plugin, run as its built binary by a pipeline identity that holds nothing but the
// shipped pipeline ClusterRole (made by the plugin's own pipeline-identity command): claim, wait,
// kubeconfig, refusal and timeout exit codes, extend, release, reuse of an expired name, and keyless.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
	"github.com/nsclaim/nsclaim-operator/internal/cli"
)

// The shipped pipeline ClusterRoles, as config/local (and config/default) name them.
const (
	pipelineRole        = "nsclaim-operator-pipeline-role"
	pipelineKeylessRole = "nsclaim-operator-pipeline-keyless-role"
)

var (
	pluginOnce sync.Once
	pluginPath string
	pluginErr  error
)

// pluginBin is the plugin under test: $NSCLAIM_PLUGIN (hack/test-local.sh builds it), else built here.
func pluginBin(t testing.TB) string {
	t.Helper()
	pluginOnce.Do(func() {
		if pluginPath = os.Getenv("NSCLAIM_PLUGIN"); pluginPath != "" {
			return
		}
		dir, err := os.MkdirTemp("", "kubectl-nsclaim-")
		if err != nil {
			pluginErr = err
			return
		}
		pluginPath = filepath.Join(dir, cli.PluginCommand)
		out, err := exec.Command("go", "build", "-o", pluginPath, "../../cmd/kubectl-nsclaim").CombinedOutput()
		if err != nil {
			pluginErr = fmt.Errorf("building the plugin: %v: %s", err, out)
		}
	})
	NewWithT(t).Expect(pluginErr).NotTo(HaveOccurred())
	return pluginPath
}

// pathWithTools is a PATH where kubectl and kubectl-nsclaim are the binaries under test, so that
// "kubectl nsclaim" and a kubeconfig's exec plugin find them, as on a runner.
func pathWithTools(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	kubectlPath, err := exec.LookPath(kubectlBin())
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	abs, err := filepath.Abs(kubectlPath)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	NewWithT(t).Expect(os.Symlink(abs, filepath.Join(dir, "kubectl"))).To(Succeed())
	NewWithT(t).Expect(os.Symlink(pluginBin(t), filepath.Join(dir, cli.PluginCommand))).To(Succeed())
	return dir + string(os.PathListSeparator) + os.Getenv("PATH")
}

// result is one run of the plugin.
type result struct {
	stdout, stderr string
	code           int
}

func (r result) String() string {
	return fmt.Sprintf("exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
}

// runPlugin runs the plugin with kubeconfig and args, extra environment variables added; it fails the
// test if the plugin does not end within 4 minutes.
func runPlugin(t testing.TB, kubeconfig string, env []string, args ...string) result {
	t.Helper()
	cctx, cancel := context.WithTimeout(ctx, 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(cctx, pluginBin(t), append([]string{"--kubeconfig", kubeconfig}, args...)...)
	cmd.Env = append(append(os.Environ(), "KUBECACHEDIR="+t.TempDir()), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	NewWithT(t).Expect(cctx.Err()).NotTo(HaveOccurred(), "kubectl-nsclaim %v did not end", args)
	code := 0
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) {
		code = exitErr.ExitCode()
	} else if err != nil {
		t.Fatalf("running kubectl-nsclaim: %v", err)
	}
	return result{stdout: stdout.String(), stderr: stderr.String(), code: code}
}

// pluginPipeline makes a requester namespace and, as the admin, a pipeline identity in it with the
// plugin's pipeline-identity command (the shipped pipeline ClusterRole, nothing else). It returns the
// namespace and the identity's kubeconfig.
func pluginPipeline(t testing.TB, name string) (string, string) {
	t.Helper()
	t.Cleanup(func() { checkInvariants(t) })
	g := NewWithT(t)
	ns := fmt.Sprintf("%s-%d", name, time.Now().UnixNano()%100000)
	g.Expect(admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	t.Cleanup(func() {
		_ = admin.Delete(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	})
	path := filepath.Join(t.TempDir(), "pipeline.kubeconfig")
	r := runPlugin(t, os.Getenv("KUBECONFIG"), nil, "pipeline-identity", ns, "--duration", "1h", "-w", path)
	g.Expect(r.code).To(Equal(0), r.String())
	g.Expect(r.stdout).To(BeEmpty(), "the kubeconfig went to the file, and nothing else to stdout")
	g.Expect(r.stderr).To(ContainSubstring("expires"))
	// The token is bounded: it expires after about the hour asked for.
	kc, err := clientcmd.LoadFromFile(path)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(kc.AuthInfos).To(HaveLen(1))
	for _, a := range kc.AuthInfos {
		exp, err := cli.JWTExpiry(a.Token)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(time.Until(exp)).To(BeNumerically("~", time.Hour, 2*time.Minute))
	}
	g.Expect(kc.Contexts[kc.CurrentContext].Namespace).To(Equal(ns))
	return ns, path
}

func claimOf(g Gomega, ns, name string) *tenancyv1alpha1.NamespaceClaim {
	c := &tenancyv1alpha1.NamespaceClaim{}
	g.Expect(admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, c)).To(Succeed())
	return c
}

// TestPluginClaimUseExtendRelease: the whole life of a token-mode claim through the plugin, as a
// pipeline identity holding only the shipped pipeline role.
func TestPluginClaimUseExtendRelease(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ns, pipelineKC := pluginPipeline(t, "plugin")
	tenantKC := filepath.Join(t.TempDir(), "ns.kubeconfig")

	r := runPlugin(t, pipelineKC, nil, "claim", "run-1", "--class", className, "--ttl", "30m", "--write-kubeconfig", tenantKC)
	g.Expect(r.code).To(Equal(0), r.String())
	claim := claimOf(g, ns, "run-1")
	g.Expect(r.stdout).To(Equal(claim.Status.Namespace+"\n"), "stdout holds the namespace's name and nothing else")
	g.Expect(r.stderr).To(ContainSubstring("is Ready"))
	tenantNS := claim.Status.Namespace
	info, err := os.Stat(tenantKC)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(info.Mode().Perm()).To(Equal(os.FileMode(0o600)))

	// The kubeconfig command hands out the same kubeconfig, the credentials Secret's.
	r = runPlugin(t, pipelineKC, nil, "kubeconfig", "run-1")
	g.Expect(r.code).To(Equal(0), r.stderr)
	written, err := os.ReadFile(tenantKC)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(r.stdout).To(Equal(string(written)))

	// The kubeconfig works in the namespace and nowhere else.
	out, err := kubectl(tenantKC, "-n", tenantNS, "create", "configmap", "from-plugin", "--from-literal=a=b")
	g.Expect(err).NotTo(HaveOccurred(), out)
	out, err = kubectl(tenantKC, "-n", ns, "create", "configmap", "escape")
	expectForbidden(g, out, err, "the tenant creating a ConfigMap in the requester namespace")
	out, err = kubectl(tenantKC, "-n", "default", "get", "secrets")
	expectForbidden(g, out, err, "the tenant listing Secrets in default")
	// The pipeline identity is confined to its namespace too: the plugin says Forbidden with its code.
	r = runPlugin(t, pipelineKC, nil, "-n", "default", "list")
	g.Expect(r.code).To(Equal(cli.ExitForbidden), r.String())
	r = runPlugin(t, pipelineKC, nil, "-n", "default", "claim", "escape", "--class", className)
	g.Expect(r.code).To(Equal(cli.ExitForbidden), r.String())
	out, err = kubectl(pipelineKC, "-n", tenantNS, "get", "configmaps")
	expectForbidden(g, out, err, "the pipeline identity reading the tenant namespace")

	// A re-run of the same name uses the claim; --if-exists=fail refuses it.
	r = runPlugin(t, pipelineKC, nil, "claim", "run-1", "--class", className)
	g.Expect(r.code).To(Equal(0), r.String())
	g.Expect(r.stdout).To(Equal(tenantNS + "\n"))
	g.Expect(claimOf(g, ns, "run-1").UID).To(Equal(claim.UID))
	r = runPlugin(t, pipelineKC, nil, "claim", "run-1", "--if-exists", "fail")
	g.Expect(r.code).To(Equal(cli.ExitExists), r.String())

	// list and why.
	r = runPlugin(t, pipelineKC, nil, "list", "--mine", "-o", "name")
	g.Expect(r.code).To(Equal(0), r.String())
	g.Expect(r.stdout).To(Equal("run-1\n"))
	r = runPlugin(t, pipelineKC, nil, "why", "run-1")
	g.Expect(r.code).To(Equal(0), r.String())
	g.Expect(r.stdout).To(ContainSubstring("namespaceclaim " + ns + "/run-1: Ready"))
	g.Expect(r.stdout).To(ContainSubstring("Ready=True"))

	// extend raises spec.ttl; the expiry moves by as much.
	before := claimOf(g, ns, "run-1").Status.ExpiresAt.Time
	r = runPlugin(t, pipelineKC, nil, "extend", "run-1", "--by", "1h")
	g.Expect(r.code).To(Equal(0), r.String())
	after := claimOf(g, ns, "run-1")
	g.Expect(after.Spec.TTL.Duration).To(Equal(90 * time.Minute))
	g.Expect(after.Status.ExpiresAt.Time).To(Equal(before.Add(time.Hour)))
	g.Expect(r.stdout).To(Equal(after.Status.ExpiresAt.UTC().Format(time.RFC3339) + "\n"))
	// Beyond the class's maxTTL (168h by default): refused, and spec.ttl is set back.
	r = runPlugin(t, pipelineKC, nil, "extend", "run-1", "--by", "200h")
	g.Expect(r.code).To(Equal(cli.ExitRefused), r.String())
	g.Expect(r.stderr).To(ContainSubstring(tenancyv1alpha1.TTLExceedsMaximumReason))
	g.Expect(r.stderr).To(ContainSubstring("who must act: " + cli.ActorPipeline))
	g.Expect(claimOf(g, ns, "run-1").Spec.TTL.Duration).To(Equal(90 * time.Minute))
	r = runPlugin(t, pipelineKC, nil, "kubeconfig", "run-1", "--timeout", "90s")
	g.Expect(r.code).To(Equal(0), "the claim is Ready again after the refused extension: %s", r)

	// release --wait returns once the claim and its namespace are gone.
	r = runPlugin(t, pipelineKC, nil, "release", "run-1", "--wait")
	g.Expect(r.code).To(Equal(0), r.String())
	g.Expect(r.stdout).To(BeEmpty())
	g.Expect(gone(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: tenantNS}})()).To(BeTrue())
	g.Expect(gone(&tenancyv1alpha1.NamespaceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "run-1"}})()).To(BeTrue())
	r = runPlugin(t, pipelineKC, nil, "release", "run-1")
	g.Expect(r.code).To(Equal(0), "a clean-up step may release twice: %s", r)
	r = runPlugin(t, pipelineKC, nil, "release", "run-1", "--ignore-not-found=false")
	g.Expect(r.code).To(Equal(cli.ExitNotFound), r.String())
	r = runPlugin(t, pipelineKC, nil, "kubeconfig", "run-1")
	g.Expect(r.code).To(Equal(cli.ExitNotFound), r.String())
	g.Expect(r.stdout).To(BeEmpty())
}

// TestPluginRefusalAndTimeout: a refused claim fails at once with exit code 3, its reason, message and
// who must act; a release held by a finalizer times out with exit code 4, and why names the finalizer.
func TestPluginRefusalAndTimeout(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ns, pipelineKC := pluginPipeline(t, "plugin-refused")

	start := time.Now()
	r := runPlugin(t, pipelineKC, nil, "claim", "too-long", "--class", className, "--ttl", "200h", "--timeout", "3m")
	took := time.Since(start)
	g.Expect(r.code).To(Equal(cli.ExitRefused), r.String())
	g.Expect(r.stdout).To(BeEmpty())
	g.Expect(r.stderr).To(ContainSubstring(tenancyv1alpha1.TTLExceedsMaximumReason))
	g.Expect(r.stderr).To(ContainSubstring("exceeds the maximum"))
	g.Expect(r.stderr).To(ContainSubstring("who must act: " + cli.ActorPipeline))
	t.Logf("refused after %s (the timeout was 3m)", took.Round(10*time.Millisecond))
	r = runPlugin(t, pipelineKC, nil, "claim", "no-class", "--class", "no-such-class-"+ns)
	g.Expect(r.code).To(Equal(cli.ExitRefused), r.String())
	g.Expect(r.stderr).To(ContainSubstring(tenancyv1alpha1.ClassNotFoundReason))

	// A namespace held by a finalizer of the tenant's: release --wait times out, why says what holds it.
	tenantKC := filepath.Join(t.TempDir(), "ns.kubeconfig")
	r = runPlugin(t, pipelineKC, nil, "claim", "held", "--class", className, "--write-kubeconfig", tenantKC)
	g.Expect(r.code).To(Equal(0), r.String())
	tenantNS := strings.TrimSpace(r.stdout)
	held := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "held", Namespace: tenantNS, Finalizers: []string{"e2e.nsclaim.dev/hold"}}}
	g.Expect(admin.Create(ctx, held)).To(Succeed())
	release := func() {
		_ = admin.Get(ctx, client.ObjectKeyFromObject(held), held)
		held.Finalizers = nil
		_ = admin.Update(ctx, held)
	}
	t.Cleanup(release)
	r = runPlugin(t, pipelineKC, nil, "release", "held", "--wait", "--timeout", "5s")
	g.Expect(r.code).To(Equal(cli.ExitTimeout), r.String())
	g.Expect(r.stderr).To(ContainSubstring("timed out"))
	r = runPlugin(t, pipelineKC, nil, "why", "held")
	g.Expect(r.code).To(Equal(0), r.String())
	g.Expect(r.stdout).To(ContainSubstring("Deleting"))
	g.Expect(r.stdout).To(ContainSubstring("blocked by finalizers " + tenancyv1alpha1.ClaimFinalizer))
	// Claiming the name again waits for the deletion, and times out too.
	r = runPlugin(t, pipelineKC, nil, "claim", "held", "--class", className, "--timeout", "3s")
	g.Expect(r.code).To(Equal(cli.ExitTimeout), r.String())
	release()
	r = runPlugin(t, pipelineKC, nil, "release", "held", "--wait", "--timeout", "2m")
	g.Expect(r.code).To(Equal(0), r.String())
}

// TestPluginReusesAnExpiredName: an expired claim keeps its name; claiming the name again deletes it
// and claims anew, with no hand-made delete.
func TestPluginReusesAnExpiredName(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ns, pipelineKC := pluginPipeline(t, "plugin-expired")
	r := runPlugin(t, pipelineKC, nil, "claim", "nightly", "--class", className, "--ttl", "1m")
	g.Expect(r.code).To(Equal(0), r.String())
	first := claimOf(g, ns, "nightly")
	g.Eventually(func(g Gomega) {
		c := claimOf(g, ns, "nightly")
		g.Expect(cli.Classify(c).Phase).To(Equal(cli.PhaseExpired))
	}).WithTimeout(3 * time.Minute).WithPolling(2 * time.Second).Should(Succeed())
	// kubeconfig and extend of an expired claim: refused, with what to do.
	r = runPlugin(t, pipelineKC, nil, "kubeconfig", "nightly")
	g.Expect(r.code).To(Equal(cli.ExitRefused), r.String())
	g.Expect(r.stderr).To(ContainSubstring("claim again"))
	r = runPlugin(t, pipelineKC, nil, "extend", "nightly", "--by", "1h")
	g.Expect(r.code).To(Equal(cli.ExitRefused), r.String())

	r = runPlugin(t, pipelineKC, nil, "claim", "nightly", "--class", className, "--ttl", "10m", "-o", "json")
	g.Expect(r.code).To(Equal(0), r.String())
	g.Expect(r.stderr).To(ContainSubstring("Expired"))
	var got tenancyv1alpha1.NamespaceClaim
	g.Expect(json.Unmarshal([]byte(r.stdout), &got)).To(Succeed(), "stdout is the claim's JSON and nothing else")
	g.Expect(got.UID).NotTo(Equal(first.UID))
	g.Expect(cli.Classify(&got).Phase).To(Equal(cli.PhaseReady))
	r = runPlugin(t, pipelineKC, nil, "release", "nightly", "--wait")
	g.Expect(r.code).To(Equal(0), r.String())
}

// TestPluginTimesOutWaiting: --timeout ends a wait for Ready with exit code 4; the claim stays, and
// --if-exists=recreate replaces it.
func TestPluginTimesOutWaiting(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ns, pipelineKC := pluginPipeline(t, "plugin-timeout")
	r := runPlugin(t, pipelineKC, nil, "claim", "quick", "--class", className, "--timeout", "1ms")
	g.Expect(r.code).To(Equal(cli.ExitTimeout), r.String())
	g.Expect(r.stdout).To(BeEmpty())
	first := claimOf(g, ns, "quick")
	// --if-exists=recreate deletes the claim, waits until it is gone, and claims anew.
	r = runPlugin(t, pipelineKC, nil, "claim", "quick", "--class", className, "--if-exists", "recreate")
	g.Expect(r.code).To(Equal(0), r.String())
	g.Expect(r.stderr).To(ContainSubstring("deleting it to claim again"))
	second := claimOf(g, ns, "quick")
	g.Expect(second.UID).NotTo(Equal(first.UID))
	g.Expect(r.stdout).To(Equal(second.Status.Namespace + "\n"))
	r = runPlugin(t, pipelineKC, nil, "release", "quick", "--wait")
	g.Expect(r.code).To(Equal(0), r.String())
}
