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

package namespaceclaim

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
	"github.com/nsclaim/nsclaim-operator/internal/controller/namespaceclass"
	"github.com/nsclaim/nsclaim-operator/internal/credentials"
	"github.com/nsclaim/nsclaim-operator/internal/monitoring"
	"github.com/nsclaim/nsclaim-operator/internal/testenv"
	"github.com/nsclaim/nsclaim-operator/internal/watchcache"
)

// webhookAuthorizer is an authorization webhook served on loopback: it has no opinion on anything,
// except that it lets the user in allow read Secrets in kube-system.
type webhookAuthorizer struct {
	allow atomic.Pointer[string]
	calls atomic.Int64
}

func (w *webhookAuthorizer) ServeHTTP(rw http.ResponseWriter, req *http.Request) {
	w.calls.Add(1)
	sar := &authorizationv1.SubjectAccessReview{}
	if err := json.NewDecoder(req.Body).Decode(sar); err != nil {
		http.Error(rw, err.Error(), http.StatusBadRequest)
		return
	}
	ra := sar.Spec.ResourceAttributes
	if u := w.allow.Load(); u != nil && sar.Spec.User == *u && ra != nil && ra.Namespace == metav1.NamespaceSystem && ra.Resource == "secrets" && ra.Verb == "get" {
		sar.Status = authorizationv1.SubjectAccessReviewStatus{Allowed: true, Reason: "the test webhook allows it"}
	} else {
		sar.Status = authorizationv1.SubjectAccessReviewStatus{}
	}
	rw.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(rw).Encode(sar)
}

// startWebhookEnvtest starts a second control plane whose API server authorizes with RBAC, then the
// webhook (--authorization-mode=RBAC,Webhook), and a manager with the claim reconciler on it. A
// SelfSubjectRulesReview there answers incomplete, as on a managed cluster with a webhook authorizer.
func startWebhookEnvtest(t *testing.T, w *webhookAuthorizer) client.Client {
	t.Helper()
	g := NewWithT(t)
	srv := httptest.NewTLSServer(w)
	t.Cleanup(srv.Close)
	kc := clientcmdapi.NewConfig()
	kc.Clusters["webhook"] = &clientcmdapi.Cluster{Server: srv.URL,
		CertificateAuthorityData: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})}
	kc.AuthInfos["apiserver"] = &clientcmdapi.AuthInfo{}
	kc.Contexts["webhook"] = &clientcmdapi.Context{Cluster: "webhook", AuthInfo: "apiserver"}
	kc.CurrentContext = "webhook"
	path := filepath.Join(t.TempDir(), "webhook.kubeconfig")
	g.Expect(clientcmd.WriteToFile(*kc, path)).To(Succeed())

	env := &envtest.Environment{CRDDirectoryPaths: []string{filepath.Join("..", "..", "..", "config", "crd", "bases")}, ErrorIfCRDPathMissing: true}
	env.ControlPlane.GetAPIServer().Configure().
		Set("authorization-mode", "RBAC,Webhook").
		Set("authorization-webhook-config-file", path).
		Set("authorization-webhook-version", "v1").
		Set("authorization-webhook-cache-authorized-ttl", "1s").
		Set("authorization-webhook-cache-unauthorized-ttl", "1s")
	return startOwnEnvtest(t, env, true)
}

// startOwnEnvtest starts env, a control plane of the test's own, with kube-controller-manager,
// testRole and (with release) the shipped release ClusterRole, and a manager with the claim and class
// reconcilers on it. It returns an admin client of env.
func startOwnEnvtest(t *testing.T, env *envtest.Environment, release bool) client.Client {
	t.Helper()
	g := NewWithT(t)
	cfg2, err := env.Start()
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = env.Stop() })
	c, err := client.New(cfg2, client.Options{Scheme: scheme})
	g.Expect(err).NotTo(HaveOccurred())
	startControllerManagerFor(t, env, c)
	g.Expect(c.Create(ctx, testRole())).To(Succeed())
	if release {
		role, err := testenv.ReleaseClusterRole(filepath.Join("..", "..", ".."))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(c.Create(ctx, role)).To(Succeed())
	}

	mgr, err := ctrl.NewManager(cfg2, ctrl.Options{Scheme: scheme, Metrics: metricsserver.Options{BindAddress: "0"},
		Cache: watchcache.CacheOptions("", nil), Controller: config.Controller{SkipNameValidation: ptr.To(true)}})
	g.Expect(err).NotTo(HaveOccurred())
	bindings, err := watchcache.NewBindingIndex(cfg2, scheme, mgr.GetCache())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(mgr.Add(bindings)).To(Succeed())
	r := &NamespaceClaimReconciler{Bindings: bindings, Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Ownership: verifier(mgr.GetClient()),
		Recorder: mgr.GetEventRecorder("nsclaim"), Clock: clock.RealClock{}, Endpoint: credentials.Endpoint{Server: cfg2.Host, CAData: cfg2.CAData},
		SelfTestConcurrency: 8, MaxConcurrentReconciles: 2}
	g.Expect(r.SetupWithManager(mgr)).To(Succeed())
	g.Expect((&namespaceclass.NamespaceClassReconciler{Client: mgr.GetClient()}).SetupWithManager(mgr)).To(Succeed())
	mctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = mgr.Start(mctx)
	}()
	t.Cleanup(func() { cancel(); <-done })
	return c
}

