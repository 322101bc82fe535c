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

// Package e2e runs nsclaim's CI story against a whole cluster taken from KUBECONFIG (the local cluster
// of `make test-local`, or kind with `make test-e2e`), with the operator already running under the
// RBAC it ships with. It needs garbage collection and namespace finalisation, which envtest lacks.
package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
	"github.com/nsclaim/nsclaim-operator/internal/cli"
	"github.com/nsclaim/nsclaim-operator/internal/testenv"
)

var (
	ctx    = context.Background()
	scheme = runtime.NewScheme()
	admin  client.Client
	cfg    *rest.Config
)

const className = "e2e"

func TestMain(m *testing.M) {
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(tenancyv1alpha1.AddToScheme(scheme))
	if os.Getenv("KUBECONFIG") == "" {
		fmt.Fprintln(os.Stderr, "KUBECONFIG is not set: run `make test-local` (local cluster) or `make test-e2e` (kind)")
		os.Exit(1)
	}
	var err error
	if cfg, err = clientcmd.BuildConfigFromFlags("", os.Getenv("KUBECONFIG")); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if admin, err = client.New(cfg, client.Options{Scheme: scheme}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	class := &tenancyv1alpha1.NamespaceClass{ObjectMeta: metav1.ObjectMeta{Name: className}, Spec: tenancyv1alpha1.NamespaceClassSpec{
		ClusterRole: "edit", Naming: tenancyv1alpha1.NamingSpec{Prefix: "e2e-"},
		NetworkPolicy: tenancyv1alpha1.NetworkPolicyDenyFromOtherNamespaces, PodSecurity: tenancyv1alpha1.PodSecurityRestricted,
	}}
	// The class of the ConfigMap protocol's requests: admin in the namespace, as the shell operator gave.
	requestsClass := &tenancyv1alpha1.NamespaceClass{ObjectMeta: metav1.ObjectMeta{Name: "nsplease"}, Spec: tenancyv1alpha1.NamespaceClassSpec{
		ClusterRole: "admin", PodSecurity: tenancyv1alpha1.PodSecurityBaseline,
	}}
	if err := admin.Create(ctx, requestsClass); err != nil && !apierrors.IsAlreadyExists(err) {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := admin.Create(ctx, class); err != nil && !apierrors.IsAlreadyExists(err) {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	// The plugin keeps a record of the claims it made (internal/cli, NSCLAIM_STATE_DIR): the suite's go
	// to a directory of its own, not to the user's cache.
	stateDir, err := os.MkdirTemp("", "nsclaim-e2e-state-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if os.Getenv(cli.StateDirEnv) == "" {
		_ = os.Setenv(cli.StateDirEnv, stateDir)
	}
	code := m.Run()
	if err := finalInvariants(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		code = 1
	}
	_ = os.RemoveAll(stateDir)
	os.Exit(code)
}

// pipeline is a CI identity that may only create and watch NamespaceClaims and read Secrets in its own
// namespace.
type pipeline struct {
	ns         string
	kubeconfig string
	client     client.Client
}

func newPipeline(t *testing.T, name string) *pipeline {
	t.Helper()
	g := NewWithT(t)
	ns := fmt.Sprintf("%s-%d", name, time.Now().UnixNano()%100000)
	g.Expect(admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "pipeline", Namespace: ns}}
	g.Expect(admin.Create(ctx, sa)).To(Succeed())
	g.Expect(admin.Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "pipeline", Namespace: ns}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{tenancyv1alpha1.GroupVersion.Group}, Resources: []string{"namespaceclaims"}, Verbs: []string{"create", "get", "list", "watch", "delete"}},
		{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get"}},
	}})).To(Succeed())
	g.Expect(admin.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "pipeline", Namespace: ns},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "pipeline"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "pipeline", Namespace: ns}}})).To(Succeed())
	p := &pipeline{ns: ns}
	p.kubeconfig, p.client = loginAs(t, sa, ns)
	// The API server's RBAC authorizer learns of the new binding from its own informer: wait until the
	// pipeline may create claims, as a pipeline whose admin just granted it would, so that no test
	// races the grant.
	g.Expect(testenv.WaitAllowed(ctx, p.client, "", authorizationv1.ResourceAttributes{Namespace: ns, Verb: "create",
		Group: tenancyv1alpha1.GroupVersion.Group, Resource: "namespaceclaims"}, 30*time.Second)).To(Succeed())
	return p
}

