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
	"fmt"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
	"github.com/nsclaim/nsclaim-operator/internal/claimpolicy"
	"github.com/nsclaim/nsclaim-operator/internal/controller/configmaprequest"
	"github.com/nsclaim/nsclaim-operator/internal/credentials"
	"github.com/nsclaim/nsclaim-operator/internal/watchcache"
)

var requestsClassOnce sync.Once

// newRequest creates the requests class (once) and a request ConfigMap named name.
func newRequest(t *testing.T, name string, annotations map[string]string) *corev1.ConfigMap {
	t.Helper()
	g := NewWithT(t)
	requestsClassOnce.Do(func() {
		c := &tenancyv1alpha1.NamespaceClass{ObjectMeta: metav1.ObjectMeta{Name: requestsClass}, Spec: tenancyv1alpha1.NamespaceClassSpec{ClusterRole: testRoleName}}
		g.Expect(client.IgnoreAlreadyExists(k8s.Create(ctx, c))).To(Succeed())
	})
	// The operator creates the requests namespace when it starts.
	g.Eventually(func() error { return k8s.Get(ctx, client.ObjectKey{Name: requestsNamespace}, &corev1.Namespace{}) }).
		WithTimeout(10 * time.Second).Should(Succeed())
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: requestsNamespace, Annotations: annotations}}
	g.Expect(k8s.Create(ctx, cm)).To(Succeed())
	return cm
}

// requestEvents returns the Events about cm.
func requestEvents(g Gomega, cm *corev1.ConfigMap) []corev1.Event {
	evs := &corev1.EventList{}
	g.Expect(k8s.List(ctx, evs, client.InNamespace(cm.Namespace))).To(Succeed())
	var out []corev1.Event
	for _, e := range evs.Items {
		if e.InvolvedObject.UID == cm.UID {
			out = append(out, e)
		}
	}
	return out
}

func TestConfigMapRequestProvisionsNamespaceAndSecret(t *testing.T) {
	requireEnvtest(t)
	t.Parallel()
	g := NewWithT(t)
	name := fmt.Sprintf("ci-branch-feature-%d", nameSeq.Add(1))
	cm := newRequest(t, name, nil)

	// One implementation serves both ways of asking: the request becomes a claim next to it.
	claim := &tenancyv1alpha1.NamespaceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: requestsNamespace, Name: name}}
	got := waitFor(t, claim, tenancyv1alpha1.ReadyCondition, metav1.ConditionTrue, tenancyv1alpha1.ProvisionedReason)
	g.Expect(metav1.IsControlledBy(got, cm)).To(BeTrue())
	g.Expect(got.Spec.ClassName).To(Equal(requestsClass))
	g.Expect(got.Status.Namespace).To(Equal(name), "the namespace is named exactly after the request")
	g.Expect(got.Status.CredentialsSecretName).To(Equal(name))

	ns := &corev1.Namespace{}
	g.Expect(k8s.Get(ctx, client.ObjectKey{Name: name}, ns)).To(Succeed())
	g.Expect(ns.Labels).To(HaveKeyWithValue(tenancyv1alpha1.ManagedByLabel, tenancyv1alpha1.ManagedByValue))
	g.Expect(ns.Labels).To(HaveKeyWithValue(tenancyv1alpha1.ClaimUIDLabel, string(got.UID)))

	// The Secret named N holds token, kubeconfig, ca.crt and namespace, and the Namespace owns it.
	sec := &corev1.Secret{}
	g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: requestsNamespace, Name: name}, sec)).To(Succeed())
	g.Expect(sec.Data).To(HaveKey(credentials.TokenKey))
	g.Expect(sec.Data).To(HaveKey(credentials.KubeconfigKey))
	g.Expect(sec.Data).To(HaveKeyWithValue(credentials.CAKey, cfg.CAData))
	g.Expect(sec.Data).To(HaveKeyWithValue(credentials.NamespaceKey, []byte(name)))
	g.Expect(sec.OwnerReferences).To(ContainElement(And(HaveField("Kind", "Namespace"), HaveField("UID", ns.UID))))
	// ... and the ConfigMap.
	g.Eventually(func(g Gomega) {
		cur := &corev1.ConfigMap{}
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(cm), cur)).To(Succeed())
		g.Expect(cur.OwnerReferences).To(ContainElement(And(HaveField("Kind", "Namespace"), HaveField("UID", ns.UID))))
	}).WithTimeout(10 * time.Second).Should(Succeed())

	// The token works in N and nowhere else.
	tenantCfg, err := clientcmd.RESTConfigFromKubeConfig(sec.Data[credentials.KubeconfigKey])
	g.Expect(err).NotTo(HaveOccurred())
	tenant, err := client.New(tenantCfg, client.Options{Scheme: scheme})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(tenant.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: name}})).To(Succeed())
	g.Expect(tenant.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: "default"}})).NotTo(Succeed())
	g.Expect(tenant.List(ctx, &corev1.SecretList{}, client.InNamespace(requestsNamespace))).NotTo(Succeed())
}

