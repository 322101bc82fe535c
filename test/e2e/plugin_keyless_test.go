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
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
	"github.com/nsclaim/nsclaim-operator/internal/cli"
)

// fakeGitHubOIDC serves GitHub Actions' ID token endpoint on loopback: for the request token it hands
// out and the audience asked for, it answers {"value": <a fresh token of ServiceAccount sa>}, standing
// in for GitHub's ID token (the local cluster trusts no OIDC issuer; test/oidc runs a real one). It
// returns the environment a runner gives a job with id-token: write, and how many tokens it served.
func fakeGitHubOIDC(t *testing.T, sa *corev1.ServiceAccount, audience string) ([]string, func() int) {
	t.Helper()
	requestToken := fmt.Sprintf("request-%d", time.Now().UnixNano())
	var (
		mu     sync.Mutex
		served int
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "bearer "+requestToken || r.URL.Query().Get("audience") != audience || r.URL.Query().Get("api-version") == "" {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		tr := &authenticationv1.TokenRequest{}
		if err := admin.SubResource("token").Create(ctx, sa, tr); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		mu.Lock()
		served++
		mu.Unlock()
		_ = json.NewEncoder(w).Encode(map[string]string{"value": tr.Status.Token})
	}))
	t.Cleanup(srv.Close)
	env := []string{"ACTIONS_ID_TOKEN_REQUEST_URL=" + srv.URL + "/token?api-version=2.0", "ACTIONS_ID_TOKEN_REQUEST_TOKEN=" + requestToken}
	return env, func() int { mu.Lock(); defer mu.Unlock(); return served }
}

// kubectlEnv runs the kubectl under test with a kubeconfig and extra environment variables.
func kubectlEnv(kubeconfig string, env []string, args ...string) (string, error) {
	cmd := exec.Command(kubectlBin(), append([]string{"--kubeconfig", kubeconfig}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// keylessPluginPipeline makes a requester namespace with a ServiceAccount bound to the shipped keyless
// pipeline role (with the plugin's pipeline-identity --role), a class of credentials mode Requester
// that admits it, and the kubeconfig a keyless job has: the cluster's address and CA, and as user the
// plugin's exec credential plugin fetching GitHub-shaped ID tokens. It returns the namespace, the
// class, that kubeconfig, the job's environment and the counter of ID tokens served.
func keylessPluginPipeline(t *testing.T, name, audience string) (string, string, string, []string, func() int) {
	t.Helper()
	t.Cleanup(func() { checkInvariants(t) })
	g := NewWithT(t)
	ns := fmt.Sprintf("%s-%d", name, time.Now().UnixNano()%100000)
	g.Expect(admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	t.Cleanup(func() { _ = admin.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}) })
	staticKC := filepath.Join(t.TempDir(), "static.kubeconfig")
	r := runPlugin(t, os.Getenv("KUBECONFIG"), nil, "pipeline-identity", ns, "--name", "ci", "--role", pipelineKeylessRole, "--duration", "10m", "-w", staticKC)
	g.Expect(r.code).To(Equal(0), r.String())
	class := newClass(t, ns, tenancyv1alpha1.NamespaceClassSpec{
		ClusterRole: "edit", Naming: tenancyv1alpha1.NamingSpec{Prefix: "klp-"}, PodSecurity: tenancyv1alpha1.PodSecurityRestricted,
		Credentials: tenancyv1alpha1.CredentialsSpec{Mode: tenancyv1alpha1.CredentialsModeRequester,
			Requester: &tenancyv1alpha1.RequesterCredentials{AllowedUsernames: []string{"system:serviceaccount:" + ns + ":ci"}}},
	})
	env, served := fakeGitHubOIDC(t, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "ci", Namespace: ns}}, audience)
	env = append(env, "PATH="+pathWithTools(t))

	// The job's kubeconfig: no stored credential, the exec plugin asks for an ID token at every use.
	static, err := clientcmd.LoadFromFile(staticKC)
	g.Expect(err).NotTo(HaveOccurred())
	kc := clientcmdapi.NewConfig()
	for n, c := range static.Clusters {
		kc.Clusters[n] = c
		kc.AuthInfos["ci"] = cli.ExecAuth(cli.TokenSource{GitHubAudience: audience})
		kc.Contexts["ci"] = &clientcmdapi.Context{Cluster: n, AuthInfo: "ci", Namespace: ns}
	}
	kc.CurrentContext = "ci"
	path := filepath.Join(t.TempDir(), "keyless.kubeconfig")
	g.Expect(clientcmd.WriteToFile(*kc, path)).To(Succeed())
	return ns, class.Name, path, env, served
}

// TestPluginKeyless: a keyless pipeline (its identity is bound, no token is minted) claims with the
// plugin, authenticated by GitHub-shaped ID tokens fetched by "kubectl-nsclaim token" at every use;
// the kubeconfig the plugin prints works in the namespace with fresh ID tokens, nowhere else, and no
// Secret is written.
func TestPluginKeyless(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	const audience = "https://kubernetes.e2e.example"
	ns, class, pipelineKC, env, served := keylessPluginPipeline(t, "plugin-keyless", audience)
	stopWatch := watchSecrets(t, ns)

	r := runPlugin(t, pipelineKC, env, "claim", "run-1", "--class", class, "--exec-github-audience", audience, "-o", "kubeconfig")
	g.Expect(r.code).To(Equal(0), r.String())
	claim := claimOf(g, ns, "run-1")
	g.Expect(claim.Status.BoundUser).To(Equal("system:serviceaccount:" + ns + ":ci"))
	tenantKC := filepath.Join(t.TempDir(), "ns.kubeconfig")
	g.Expect(os.WriteFile(tenantKC, []byte(r.stdout), 0o600)).To(Succeed())
	kc, err := clientcmd.LoadFromFile(tenantKC)
	g.Expect(err).NotTo(HaveOccurred(), "stdout is the kubeconfig and nothing else")
	kctx := kc.Contexts[kc.CurrentContext]
	g.Expect(kctx.Namespace).To(Equal(claim.Status.Namespace))
	g.Expect(kc.AuthInfos[kctx.AuthInfo].Token).To(BeEmpty(), "no token is written into the kubeconfig")
	g.Expect(kc.AuthInfos[kctx.AuthInfo].Exec).NotTo(BeNil())

	before := served()
	out, err := kubectlEnv(tenantKC, env, "create", "configmap", "keyless-plugin", "--from-literal=a=b")
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Expect(served()).To(BeNumerically(">", before), "kubectl asked the CI for a fresh ID token")
	out, err = kubectlEnv(tenantKC, env, "-n", ns, "create", "configmap", "escape")
	expectForbidden(g, out, err, "the keyless identity creating a ConfigMap in its requester namespace")
	out, err = kubectlEnv(tenantKC, env, "-n", ns, "get", "secrets")
	expectForbidden(g, out, err, "the keyless identity reading Secrets of its requester namespace")

	r = runPlugin(t, pipelineKC, env, "release", "run-1", "--wait")
	g.Expect(r.code).To(Equal(0), r.String())
	g.Expect(stopWatch()).To(BeEmpty(), "nsclaim wrote a Secret next to a keyless claim")
	g.Expect(admin.Get(ctx, client.ObjectKey{Name: claim.Status.Namespace}, &corev1.Namespace{})).NotTo(Succeed())
}
