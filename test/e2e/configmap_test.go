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
	"encoding/base64"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
)

// The ConfigMap protocol of the shell operator nsplease, driven with nothing but kubectl, as a shell
// pipeline drives it. The operator runs with --requests-namespace (NSCLAIM_E2E_REQUESTS_NAMESPACE,
// default nsplease-requests) and --requests-class nsplease (a class binding admin, no prefix).

func requestsNamespace() string {
	if ns := os.Getenv("NSCLAIM_E2E_REQUESTS_NAMESPACE"); ns != "" {
		return ns
	}
	return "nsplease-requests"
}

// shellPipeline is a CI identity that may only create and delete ConfigMaps and read Secrets in the
// requests namespace: all the shell protocol needs. It returns the identity's kubeconfig.
func shellPipeline(t *testing.T, name string) string {
	t.Helper()
	g := NewWithT(t)
	rq := requestsNamespace()
	g.Eventually(func() error { return admin.Get(ctx, client.ObjectKey{Name: rq}, &corev1.Namespace{}) }).
		WithTimeout(30*time.Second).Should(Succeed(), "the operator creates the requests namespace")
	ns := fmt.Sprintf("%s-%d", name, time.Now().UnixNano()%100000)
	g.Expect(admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "pipeline", Namespace: ns}}
	g.Expect(admin.Create(ctx, sa)).To(Succeed())
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: ns, Namespace: rq}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"create", "delete"}},
		{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get"}},
	}}
	g.Expect(admin.Create(ctx, role)).To(Succeed())
	g.Expect(admin.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: ns, Namespace: rq},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: ns},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "pipeline", Namespace: ns}}})).To(Succeed())
	tr := &authenticationv1.TokenRequest{}
	g.Expect(admin.SubResource("token").Create(ctx, sa, tr)).To(Succeed())
	return writeKubeconfig(t, tr.Status.Token, rq)
}

// requestAndWait is the shell pipeline: create ConfigMap N, wait for Secret N, read its token.
func requestAndWait(t *testing.T, kubeconfig, name string) string {
	t.Helper()
	g := NewWithT(t)
	out, err := kubectl(kubeconfig, "create", "configmap", name)
	g.Expect(err).NotTo(HaveOccurred(), out)
	var token string
	g.Eventually(func(g Gomega) {
		out, err := kubectl(kubeconfig, "get", "secret", name, "-o", "jsonpath={.data.token}")
		g.Expect(err).NotTo(HaveOccurred(), out)
		g.Expect(out).NotTo(BeEmpty())
		b, err := base64.StdEncoding.DecodeString(out)
		g.Expect(err).NotTo(HaveOccurred())
		token = string(b)
	}).WithTimeout(90 * time.Second).WithPolling(time.Second).Should(Succeed())
	return token
}

func TestShellPipelineUsesTheConfigMapProtocol(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	pipe := shellPipeline(t, "shell")
	name := fmt.Sprintf("ci-commit-%x", time.Now().UnixNano())
	token := requestAndWait(t, pipe, name)

	// The token holds admin in N: it may create objects and RoleBindings there, and nothing outside.
	out, err := kubectl(pipe, "--token", token, "-n", name, "create", "configmap", "hello", "--from-literal=a=b")
	g.Expect(err).NotTo(HaveOccurred(), out)
	out, err = kubectl(pipe, "--token", token, "-n", name, "create", "rolebinding", "viewers", "--clusterrole=view", "--group=devs")
	g.Expect(err).NotTo(HaveOccurred(), out)
	out, err = kubectl(pipe, "--token", token, "-n", "default", "get", "configmaps")
	g.Expect(err).To(HaveOccurred())
	g.Expect(out).To(ContainSubstring("forbidden"))
	out, err = kubectl(pipe, "--token", token, "-n", requestsNamespace(), "get", "secrets")
	g.Expect(err).To(HaveOccurred())
	g.Expect(out).To(ContainSubstring("forbidden"))
	for _, res := range []string{"namespaces", "nodes"} {
		out, err = kubectl(pipe, "--token", token, "get", res)
		g.Expect(err).To(HaveOccurred(), res)
		g.Expect(out).To(ContainSubstring("forbidden"), res)
	}

	// The Secret carries kubeconfig, ca.crt and namespace beside token.
	out, err = kubectl(pipe, "get", "secret", name, "-o", "jsonpath={.data.namespace}")
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Expect(base64.StdEncoding.DecodeString(out)).To(Equal([]byte(name)))
	for _, key := range []string{"kubeconfig", "ca\\.crt"} {
		out, err = kubectl(pipe, "get", "secret", name, "-o", "jsonpath={.data."+key+"}")
		g.Expect(err).NotTo(HaveOccurred(), out)
		g.Expect(out).NotTo(BeEmpty(), key)
	}

	// Deleting N with that token makes the ConfigMap and the Secret disappear.
	out, err = kubectl(pipe, "--token", token, "delete", "namespace", name, "--wait=false")
	g.Expect(err).NotTo(HaveOccurred(), out)
	rq := requestsNamespace()
	g.Eventually(gone(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: rq, Name: name}})).WithTimeout(90 * time.Second).WithPolling(time.Second).Should(BeTrue())
	g.Eventually(gone(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: rq, Name: name}})).WithTimeout(30 * time.Second).Should(BeTrue())
	g.Eventually(gone(&tenancyv1alpha1.NamespaceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: rq, Name: name}})).WithTimeout(30 * time.Second).Should(BeTrue())
	g.Eventually(gone(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})).WithTimeout(90 * time.Second).Should(BeTrue())
}

