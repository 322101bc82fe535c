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
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
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

// shellPipeline is a CI identity holding exactly the shipped request-configmaps ClusterRole in the
// requests namespace (create and get ConfigMaps, get Secrets): all the shell protocol needs. It
// returns the identity's kubeconfig.
func shellPipeline(t *testing.T, name string) string {
	t.Helper()
	return newRequestPipeline(t, name).kubeconfig
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

func TestDeletingARequestDeletesItsNamespace(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	pipe := shellPipeline(t, "shelldel")
	name := fmt.Sprintf("ci-branch-feature-%d", time.Now().UnixNano()%100000)
	requestAndWait(t, pipe, name)
	// Pipelines may not delete requests (another pipeline's included); an admin cleaning up may.
	out, err := kubectl(pipe, "delete", "configmap", name, "--wait=false")
	expectForbidden(g, out, err, "a pipeline deleting its request ConfigMap")
	g.Expect(admin.Delete(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: requestsNamespace(), Name: name}})).To(Succeed())
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

	// Deleting the refused request (an admin's job: pipelines may not delete requests) leaves the
	// hand-made namespace alone.
	g.Expect(admin.Delete(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: rq, Name: handmade}})).To(Succeed())
	g.Eventually(gone(&tenancyv1alpha1.NamespaceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: rq, Name: handmade}})).WithTimeout(60 * time.Second).WithPolling(time.Second).Should(BeTrue())
	g.Expect(admin.Get(ctx, client.ObjectKey{Name: handmade}, after)).To(Succeed())
	g.Expect(after.DeletionTimestamp).To(BeNil())
	g.Expect(admin.Delete(ctx, after)).To(Succeed())
}

// --- Attacks by one pipeline on another, and the release flows of the shell operator ---------------
// Every pipeline below holds exactly the shipped request-configmaps ClusterRole in the requests
// namespace and uses its own token.

// An attacker pipeline that knows (or guesses) another pipeline's request name cannot delete its
// request, and with it the other pipeline's namespace.
func TestPipelineCannotDeleteAnotherPipelinesRequest(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	victim := newRequestPipeline(t, "victim")
	attacker := newRequestPipeline(t, "attacker")
	name := requestName("victim")
	token := requestAndWait(t, victim.kubeconfig, name)

	out, err := kubectl(attacker.kubeconfig, "delete", "configmap", name, "--wait=false")
	expectForbidden(g, out, err, "deleting another pipeline's request ConfigMap")
	out, err = kubectl(attacker.kubeconfig, "delete", "secret", name, "--wait=false")
	expectForbidden(g, out, err, "deleting another pipeline's Secret")
	out, err = kubectl(attacker.kubeconfig, "annotate", "configmap", name, "x=y")
	expectForbidden(g, out, err, "changing another pipeline's request ConfigMap")
	out, err = kubectl(attacker.kubeconfig, "delete", "namespace", name, "--wait=false")
	expectForbidden(g, out, err, "deleting another pipeline's namespace")

	// The victim's namespace stays: Active, not terminating, and its token keeps working there.
	g.Consistently(func(g Gomega) {
		ns := &corev1.Namespace{}
		g.Expect(admin.Get(ctx, client.ObjectKey{Name: name}, ns)).To(Succeed())
		g.Expect(ns.DeletionTimestamp).To(BeNil())
		g.Expect(ns.Status.Phase).To(Equal(corev1.NamespaceActive))
	}).WithTimeout(5 * time.Second).WithPolling(500 * time.Millisecond).Should(Succeed())
	out, err = kubectl(victim.kubeconfig, "--token", token, "-n", name, "get", "pods")
	g.Expect(err).NotTo(HaveOccurred(), out)

	out, err = kubectl(victim.kubeconfig, "--token", token, "delete", "namespace", name, "--wait=false")
	g.Expect(err).NotTo(HaveOccurred(), out)
}