// Behind a webhook authorizer a rules review is incomplete: the self-test falls back to the
// SubjectAccessReview sample, says so in the condition, and still finds what the webhook grants.
func TestSelfTestFallsBackBehindAWebhookAuthorizer(t *testing.T) {
	requireEnvtest(t)
	t.Parallel()
	w := &webhookAuthorizer{}
	c := startWebhookEnvtest(t, w)
	g := NewWithT(t)
	every := &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: corev1.LabelMetadataName, Operator: metav1.LabelSelectorOpExists}}}
	class := &tenancyv1alpha1.NamespaceClass{ObjectMeta: metav1.ObjectMeta{Name: "webhook"}, Spec: tenancyv1alpha1.NamespaceClassSpec{
		ClusterRole: testRoleName, Access: tenancyv1alpha1.AccessSpec{RequesterNamespaceSelector: every}}}
	g.Expect(c.Create(ctx, class)).To(Succeed())
	requester := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "pipeline"}}
	g.Expect(c.Create(ctx, requester)).To(Succeed())
	wait := func(claim *tenancyv1alpha1.NamespaceClaim, status metav1.ConditionStatus, reason string) *metav1.Condition {
		var got *metav1.Condition
		g.Eventually(func(g Gomega) {
			cur := &tenancyv1alpha1.NamespaceClaim{}
			g.Expect(c.Get(ctx, client.ObjectKeyFromObject(claim), cur)).To(Succeed())
			got = meta.FindStatusCondition(cur.Status.Conditions, tenancyv1alpha1.PermissionsVerifiedCondition)
			g.Expect(got).NotTo(BeNil())
			g.Expect(got.Status).To(Equal(status), got.Message)
			g.Expect(got.Reason).To(Equal(reason), got.Message)
			g.Expect(meta.IsStatusConditionTrue(cur.Status.Conditions, tenancyv1alpha1.ReadyCondition)).To(Equal(status == metav1.ConditionTrue))
		}).WithTimeout(30 * time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())
		return got
	}

	sars0 := monitoring.SelfTestRequests(monitoring.ReviewAccess)
	ok := &tenancyv1alpha1.NamespaceClaim{ObjectMeta: metav1.ObjectMeta{Name: "ok", Namespace: requester.Name}, Spec: tenancyv1alpha1.NamespaceClaimSpec{ClassName: class.Name}}
	g.Expect(c.Create(ctx, ok)).To(Succeed())
	v := wait(ok, metav1.ConditionTrue, tenancyv1alpha1.VerifiedReason)
	g.Expect(v.Message).To(HavePrefix("a sample of SubjectAccessReviews (the SelfSubjectRulesReview in namespace "))
	g.Expect(v.Message).To(ContainSubstring("answered incomplete"))
	g.Expect(monitoring.SelfTestRequests(monitoring.ReviewAccess)).To(BeNumerically(">", sars0))
	g.Expect(w.calls.Load()).To(BeNumerically(">", 0), "the webhook was asked")

	// What only the webhook grants, a rules review cannot show; the fallback finds it.
	w.allow.Store(ptr.To("system:serviceaccount:webhook-leak:" + tenancyv1alpha1.TenantServiceAccountName))
	leak := &tenancyv1alpha1.NamespaceClaim{ObjectMeta: metav1.ObjectMeta{Name: "leak", Namespace: requester.Name},
		Spec: tenancyv1alpha1.NamespaceClaimSpec{ClassName: class.Name, NamespaceName: "webhook-leak"}}
	g.Expect(c.Create(ctx, leak)).To(Succeed())
	v = wait(leak, metav1.ConditionFalse, tenancyv1alpha1.ExcessPermissionsReason)
	g.Expect(v.Message).To(ContainSubstring("get secrets in namespace kube-system"))
	g.Expect(v.Message).To(ContainSubstring("found with a sample of SubjectAccessReviews (the SelfSubjectRulesReview"))
	g.Expect(isNotFound(c.Get(ctx, client.ObjectKey{Namespace: requester.Name, Name: "leak-kubeconfig"}, &corev1.Secret{}))).To(BeTrue(), "a Secret was written for a claim that failed its self-test")

	w.allow.Store(nil)
	wait(leak, metav1.ConditionTrue, tenancyv1alpha1.VerifiedReason)
	g.Expect(c.Get(ctx, client.ObjectKey{Namespace: requester.Name, Name: "leak-kubeconfig"}, &corev1.Secret{})).To(Succeed())
}