func TestConfigMapRequestWithForeignNameGetsAWarningAndNothingElse(t *testing.T) {
	requireEnvtest(t)
	t.Parallel()
	g := NewWithT(t)
	bad := newRequest(t, fmt.Sprintf("hello-%d", nameSeq.Add(1)), nil)
	g.Eventually(func(g Gomega) {
		g.Expect(requestEvents(g, bad)).To(ContainElement(And(
			HaveField("Type", corev1.EventTypeWarning), HaveField("Reason", tenancyv1alpha1.NameNotAllowedReason))))
	}).WithTimeout(10 * time.Second).Should(Succeed())
	g.Expect(apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(bad), &tenancyv1alpha1.NamespaceClaim{}))).To(BeTrue())
	g.Expect(apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKey{Name: bad.Name}, &corev1.Namespace{}))).To(BeTrue())
	g.Eventually(refusalOf(bad)).WithTimeout(10 * time.Second).Should(HavePrefix(tenancyv1alpha1.NameNotAllowedReason + ": "))

	// An invalid token policy is refused on the ConfigMap, naming the annotation.
	policy := newRequest(t, fmt.Sprintf("nsp-policy-%d", nameSeq.Add(1)), map[string]string{tenancyv1alpha1.TokenPolicyAnnotation: "sometimes"})
	g.Eventually(func(g Gomega) {
		g.Expect(requestEvents(g, policy)).To(ContainElement(And(
			HaveField("Reason", tenancyv1alpha1.InvalidTokenPolicyReason), HaveField("Message", ContainSubstring(tenancyv1alpha1.TokenPolicyAnnotation)))))
	}).WithTimeout(10 * time.Second).Should(Succeed())
	g.Expect(apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(policy), &tenancyv1alpha1.NamespaceClaim{}))).To(BeTrue())
	g.Eventually(refusalOf(policy)).WithTimeout(10 * time.Second).Should(And(
		HavePrefix(tenancyv1alpha1.InvalidTokenPolicyReason+": "), ContainSubstring(tenancyv1alpha1.TokenPolicyAnnotation)))
	// One Warning Event per refusal, though writing the annotation reconciles the request again.
	annotated := &corev1.ConfigMap{}
	g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(policy), annotated)).To(Succeed())
	waitReconciled(t, "configmap-request", annotated)
	g.Consistently(func(g Gomega) {
		g.Expect(requestEvents(g, policy)).To(HaveLen(1))
	}).WithTimeout(2 * time.Second).Should(Succeed())

	// kube-root-ca.crt is ignored silently. It is checked last: by then the operator has handled the
	// requests created before it, in the same namespace.
	root := &corev1.ConfigMap{}
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: requestsNamespace, Name: "kube-root-ca.crt"}, root); apierrors.IsNotFound(err) {
		root = newRequest(t, "kube-root-ca.crt", nil)
	}
	waitReconciled(t, "configmap-request", root)
	g.Consistently(func(g Gomega) {
		g.Expect(requestEvents(g, root)).To(BeEmpty())
	}).WithTimeout(2 * time.Second).Should(Succeed())
	g.Expect(apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(root), &tenancyv1alpha1.NamespaceClaim{}))).To(BeTrue())
}

func TestConfigMapRequestForAForeignNamespaceTouchesNothing(t *testing.T) {
	requireEnvtest(t)
	t.Parallel()
	g := NewWithT(t)
	name := fmt.Sprintf("ci-branch-handmade-%d", nameSeq.Add(1))
	foreign := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"owner": "someone"}}}
	g.Expect(k8s.Create(ctx, foreign)).To(Succeed())
	cm := newRequest(t, name, nil)

	g.Eventually(func(g Gomega) {
		g.Expect(requestEvents(g, cm)).To(ContainElement(And(
			HaveField("Type", corev1.EventTypeWarning), HaveField("Reason", tenancyv1alpha1.NamespaceConflictReason))))
	}).WithTimeout(30 * time.Second).Should(Succeed())
	after := &corev1.Namespace{}
	g.Expect(k8s.Get(ctx, client.ObjectKey{Name: name}, after)).To(Succeed())
	g.Expect(after.ResourceVersion).To(Equal(foreign.ResourceVersion), "the foreign namespace is untouched")
	g.Expect(apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKey{Namespace: requestsNamespace, Name: name}, &corev1.Secret{}))).To(BeTrue())
	cur := &corev1.ConfigMap{}
	g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(cm), cur)).To(Succeed())
	g.Expect(cur.OwnerReferences).NotTo(ContainElement(HaveField("Kind", "Namespace")))
	g.Eventually(refusalOf(cm)).WithTimeout(10 * time.Second).Should(HavePrefix(tenancyv1alpha1.NamespaceConflictReason + ": "))
	g.Expect(cur.Labels).To(BeEmpty(), "the operator writes nothing but annotations on a request")
	g.Expect(cur.Data).To(BeEmpty())
}

