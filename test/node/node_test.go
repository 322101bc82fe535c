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

// Package node runs nsclaim where users run it: the operator as a Pod (deployed with kustomize from
// config/default, in-cluster configuration, leader election in-cluster) on a real node of the local
// cluster (hack/local-node.sh: containerd, runc, kubelet, kube-proxy), driven by `make test-node`
// (hack/test-node.sh), which sets:
//
//	KUBECONFIG             the admin kubeconfig
//	NODE_APISERVER_URL     the API server's address as clients outside the cluster reach it
//	NODE_PIPELINE_IMAGE    the image of test/node/pipeline
//	NODE_WORKLOAD_IMAGE    a tiny HTTP server (hack/tools/imagebuild/httpd)
//	NODE_OPERATOR_NAMESPACE the operator's namespace (nsclaim-operator-system)
//
// Without KUBECONFIG the cluster tests skip (NSCLAIM_REQUIRE_NODE=1 makes that a failure).
package node

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
)

var (
	ctx    = context.Background()
	scheme = runtime.NewScheme()
)

const className = "node"

func init() { logf.SetLogger(logr.Discard()) }

// cluster returns the admin client, or skips (fails with NSCLAIM_REQUIRE_NODE=1) without a cluster.
func cluster(t *testing.T) (client.Client, *rest.Config) {
	t.Helper()
	if os.Getenv("KUBECONFIG") == "" {
		if os.Getenv("NSCLAIM_REQUIRE_NODE") == "1" {
			t.Fatal("KUBECONFIG is not set (NSCLAIM_REQUIRE_NODE=1): run make test-node")
		}
		t.Skip("KUBECONFIG is not set: run make test-node")
	}
	g := NewWithT(t)
	g.Expect(clientgoscheme.AddToScheme(scheme)).To(Succeed())
	g.Expect(tenancyv1alpha1.AddToScheme(scheme)).To(Succeed())
	cfg, err := clientcmd.BuildConfigFromFlags("", os.Getenv("KUBECONFIG"))
	g.Expect(err).NotTo(HaveOccurred())
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	g.Expect(err).NotTo(HaveOccurred())
	class := &tenancyv1alpha1.NamespaceClass{ObjectMeta: metav1.ObjectMeta{Name: className}, Spec: tenancyv1alpha1.NamespaceClassSpec{
		ClusterRole: "edit", Naming: tenancyv1alpha1.NamingSpec{Prefix: "node-"},
		NetworkPolicy: tenancyv1alpha1.NetworkPolicyDenyFromOtherNamespaces, PodSecurity: tenancyv1alpha1.PodSecurityRestricted,
		ResourceQuota: &corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{
			corev1.ResourcePods: resource.MustParse("4"), corev1.ResourceLimitsCPU: resource.MustParse("200m"),
			corev1.ResourceLimitsMemory: resource.MustParse("256Mi"),
		}},
	}}
	if err := c.Create(ctx, class); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	return c, cfg
}

// newPipeline makes a CI identity in a namespace of its own: a ServiceAccount that may only create and
// read NamespaceClaims and read Secrets there (as test/e2e does).
func newPipeline(t *testing.T, c client.Client, name string) (string, *corev1.ServiceAccount) {
	t.Helper()
	g := NewWithT(t)
	ns := fmt.Sprintf("%s-%d", name, time.Now().UnixNano()%100000)
	g.Expect(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "pipeline", Namespace: ns}}
	g.Expect(c.Create(ctx, sa)).To(Succeed())
	g.Expect(c.Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "pipeline", Namespace: ns}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{tenancyv1alpha1.GroupVersion.Group}, Resources: []string{"namespaceclaims"}, Verbs: []string{"create", "get", "list", "watch", "delete"}},
		{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get"}},
	}})).To(Succeed())
	g.Expect(c.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "pipeline", Namespace: ns},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "pipeline"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "pipeline", Namespace: ns}}})).To(Succeed())
	return ns, sa
}

func token(t *testing.T, c client.Client, sa *corev1.ServiceAccount) string {
	t.Helper()
	tr := &authenticationv1.TokenRequest{}
	NewWithT(t).Expect(c.SubResource("token").Create(ctx, sa, tr)).To(Succeed())
	return tr.Status.Token
}

// TestOperatorRunsAsAPod: the manager Deployment from config/default is Available on the node, its
// Pod uses in-cluster configuration and holds the leader election Lease.
func TestOperatorRunsAsAPod(t *testing.T) {
	c, _ := cluster(t)
	g := NewWithT(t)
	ns := os.Getenv("NODE_OPERATOR_NAMESPACE")
	pods := &corev1.PodList{}
	g.Expect(c.List(ctx, pods, client.InNamespace(ns), client.MatchingLabels{"control-plane": "controller-manager"})).To(Succeed())
	g.Expect(pods.Items).To(HaveLen(1))
	pod := pods.Items[0]
	g.Expect(pod.Status.Phase).To(Equal(corev1.PodRunning))
	g.Expect(pod.Spec.NodeName).NotTo(BeEmpty())
	g.Eventually(func(g Gomega) {
		leases := &coordinationv1.LeaseList{}
		g.Expect(c.List(ctx, leases, client.InNamespace(ns))).To(Succeed())
		g.Expect(leases.Items).To(ContainElement(WithTransform(func(l coordinationv1.Lease) string {
			return ptr.Deref(l.Spec.HolderIdentity, "")
		}, HavePrefix(pod.Name))), "a Lease in the operator's namespace is held by its Pod")
	}, time.Minute, time.Second).Should(Succeed())
}