// A pipeline cannot list Events in the requests namespace (they name every request), nor list
// requests or Secrets.
func TestPipelineCannotListRequestEvents(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	p := newRequestPipeline(t, "lister")
	for _, args := range [][]string{
		{"get", "events"},
		{"get", "events.events.k8s.io"},
		{"get", "events", "--field-selector", "involvedObject.kind=ConfigMap"},
		{"get", "configmaps"},
		{"get", "secrets"},
		{"get", "namespaceclaims"},
	} {
		out, err := kubectl(p.kubeconfig, args...)
		expectForbidden(g, out, err, strings.Join(args, " "))
	}
	for _, verb := range []string{"list", "watch"} {
		for _, res := range []string{"events", "configmaps", "secrets"} {
			out, _ := kubectl(p.kubeconfig, "auth", "can-i", verb, res)
			g.Expect(strings.TrimSpace(out)).To(Equal("no"), "%s %s", verb, res)
		}
	}
}

// A refused request says why in an annotation of its own ConfigMap, which its pipeline reads with
// `get`: a name that matches no pattern, a bad token policy, and a refusal of the claim behind it.
func TestPipelineReadsItsRefusalFromItsConfigMap(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	p := newRequestPipeline(t, "refused")
	rq := requestsNamespace()

	badName := fmt.Sprintf("feature-%d", time.Now().UnixNano()%10000000)
	out, err := kubectl(p.kubeconfig, "create", "configmap", badName)
	g.Expect(err).NotTo(HaveOccurred(), out)

	badPolicy := requestName("policy")
	out, err = kubectlWithin(ctx, p.kubeconfig, fmt.Sprintf(`apiVersion: v1
kind: ConfigMap
metadata:
  name: %s
  annotations:
    %s: sometimes
`, badPolicy, tenancyv1alpha1.TokenPolicyAnnotation), "create", "-f", "-")
	g.Expect(err).NotTo(HaveOccurred(), out)

	handmade := requestName("handmade")
	g.Expect(admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: handmade}})).To(Succeed())
	out, err = kubectl(p.kubeconfig, "create", "configmap", handmade)
	g.Expect(err).NotTo(HaveOccurred(), out)
	t.Cleanup(func() {
		for _, n := range []string{badName, badPolicy, handmade} {
			_ = admin.Delete(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: rq, Name: n}})
		}
		_ = admin.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: handmade}})
	})

	for name, reason := range map[string]string{
		badName:   tenancyv1alpha1.NameNotAllowedReason,
		badPolicy: tenancyv1alpha1.InvalidTokenPolicyReason,
		handmade:  tenancyv1alpha1.NamespaceConflictReason,
	} {
		g.Eventually(func(g Gomega) {
			out, err := configMapAnnotation(p.kubeconfig, name, tenancyv1alpha1.RequestRefusalAnnotation)
			g.Expect(err).NotTo(HaveOccurred(), out)
			g.Expect(out).To(HavePrefix(reason+": "), "refusal of %s", name)
		}).WithTimeout(60*time.Second).WithPolling(time.Second).Should(Succeed(), "refusal of %s", name)
		out, err := kubectl(p.kubeconfig, "get", "secret", name)
		g.Expect(err).To(HaveOccurred(), "no credentials for a refused request: %s", out)
	}
	out, err = configMapAnnotation(p.kubeconfig, badPolicy, tenancyv1alpha1.RequestRefusalAnnotation)
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Expect(out).To(ContainSubstring(tenancyv1alpha1.TokenPolicyAnnotation), "the refusal names the annotation to fix")
}