// loginAs mints a token of sa and returns a kubeconfig with it (default namespace ns) and a client
// that acts with it, as the pipeline holding that token would.
func loginAs(t *testing.T, sa *corev1.ServiceAccount, ns string) (string, client.Client) {
	t.Helper()
	t.Cleanup(func() { checkInvariants(t) })
	g := NewWithT(t)
	tr := &authenticationv1.TokenRequest{}
	g.Expect(admin.SubResource("token").Create(ctx, sa, tr)).To(Succeed())
	kubeconfig := writeKubeconfig(t, tr.Status.Token, ns)
	pcfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	g.Expect(err).NotTo(HaveOccurred())
	c, err := client.New(pcfg, client.Options{Scheme: scheme})
	g.Expect(err).NotTo(HaveOccurred())
	return kubeconfig, c
}

func writeKubeconfig(t *testing.T, token, ns string) string {
	kc := clientcmdapi.NewConfig()
	ca := cfg.CAData
	if len(ca) == 0 && cfg.CAFile != "" {
		ca, _ = os.ReadFile(cfg.CAFile)
	}
	kc.Clusters["c"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: ca}
	kc.AuthInfos["u"] = &clientcmdapi.AuthInfo{Token: token}
	kc.Contexts["x"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u", Namespace: ns}
	kc.CurrentContext = "x"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	NewWithT(t).Expect(clientcmd.WriteToFile(*kc, path)).To(Succeed())
	return path
}

// kubectl runs the kubectl under test with a kubeconfig, as a shell pipeline would.
func kubectl(kubeconfig string, args ...string) (string, error) {
	cmd := exec.Command(kubectlBin(), append([]string{"--kubeconfig", kubeconfig}, args...)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// kubectlBin is the kubectl under test: $KUBECTL, else kubectl on the PATH.
func kubectlBin() string {
	if bin := os.Getenv("KUBECTL"); bin != "" {
		return bin
	}
	return "kubectl"
}

// claimAndWait creates a claim as the pipeline, waits for Ready with kubectl wait, and returns the
// tenant kubeconfig path, the claim and its namespace.
func claimAndWait(t *testing.T, p *pipeline, name string, ttl *metav1.Duration) (string, *tenancyv1alpha1.NamespaceClaim) {
	t.Helper()
	g := NewWithT(t)
	claim := &tenancyv1alpha1.NamespaceClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: p.ns}, Spec: tenancyv1alpha1.NamespaceClaimSpec{ClassName: className, TTL: ttl}}
	g.Expect(p.client.Create(ctx, claim)).To(Succeed())
	out, err := kubectl(p.kubeconfig, "wait", "--for=condition=Ready", "namespaceclaim/"+name, "--timeout=90s")
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Expect(p.client.Get(ctx, client.ObjectKeyFromObject(claim), claim)).To(Succeed())
	sec := &corev1.Secret{}
	g.Expect(p.client.Get(ctx, client.ObjectKey{Namespace: p.ns, Name: claim.Status.CredentialsSecretName}, sec)).To(Succeed())
	path := filepath.Join(t.TempDir(), "tenant.kubeconfig")
	g.Expect(os.WriteFile(path, sec.Data["kubeconfig"], 0o600)).To(Succeed())
	return path, claim
}

func gone(obj client.Object) func() bool {
	return func() bool { return apierrors.IsNotFound(admin.Get(ctx, client.ObjectKeyFromObject(obj), obj)) }
}

func TestPipelineClaimsUsesAndDeletesANamespace(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	p := newPipeline(t, "pipeline")
	tenant, claim := claimAndWait(t, p, "pr-1", nil)
	ns := claim.Status.Namespace

	out, err := kubectl(tenant, "create", "configmap", "app-config", "--from-literal=a=b")
	g.Expect(err).NotTo(HaveOccurred(), out)
	out, err = kubectl(tenant, "create", "deployment", "web", "--image=registry.k8s.io/pause:3.10")
	g.Expect(err).NotTo(HaveOccurred(), out)
	out, err = kubectl(tenant, "get", "configmap", "app-config", "-n", ns)
	g.Expect(err).NotTo(HaveOccurred(), out)
	out, err = kubectl(tenant, "create", "configmap", "x", "-n", "default")
	g.Expect(err).To(HaveOccurred())
	g.Expect(out).To(ContainSubstring("forbidden"))
	out, err = kubectl(tenant, "get", "secrets", "-n", p.ns)
	g.Expect(err).To(HaveOccurred())
	g.Expect(out).To(ContainSubstring("forbidden"))
	for _, res := range []string{"namespaces", "nodes", "clusterroles"} {
		out, err = kubectl(tenant, "get", res)
		g.Expect(err).To(HaveOccurred(), res)
		g.Expect(out).To(ContainSubstring("forbidden"), res)
	}

	g.Expect(p.client.Delete(ctx, claim)).To(Succeed())
	g.Eventually(gone(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).WithTimeout(90 * time.Second).WithPolling(time.Second).Should(BeTrue())
	g.Eventually(gone(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: p.ns, Name: claim.Status.CredentialsSecretName}})).WithTimeout(30 * time.Second).Should(BeTrue())
	g.Eventually(gone(&tenancyv1alpha1.NamespaceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: p.ns, Name: claim.Name}})).WithTimeout(30 * time.Second).Should(BeTrue())
}