// TestPipelinePodClaimsAndDeploys: a pipeline running as a Pod, with only its ServiceAccount token,
// claims a namespace and deploys a workload with the handed kubeconfig; the Deployment becomes
// Available under the class's restricted Pod Security level and quota.
func TestPipelinePodClaimsAndDeploys(t *testing.T) {
	c, _ := cluster(t)
	g := NewWithT(t)
	ns, sa := newPipeline(t, c, "ci-pod")
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "pipeline", Namespace: ns},
		Spec: corev1.PodSpec{
			ServiceAccountName: sa.Name, RestartPolicy: corev1.RestartPolicyNever,
			SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true),
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
			Containers: []corev1.Container{{
				Name: "pipeline", Image: os.Getenv("NODE_PIPELINE_IMAGE"), ImagePullPolicy: corev1.PullNever,
				Env: []corev1.EnvVar{{Name: "CLAIM", Value: "pr-1"}, {Name: "CLASS", Value: className},
					{Name: "WORKLOAD_IMAGE", Value: os.Getenv("NODE_WORKLOAD_IMAGE")}},
				SecurityContext: &corev1.SecurityContext{AllowPrivilegeEscalation: ptr.To(false), ReadOnlyRootFilesystem: ptr.To(true),
					Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}},
			}},
		},
	}
	g.Expect(c.Create(ctx, pod)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(c.Get(ctx, client.ObjectKeyFromObject(pod), pod)).To(Succeed())
		g.Expect(pod.Status.Phase).To(BeElementOf(corev1.PodSucceeded, corev1.PodFailed))
	}, 4*time.Minute, time.Second).Should(Succeed())
	msg := ""
	if st := pod.Status.ContainerStatuses; len(st) == 1 && st[0].State.Terminated != nil {
		msg = st[0].State.Terminated.Message
	}
	t.Logf("pipeline Pod %s: %s", pod.Status.Phase, msg)
	g.Expect(pod.Status.Phase).To(Equal(corev1.PodSucceeded), msg)
	fields := strings.Fields(msg)
	g.Expect(fields).To(HaveLen(3))
	tenantNS := fields[1]

	claim := &tenancyv1alpha1.NamespaceClaim{}
	g.Expect(c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "pr-1"}, claim)).To(Succeed())
	g.Expect(claim.Status.Namespace).To(Equal(tenantNS))
	nsObj := &corev1.Namespace{}
	g.Expect(c.Get(ctx, client.ObjectKey{Name: tenantNS}, nsObj)).To(Succeed())
	g.Expect(nsObj.Labels).To(HaveKeyWithValue("pod-security.kubernetes.io/enforce", "restricted"))
	quotas := &corev1.ResourceQuotaList{}
	g.Expect(c.List(ctx, quotas, client.InNamespace(tenantNS))).To(Succeed())
	g.Expect(quotas.Items).NotTo(BeEmpty())
	g.Eventually(func(g Gomega) {
		g.Expect(c.List(ctx, quotas, client.InNamespace(tenantNS))).To(Succeed())
		used := quotas.Items[0].Status.Used[corev1.ResourcePods]
		g.Expect(used.Value()).To(BeEquivalentTo(2), "the workload's Pods count against the class's quota")
	}, 30*time.Second, time.Second).Should(Succeed())
	pods := &corev1.PodList{}
	g.Expect(c.List(ctx, pods, client.InNamespace(tenantNS), client.MatchingLabels{"app": "web"})).To(Succeed())
	for _, p := range pods.Items {
		g.Expect(p.Status.Phase).To(Equal(corev1.PodRunning))
		g.Expect(p.Spec.NodeName).NotTo(BeEmpty())
	}

	// A Pod the restricted level forbids is refused in the tenant namespace.
	root := pod.DeepCopy()
	root.ObjectMeta = metav1.ObjectMeta{Name: "root", Namespace: tenantNS}
	root.Spec.SecurityContext = nil
	root.Spec.ServiceAccountName, root.Spec.DeprecatedServiceAccount, root.Spec.NodeName = "", "", ""
	root.Spec.AutomountServiceAccountToken = ptr.To(false)
	root.Spec.Containers[0].SecurityContext = nil
	err := c.Create(ctx, root)
	g.Expect(err).To(HaveOccurred())
	g.Expect(err.Error()).To(ContainSubstring("restricted"))

	g.Expect(c.Delete(ctx, claim)).To(Succeed())
	g.Eventually(func() bool {
		return apierrors.IsNotFound(c.Get(ctx, client.ObjectKey{Name: tenantNS}, &corev1.Namespace{}))
	}, 3*time.Minute, time.Second).Should(BeTrue(), "the namespace goes with the claim")
}