// The shell operator's own flow (its demo.sh): create the request with kubectl, wait for Secret N,
// use the token in N (and nowhere else), then release with `kubectl --token $TOKEN delete namespace
// N` and kubectl's default flags, which wait for the deletion: the command must return.
func TestPipelineReleasesWithDefaultKubectlFlags(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	p := newRequestPipeline(t, "release")
	name := requestName("release")
	token := requestAndWait(t, p.kubeconfig, name)

	out, err := kubectl(p.kubeconfig, "--token", token, "get", "pods", "-n", "default")
	expectForbidden(g, out, err, "the token in default")
	g.Eventually(func(g Gomega) {
		out, err := kubectl(p.kubeconfig, "--token", token, "get", "pods", "-n", name)
		g.Expect(err).NotTo(HaveOccurred(), out)
	}).WithTimeout(30 * time.Second).WithPolling(time.Second).Should(Succeed())

	releaseWithToken(t, p.kubeconfig, token, name, 60*time.Second)
	g.Eventually(gone(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})).WithTimeout(90 * time.Second).WithPolling(time.Second).Should(BeTrue())
	g.Eventually(gone(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: requestsNamespace(), Name: name}})).WithTimeout(30 * time.Second).Should(BeTrue())
}

// A pipeline re-run that releases N and asks for N again at once must never be handed the dead
// token of the old namespace: the first Secret N it sees belongs to the new claim, and its token
// works in the new namespace N.
func TestRerunGetsItsOwnSecret(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	p := newRequestPipeline(t, "rerun")
	rq := requestsNamespace()
	name := requestName("rerun")
	token := requestAndWait(t, p.kubeconfig, name)
	old := &corev1.Secret{}
	g.Expect(p.client.Get(ctx, client.ObjectKey{Namespace: rq, Name: name}, old)).To(Succeed())
	oldUID := old.Labels[tenancyv1alpha1.ClaimUIDLabel]
	g.Expect(oldUID).NotTo(BeEmpty())

	releaseWithToken(t, p.kubeconfig, token, name, 60*time.Second)

	// The re-run asks again as soon as the API server takes the request (the old one is removed
	// with its namespace).
	g.Eventually(func(g Gomega) {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: rq, Name: name}}
		err := p.client.Create(ctx, cm)
		g.Expect(err).NotTo(HaveOccurred())
	}).WithTimeout(120 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())

	// The first Secret N the re-run sees.
	first := &corev1.Secret{}
	g.Eventually(func() error {
		return p.client.Get(ctx, client.ObjectKey{Namespace: rq, Name: name}, first)
	}).WithTimeout(120 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())
	firstUID := first.Labels[tenancyv1alpha1.ClaimUIDLabel]

	claim := &tenancyv1alpha1.NamespaceClaim{}
	g.Eventually(func(g Gomega) {
		g.Expect(admin.Get(ctx, client.ObjectKey{Namespace: rq, Name: name}, claim)).To(Succeed())
		g.Expect(string(claim.UID)).NotTo(Equal(oldUID))
	}).WithTimeout(60 * time.Second).Should(Succeed())
	g.Expect(firstUID).NotTo(Equal(oldUID), "the re-run was handed the old namespace's Secret")
	g.Expect(firstUID).To(Equal(string(claim.UID)), "the first Secret N the re-run sees is the new claim's")

	g.Eventually(func(g Gomega) {
		g.Expect(admin.Get(ctx, client.ObjectKeyFromObject(claim), claim)).To(Succeed())
		g.Expect(meta.IsStatusConditionTrue(claim.Status.Conditions, tenancyv1alpha1.ReadyCondition)).To(BeTrue())
	}).WithTimeout(90 * time.Second).WithPolling(time.Second).Should(Succeed())
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	out, err := kubectlWithin(cctx, p.kubeconfig, "", "--token", secretToken(first), "-n", name, "get", "pods")
	g.Expect(err).NotTo(HaveOccurred(), "the first token the re-run saw does not work in the new namespace: %s", out)

	out, err = kubectl(p.kubeconfig, "--token", secretToken(first), "delete", "namespace", name, "--wait=false")
	g.Expect(err).NotTo(HaveOccurred(), out)
}