// refusalOf reads the refusal annotation of a request ConfigMap.
func refusalOf(cm *corev1.ConfigMap) func(g Gomega) string {
	return func(g Gomega) string {
		cur := &corev1.ConfigMap{}
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(cm), cur)).To(Succeed())
		return cur.Annotations[tenancyv1alpha1.RequestRefusalAnnotation]
	}
}

// A refusal written on a request is removed once its claim is Ready.
func TestConfigMapRequestRefusalIsClearedWhenReady(t *testing.T) {
	requireEnvtest(t)
	t.Parallel()
	g := NewWithT(t)
	name := fmt.Sprintf("nsp-cleared-%d", nameSeq.Add(1))
	cm := newRequest(t, name, map[string]string{tenancyv1alpha1.RequestRefusalAnnotation: tenancyv1alpha1.NamespaceConflictReason + ": earlier"})
	claim := &tenancyv1alpha1.NamespaceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: requestsNamespace, Name: name}}
	waitFor(t, claim, tenancyv1alpha1.ReadyCondition, metav1.ConditionTrue, tenancyv1alpha1.ProvisionedReason)
	g.Eventually(func(g Gomega) map[string]string {
		cur := &corev1.ConfigMap{}
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(cm), cur)).To(Succeed())
		return cur.Annotations
	}).WithTimeout(10 * time.Second).Should(And(
		Not(HaveKey(tenancyv1alpha1.RequestRefusalAnnotation)), HaveKey(tenancyv1alpha1.RequestClaimUIDAnnotation)))
}

func TestConfigMapRequestTokenOnlyOnce(t *testing.T) {
	requireEnvtest(t)
	t.Parallel()
	g := NewWithT(t)
	name := fmt.Sprintf("nsp-once-%d", nameSeq.Add(1))
	newRequest(t, name, map[string]string{tenancyv1alpha1.TokenPolicyAnnotation: tenancyv1alpha1.TokenPolicyOnlyOnce})
	claim := &tenancyv1alpha1.NamespaceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: requestsNamespace, Name: name}}
	got := waitFor(t, claim, tenancyv1alpha1.ReadyCondition, metav1.ConditionTrue, tenancyv1alpha1.ProvisionedReason)
	// Issued once, valid until the claim expires but never longer than the class's tokenTTL (the
	// requests class has the default, 1h, and the claim 24h). Both times are the API server's.
	g.Expect(got.Status.TokenExpiresAt.Sub(got.CreationTimestamp.Time)).To(BeNumerically("<=", claimpolicy.DefaultTokenTTL+2*time.Minute))
	g.Expect(got.Status.TokenExpiresAt.Time).To(BeTemporally("<", got.Status.ExpiresAt.Time))

	// The pipeline read the token and deleted the Secret: it is not issued again, even when the claim
	// is reconciled because something in its namespace was repaired.
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: requestsNamespace, Name: name}}
	g.Expect(k8s.Delete(ctx, sec)).To(Succeed())
	// (Not the ServiceAccount: a recreated ServiceAccount revokes an only-once token, TokenRevoked.)
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: name, Name: claimpolicy.ReleaseRoleName}}
	g.Expect(k8s.Delete(ctx, binding)).To(Succeed())
	g.Eventually(func() error {
		return k8s.Get(ctx, client.ObjectKeyFromObject(binding), &rbacv1.RoleBinding{})
	}).WithTimeout(10*time.Second).Should(Succeed(), "the RoleBinding is restored")
	waitReconciled(t, "namespaceclaim", waitFor(t, claim, tenancyv1alpha1.ReadyCondition, metav1.ConditionTrue, tenancyv1alpha1.ProvisionedReason))
	g.Consistently(func() bool {
		return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(sec), &corev1.Secret{}))
	}).WithTimeout(2*time.Second).Should(BeTrue(), "an only-once token is not issued again")
}

