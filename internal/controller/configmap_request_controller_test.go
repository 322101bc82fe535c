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

package controller

import (
	"fmt"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
	"github.com/nsclaim/nsclaim-operator/internal/credentials"
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
	t.Parallel()
	g := NewWithT(t)
	bad := newRequest(t, fmt.Sprintf("hello-%d", nameSeq.Add(1)), nil)
	g.Eventually(func(g Gomega) {
		g.Expect(requestEvents(g, bad)).To(ContainElement(And(
			HaveField("Type", corev1.EventTypeWarning), HaveField("Reason", tenancyv1alpha1.NameNotAllowedReason))))
	}).WithTimeout(10 * time.Second).Should(Succeed())
	g.Expect(apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(bad), &tenancyv1alpha1.NamespaceClaim{}))).To(BeTrue())
	g.Expect(apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKey{Name: bad.Name}, &corev1.Namespace{}))).To(BeTrue())

	// An invalid token policy is refused on the ConfigMap, naming the annotation.
	policy := newRequest(t, fmt.Sprintf("nsp-policy-%d", nameSeq.Add(1)), map[string]string{tenancyv1alpha1.TokenPolicyAnnotation: "sometimes"})
	g.Eventually(func(g Gomega) {
		g.Expect(requestEvents(g, policy)).To(ContainElement(And(
			HaveField("Reason", tenancyv1alpha1.InvalidTokenPolicyReason), HaveField("Message", ContainSubstring(tenancyv1alpha1.TokenPolicyAnnotation)))))
	}).WithTimeout(10 * time.Second).Should(Succeed())
	g.Expect(apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(policy), &tenancyv1alpha1.NamespaceClaim{}))).To(BeTrue())

	// kube-root-ca.crt is ignored silently. It is checked last: by then the operator has handled the
	// requests created before it, in the same namespace.
	root := &corev1.ConfigMap{}
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: requestsNamespace, Name: "kube-root-ca.crt"}, root); apierrors.IsNotFound(err) {
		root = newRequest(t, "kube-root-ca.crt", nil)
	}
	g.Consistently(func(g Gomega) {
		g.Expect(requestEvents(g, root)).To(BeEmpty())
	}).WithTimeout(2 * time.Second).Should(Succeed())
	g.Expect(apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(root), &tenancyv1alpha1.NamespaceClaim{}))).To(BeTrue())
}

func TestConfigMapRequestForAForeignNamespaceTouchesNothing(t *testing.T) {
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
}

func TestConfigMapRequestTokenOnlyOnce(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	name := fmt.Sprintf("nsp-once-%d", nameSeq.Add(1))
	newRequest(t, name, map[string]string{tenancyv1alpha1.TokenPolicyAnnotation: tenancyv1alpha1.TokenPolicyOnlyOnce})
	claim := &tenancyv1alpha1.NamespaceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: requestsNamespace, Name: name}}
	got := waitFor(t, claim, tenancyv1alpha1.ReadyCondition, metav1.ConditionTrue, tenancyv1alpha1.ProvisionedReason)
	// Issued once, valid until the claim expires.
	g.Expect(got.Status.TokenExpiresAt.Time).To(BeTemporally("~", got.Status.ExpiresAt.Time, 2*time.Minute))

	// The pipeline read the token and deleted the Secret: it is not issued again, even when the claim
	// is reconciled because something in its namespace was repaired.
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: requestsNamespace, Name: name}}
	g.Expect(k8s.Delete(ctx, sec)).To(Succeed())
	quota := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: name, Name: tenancyv1alpha1.TenantServiceAccountName}}
	g.Expect(k8s.Delete(ctx, quota)).To(Succeed())
	g.Eventually(func() error {
		return k8s.Get(ctx, client.ObjectKeyFromObject(quota), &corev1.ServiceAccount{})
	}).WithTimeout(10*time.Second).Should(Succeed(), "the ServiceAccount is restored")
	waitFor(t, claim, tenancyv1alpha1.ReadyCondition, metav1.ConditionTrue, tenancyv1alpha1.ProvisionedReason)
	g.Consistently(func() bool {
		return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(sec), &corev1.Secret{}))
	}).WithTimeout(2*time.Second).Should(BeTrue(), "an only-once token is not issued again")
}
