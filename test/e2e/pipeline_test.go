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
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Helpers for tests that act as a pipeline of the ConfigMap protocol holding exactly the rights the
// operator ships for it: the request-configmaps ClusterRole, bound with a RoleBinding in the requests
// namespace. Such a pipeline uses its own token, never the admin's.

// requestConfigMapsRole is the shipped ClusterRole for pipelines of the ConfigMap protocol, as
// config/local (and config/default) name it.
func requestConfigMapsRole() string {
	if r := os.Getenv("NSCLAIM_E2E_REQUEST_ROLE"); r != "" {
		return r
	}
	return "nsclaim-operator-request-configmaps"
}

// requestPipeline is a CI identity (a ServiceAccount in a namespace of its own) bound to the shipped
// request-configmaps ClusterRole in the requests namespace.
type requestPipeline struct {
	user       string
	kubeconfig string
	client     client.Client
}

func newRequestPipeline(t *testing.T, name string) *requestPipeline {
	t.Helper()
	g := NewWithT(t)
	rq := requestsNamespace()
	g.Eventually(func() error { return admin.Get(ctx, client.ObjectKey{Name: rq}, &corev1.Namespace{}) }).
		WithTimeout(30*time.Second).Should(Succeed(), "the operator creates the requests namespace")
	ns := fmt.Sprintf("%s-%d", name, time.Now().UnixNano()%1000000)
	g.Expect(admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	t.Cleanup(func() { _ = admin.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}) })
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "pipeline", Namespace: ns}}
	g.Expect(admin.Create(ctx, sa)).To(Succeed())
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "pipeline-" + ns, Namespace: rq},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: requestConfigMapsRole()},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa.Name, Namespace: ns}}}
	g.Expect(admin.Create(ctx, rb)).To(Succeed())
	t.Cleanup(func() { _ = admin.Delete(ctx, rb) })
	p := &requestPipeline{user: "system:serviceaccount:" + ns + ":pipeline"}
	p.kubeconfig, p.client = loginAs(t, sa, rq)
	return p
}

// requestName is a request name that matches the default patterns, unique within the run.
func requestName(what string) string {
	return fmt.Sprintf("nsp-%s-%d", what, time.Now().UnixNano()%10000000)
}

// kubectlWithin runs kubectl like kubectl(), with stdin, and kills it when ctx ends: a command that
// blocks shows up as ctx.Err() != nil instead of a hung test.
func kubectlWithin(ctx context.Context, kubeconfig, stdin string, args ...string) (string, error) {
	bin := os.Getenv("KUBECTL")
	if bin == "" {
		bin = "kubectl"
	}
	cmd := exec.CommandContext(ctx, bin, append([]string{"--kubeconfig", kubeconfig}, args...)...)
	cmd.WaitDelay = 5 * time.Second
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	err := cmd.Run()
	return out.String(), err
}

// expectForbidden asserts that kubectl refused the command with 403.
func expectForbidden(g Gomega, out string, err error, what string) {
	g.Expect(err).To(HaveOccurred(), "%s was allowed: %s", what, out)
	g.Expect(strings.ToLower(out)).To(ContainSubstring("forbidden"), what)
}

// releaseWithToken is how a shell pipeline releases its namespace: `kubectl --token $TOKEN delete
// namespace N` with kubectl's default flags (which wait for the deletion). It fails the test if
// kubectl does not return within limit or fails.
func releaseWithToken(t *testing.T, kubeconfig, token, name string, limit time.Duration) {
	t.Helper()
	g := NewWithT(t)
	cctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	start := time.Now()
	out, err := kubectlWithin(cctx, kubeconfig, "", "--token", token, "delete", "namespace", name)
	took := time.Since(start)
	g.Expect(errors.Is(cctx.Err(), context.DeadlineExceeded)).To(BeFalse(),
		"`kubectl delete namespace %s` with default flags did not return within %s: %s", name, limit, out)
	g.Expect(err).NotTo(HaveOccurred(), "`kubectl delete namespace %s` with default flags failed after %s: %s", name, took, out)
	t.Logf("kubectl delete namespace %s returned after %s: %s", name, took.Round(10*time.Millisecond), strings.TrimSpace(out))
	ns := &corev1.Namespace{}
	if err := admin.Get(ctx, client.ObjectKey{Name: name}, ns); err == nil {
		g.Expect(ns.DeletionTimestamp).NotTo(BeNil(), "namespace %s is neither gone nor terminating", name)
	} else {
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "reading namespace %s: %v", name, err)
	}
}

// secretToken decodes the token of a credentials Secret.
func secretToken(sec *corev1.Secret) string { return string(sec.Data["token"]) }

// configMapAnnotation reads an annotation of a request ConfigMap with kubectl as the pipeline (`get`).
func configMapAnnotation(kubeconfig, name, key string) (string, error) {
	path := strings.ReplaceAll(key, ".", `\.`)
	return kubectl(kubeconfig, "get", "configmap", name, "-o", "jsonpath={.metadata.annotations."+path+"}")
}