// TestRunnerOutsideUsesHandedKubeconfig: a runner outside the cluster (a host process, as a hosted
// runner is) claims with its token and reaches its namespace with the handed kubeconfig, whose server
// is the API server's outside address, not the in-cluster Service the operator itself uses.
func TestRunnerOutsideUsesHandedKubeconfig(t *testing.T) {
	c, cfg := cluster(t)
	g := NewWithT(t)
	ns, sa := newPipeline(t, c, "ci-host")
	pcfg := rest.AnonymousClientConfig(cfg)
	pcfg.BearerToken = token(t, c, sa)
	p, err := client.New(pcfg, client.Options{Scheme: scheme})
	g.Expect(err).NotTo(HaveOccurred())
	claim := &tenancyv1alpha1.NamespaceClaim{ObjectMeta: metav1.ObjectMeta{Name: "pr-2", Namespace: ns},
		Spec: tenancyv1alpha1.NamespaceClaimSpec{ClassName: className}}
	g.Expect(p.Create(ctx, claim)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(p.Get(ctx, client.ObjectKeyFromObject(claim), claim)).To(Succeed())
		g.Expect(meta.IsStatusConditionTrue(claim.Status.Conditions, "Ready")).To(BeTrue())
	}, 2*time.Minute, time.Second).Should(Succeed())
	sec := &corev1.Secret{}
	g.Expect(p.Get(ctx, client.ObjectKey{Namespace: ns, Name: claim.Status.CredentialsSecretName}, sec)).To(Succeed())
	kc, err := clientcmd.Load(sec.Data["kubeconfig"])
	g.Expect(err).NotTo(HaveOccurred())
	for _, cl := range kc.Clusters {
		g.Expect(cl.Server).To(Equal(os.Getenv("NODE_APISERVER_URL")), "the handed kubeconfig names the outside address")
	}
	tcfg, err := clientcmd.RESTConfigFromKubeConfig(sec.Data["kubeconfig"])
	g.Expect(err).NotTo(HaveOccurred())
	tenant, err := client.New(tcfg, client.Options{Scheme: scheme})
	g.Expect(err).NotTo(HaveOccurred())
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "from-runner", Namespace: claim.Status.Namespace}}
	g.Expect(tenant.Create(ctx, cm)).To(Succeed())
	g.Expect(tenant.List(ctx, &corev1.PodList{}, client.InNamespace(claim.Status.Namespace))).To(Succeed())
	err = tenant.List(ctx, &corev1.PodList{}, client.InNamespace(ns))
	g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "the handed kubeconfig works in its namespace only: %v", err)
	g.Expect(c.Delete(ctx, claim)).To(Succeed())
}

// TestMetricsThroughService: the manager's metrics endpoint is scraped through its Service (kube-proxy
// routes the ClusterIP to the Pod) over TLS with a token allowed by the shipped metrics-reader role,
// and refused without one.
func TestMetricsThroughService(t *testing.T) {
	c, _ := cluster(t)
	g := NewWithT(t)
	opNS := os.Getenv("NODE_OPERATOR_NAMESPACE")
	svc := &corev1.Service{}
	g.Expect(c.Get(ctx, client.ObjectKey{Namespace: opNS, Name: "nsclaim-operator-controller-manager-metrics-service"}, svc)).To(Succeed())
	ns := fmt.Sprintf("scraper-%d", time.Now().UnixNano()%100000)
	g.Expect(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "prometheus", Namespace: ns}}
	g.Expect(c.Create(ctx, sa)).To(Succeed())
	g.Expect(c.Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "node-test-" + ns},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "nsclaim-operator-metrics-reader"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa.Name, Namespace: ns}}})).To(Succeed())
	tok := token(t, c, sa)
	url := fmt.Sprintf("https://%s:%d/metrics", svc.Spec.ClusterIP, svc.Spec.Ports[0].Port)
	// The manager serves a self-signed certificate (no cert-manager here), as a Prometheus without
	// a CA for it scrapes it (insecure_skip_verify, as config/prometheus/monitor.yaml does).
	hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{
		InsecureSkipVerify: true, RootCAs: x509.NewCertPool()}}} //nolint:gosec // self-signed, see above
	get := func(bearer string) (int, string, error) {
		req, _ := http.NewRequest(http.MethodGet, url, nil)
		if bearer != "" {
			req.Header.Set("Authorization", "Bearer "+bearer)
		}
		resp, err := hc.Do(req)
		if err != nil {
			return 0, "", err
		}
		defer func() { _ = resp.Body.Close() }()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), nil
	}
	g.Eventually(func(g Gomega) {
		code, body, err := get(tok)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(code).To(Equal(http.StatusOK))
		g.Expect(body).To(ContainSubstring("nsclaim_"))
		g.Expect(body).To(ContainSubstring("controller_runtime_reconcile_total"))
	}, time.Minute, time.Second).Should(Succeed())
	code, _, err := get("")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(code).To(Equal(http.StatusUnauthorized))
	code, _, err = get(token(t, c, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: ns}}))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(code).To(Equal(http.StatusForbidden))
}