// startRequestsManager runs a second ConfigMap reconciler whose requests namespace is ns, as cmd/main.go
// wires it, until the test ends. The suite's claim reconciler serves the claims it makes.
func startRequestsManager(t *testing.T, ns string) {
	t.Helper()
	g := NewWithT(t)
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:     scheme,
		Metrics:    metricsserver.Options{BindAddress: "0"},
		Cache:      watchcache.CacheOptions(ns, nil),
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	})
	g.Expect(err).NotTo(HaveOccurred())
	protocol, err := configmaprequest.New(ns, configmaprequest.DefaultPatterns, configmaprequest.DefaultIgnored, requestsClass, "")
	g.Expect(err).NotTo(HaveOccurred())
	cr := &configmaprequest.ConfigMapRequestReconciler{Client: mgr.GetClient(), Recorder: mgr.GetEventRecorder("nsclaim"), Protocol: protocol}
	g.Expect(cr.SetupWithManager(mgr)).To(Succeed())
	mctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = mgr.Start(mctx)
	}()
	t.Cleanup(func() { cancel(); <-done })
}

// namespaceEvents returns the Events about the namespace ns (they live in default).
func namespaceEvents(g Gomega, ns *corev1.Namespace) []corev1.Event {
	evs := &corev1.EventList{}
	g.Expect(k8s.List(ctx, evs)).To(Succeed())
	var out []corev1.Event
	for _, e := range evs.Items {
		if e.InvolvedObject.Kind == "Namespace" && e.InvolvedObject.Name == ns.Name {
			out = append(out, e)
		}
	}
	return out
}

// The requests namespace must be one nsclaim created or one an admin labelled for the protocol: an
// existing namespace without the label (or a namespace provisioned for a claim, i.e. squatted) is not
// served; labelling it turns the protocol on without a restart.
func TestRequestsNamespaceMustBeLabelled(t *testing.T) {
	requireEnvtest(t)
	t.Parallel()
	g := NewWithT(t)
	requestsClassOnce.Do(func() {
		c := &tenancyv1alpha1.NamespaceClass{ObjectMeta: metav1.ObjectMeta{Name: requestsClass}, Spec: tenancyv1alpha1.NamespaceClassSpec{ClusterRole: testRoleName}}
		g.Expect(client.IgnoreAlreadyExists(k8s.Create(ctx, c))).To(Succeed())
	})

	unlabelled := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: uniq("requests-unlabelled")}}
	g.Expect(k8s.Create(ctx, unlabelled)).To(Succeed())
	squatted := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: uniq("requests-squatted"), Labels: map[string]string{
		tenancyv1alpha1.RequestsNamespaceLabel: "true",
		tenancyv1alpha1.ManagedByLabel:         tenancyv1alpha1.ManagedByValue,
	}}}
	g.Expect(k8s.Create(ctx, squatted)).To(Succeed())
	startRequestsManager(t, unlabelled.Name)
	startRequestsManager(t, squatted.Name)

	reqs := map[string]*corev1.ConfigMap{}
	for _, ns := range []*corev1.Namespace{unlabelled, squatted} {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("nsp-%s", ns.Name), Namespace: ns.Name}}
		g.Expect(k8s.Create(ctx, cm)).To(Succeed())
		reqs[ns.Name] = cm
	}
	// Neither is served: no claim, nothing written on the request, a Warning Event on the namespace.
	for _, ns := range []*corev1.Namespace{unlabelled, squatted} {
		g.Eventually(func(g Gomega) {
			g.Expect(namespaceEvents(g, ns)).To(ContainElement(And(
				HaveField("Type", corev1.EventTypeWarning), HaveField("Reason", tenancyv1alpha1.RequestsNamespaceNotAllowedReason))))
		}).WithTimeout(20*time.Second).Should(Succeed(), "Warning Event on %s", ns.Name)
	}
	g.Consistently(func(g Gomega) {
		for _, cm := range reqs {
			g.Expect(apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(cm), &tenancyv1alpha1.NamespaceClaim{}))).To(BeTrue(), "claim for %s", cm.Namespace)
			cur := &corev1.ConfigMap{}
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(cm), cur)).To(Succeed())
			g.Expect(cur.Annotations).To(BeEmpty())
		}
	}).WithTimeout(3 * time.Second).Should(Succeed())

	// An admin labels the unlabelled namespace for the protocol: its request is served.
	before := unlabelled.DeepCopy()
	unlabelled.Labels = map[string]string{tenancyv1alpha1.RequestsNamespaceLabel: "true"}
	g.Expect(k8s.Patch(ctx, unlabelled, client.MergeFrom(before))).To(Succeed())
	cm := reqs[unlabelled.Name]
	g.Eventually(func(g Gomega) {
		claim := &tenancyv1alpha1.NamespaceClaim{}
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(cm), claim)).To(Succeed())
		g.Expect(metav1.IsControlledBy(claim, cm)).To(BeTrue())
	}).WithTimeout(30 * time.Second).Should(Succeed())
	g.Expect(apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(reqs[squatted.Name]), &tenancyv1alpha1.NamespaceClaim{}))).To(BeTrue(),
		"a squatted namespace stays unserved")
}