func TestTenantReleasesItsNamespace(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	p := newPipeline(t, "release")
	tenant, claim := claimAndWait(t, p, "release-me", nil)
	// Another namespace that exists (the requester's own): Forbidden, not NotFound.
	out, err := kubectl(tenant, "delete", "namespace", p.ns, "--wait=false")
	g.Expect(err).To(HaveOccurred(), "deleting another namespace is denied: %s", out)
	g.Expect(out).To(ContainSubstring("forbidden"))
	out, err = kubectl(tenant, "delete", "namespace", claim.Status.Namespace, "--wait=false")
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Eventually(gone(&tenancyv1alpha1.NamespaceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: p.ns, Name: claim.Name}})).WithTimeout(90 * time.Second).WithPolling(time.Second).Should(BeTrue())
	g.Eventually(gone(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: p.ns, Name: claim.Status.CredentialsSecretName}})).WithTimeout(30 * time.Second).Should(BeTrue())
	g.Eventually(gone(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: claim.Status.Namespace}})).WithTimeout(90 * time.Second).Should(BeTrue())
}

func TestExpiryDeletesTheNamespaceAndKeepsTheClaim(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	p := newPipeline(t, "expiry")
	_, claim := claimAndWait(t, p, "short", &metav1.Duration{Duration: time.Minute})
	g.Eventually(func(g Gomega) {
		c := &tenancyv1alpha1.NamespaceClaim{}
		g.Expect(admin.Get(ctx, client.ObjectKeyFromObject(claim), c)).To(Succeed())
		r := meta.FindStatusCondition(c.Status.Conditions, tenancyv1alpha1.ReadyCondition)
		g.Expect(r).NotTo(BeNil())
		g.Expect(r.Reason).To(Equal(tenancyv1alpha1.ExpiredReason))
	}).WithTimeout(3 * time.Minute).WithPolling(2 * time.Second).Should(Succeed())
	g.Eventually(gone(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: claim.Status.Namespace}})).WithTimeout(90 * time.Second).WithPolling(time.Second).Should(BeTrue())
	c := &tenancyv1alpha1.NamespaceClaim{}
	g.Expect(admin.Get(ctx, client.ObjectKeyFromObject(claim), c)).To(Succeed(), "an expired claim stays until deleted")
}