func TestShellPipelineDeletesItsRequest(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	pipe := shellPipeline(t, "shelldel")
	name := fmt.Sprintf("ci-branch-feature-%d", time.Now().UnixNano()%100000)
	requestAndWait(t, pipe, name)
	out, err := kubectl(pipe, "delete", "configmap", name)
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Eventually(gone(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})).WithTimeout(90 * time.Second).WithPolling(time.Second).Should(BeTrue())
	g.Eventually(gone(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: requestsNamespace(), Name: name}})).WithTimeout(30 * time.Second).Should(BeTrue())
}

func TestShellRequestsThatAreRefused(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	pipe := shellPipeline(t, "shellbad")
	rq := requestsNamespace()

	// A name that matches no pattern: a Warning Event on the ConfigMap, and nothing else.
	bad := fmt.Sprintf("feature-%d", time.Now().UnixNano()%100000)
	out, err := kubectl(pipe, "create", "configmap", bad)
	g.Expect(err).NotTo(HaveOccurred(), out)
	// A namespace made by hand: refused, and the namespace is left as it was.
	handmade := fmt.Sprintf("nsp-handmade-%d", time.Now().UnixNano()%100000)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: handmade}}
	g.Expect(admin.Create(ctx, ns)).To(Succeed())
	out, err = kubectl(pipe, "create", "configmap", handmade)
	g.Expect(err).NotTo(HaveOccurred(), out)

	for name, reason := range map[string]string{bad: tenancyv1alpha1.NameNotAllowedReason, handmade: tenancyv1alpha1.NamespaceConflictReason} {
		g.Eventually(func(g Gomega) {
			evs := &corev1.EventList{}
			g.Expect(admin.List(ctx, evs, client.InNamespace(rq))).To(Succeed())
			var reasons []string
			for _, e := range evs.Items {
				if e.InvolvedObject.Kind == "ConfigMap" && e.InvolvedObject.Name == name && e.Type == corev1.EventTypeWarning {
					reasons = append(reasons, e.Reason)
				}
			}
			g.Expect(reasons).To(ContainElement(reason), "events of %s: %s", name, strings.Join(reasons, ","))
		}).WithTimeout(60 * time.Second).WithPolling(time.Second).Should(Succeed())
	}
	after := &corev1.Namespace{}
	g.Expect(admin.Get(ctx, client.ObjectKey{Name: handmade}, after)).To(Succeed())
	g.Expect(after.ResourceVersion).To(Equal(ns.ResourceVersion), "the hand-made namespace is untouched")
	g.Expect(after.DeletionTimestamp).To(BeNil())
	out, err = kubectl(pipe, "get", "secret", handmade)
	g.Expect(err).To(HaveOccurred(), "no credentials for a refused request: %s", out)
	g.Expect(gone(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: bad}})()).To(BeTrue())

	// Deleting the refused request leaves the hand-made namespace alone.
	out, err = kubectl(pipe, "delete", "configmap", handmade)
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Eventually(gone(&tenancyv1alpha1.NamespaceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: rq, Name: handmade}})).WithTimeout(60 * time.Second).WithPolling(time.Second).Should(BeTrue())
	g.Expect(admin.Get(ctx, client.ObjectKey{Name: handmade}, after)).To(Succeed())
	g.Expect(after.DeletionTimestamp).To(BeNil())
	g.Expect(admin.Delete(ctx, after)).To(Succeed())
}
