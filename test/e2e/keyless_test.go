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

// Keyless tenants (credentials mode Requester): the pipeline's own identity is bound in the namespace;
// no token is minted and no Secret written. Here the pipeline identity is a ServiceAccount acting with
// its own token and the shipped editor role; test/oidc does the same with a real OIDC issuer.

import (
	"fmt"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
	"github.com/nsclaim/nsclaim-operator/internal/claimpolicy"
)

// keylessIdentity is a ServiceAccount of namespace ns with exactly the shipped editor role on claims
// there, logged in with its own token; it returns the pipeline and the username the API server
// authenticates it as.
func keylessIdentity(t *testing.T, ns, name string) (*pipeline, string) {
	t.Helper()
	g := NewWithT(t)
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
	g.Expect(admin.Create(ctx, sa)).To(Succeed())
	g.Expect(admin.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "claims-" + name, Namespace: ns},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: editorRole},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: ns}}})).To(Succeed())
	p := &pipeline{ns: ns}
	p.kubeconfig, p.client = loginAs(t, sa, ns)
	return p, "system:serviceaccount:" + ns + ":" + name
}

// watchSecrets records every Secret labelled as nsclaim's that appears in namespace ns from now on,
// until stop is called.
func watchSecrets(t *testing.T, ns string) (stop func() []string) {
	t.Helper()
	wc, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme})
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	w, err := wc.Watch(ctx, &corev1.SecretList{}, client.InNamespace(ns),
		client.MatchingLabels{tenancyv1alpha1.ManagedByLabel: tenancyv1alpha1.ManagedByValue})
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	var (
		mu   sync.Mutex
		seen []string
		done = make(chan struct{})
	)
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			if s, ok := ev.Object.(*corev1.Secret); ok && ev.Type != watch.Deleted {
				mu.Lock()
				seen = append(seen, s.Namespace+"/"+s.Name)
				mu.Unlock()
			}
		}
	}()
	return func() []string {
		w.Stop()
		<-done
		mu.Lock()
		defer mu.Unlock()
		return seen
	}
}

// TestKeylessPipelineUsesItsOwnIdentity: a pipeline ServiceAccount admitted by a class of credentials
// mode Requester claims a namespace with its own token, waits for Ready, creates a ConfigMap there with
// that same token, is forbidden in any other namespace (its own included) and on cluster-scoped objects,
// and deletes the claim; no Secret of nsclaim's exists at any point. A second ServiceAccount of the same
// namespace, which the class does not admit, is refused with CreatorNotAdmitted naming the class field,
// and nothing is made for it.
func TestKeylessPipelineUsesItsOwnIdentity(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ns := fmt.Sprintf("keyless-%d", time.Now().UnixNano()%100000)
	g.Expect(admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	t.Cleanup(func() { _ = admin.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}) })
	stopWatch := watchSecrets(t, ns)
	ci, ciUser := keylessIdentity(t, ns, "ci")
	intruder, intruderUser := keylessIdentity(t, ns, "intruder")
	class := newClass(t, ns, tenancyv1alpha1.NamespaceClassSpec{
		ClusterRole: "edit", Naming: tenancyv1alpha1.NamingSpec{Prefix: "kl-"}, PodSecurity: tenancyv1alpha1.PodSecurityRestricted,
		Credentials: tenancyv1alpha1.CredentialsSpec{Mode: tenancyv1alpha1.CredentialsModeRequester,
			Requester: &tenancyv1alpha1.RequesterCredentials{AllowedUsernames: []string{"system:serviceaccount:" + ns + ":ci"}}},
	})

	// The pipeline: create, wait with its own token, use.
	claim := &tenancyv1alpha1.NamespaceClaim{ObjectMeta: metav1.ObjectMeta{Name: "run-1"},
		Spec: tenancyv1alpha1.NamespaceClaimSpec{ClassName: class.Name}}
	createClaim(t, ci, claim)
	out, err := kubectl(ci.kubeconfig, "wait", "--for=condition=Ready", "namespaceclaim/run-1", "--timeout=90s")
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Expect(ci.client.Get(ctx, client.ObjectKeyFromObject(claim), claim)).To(Succeed())
	g.Expect(claim.Spec.Creator).NotTo(BeNil())
	g.Expect(claim.Spec.Creator.Username).To(Equal(ciUser))
	g.Expect(claim.Status.BoundUser).To(Equal(ciUser))
	g.Expect(claim.Status.CredentialsSecretName).To(BeEmpty())
	tenantNS := claim.Status.Namespace
	g.Expect(tenantNS).NotTo(BeEmpty())

	out, err = kubectl(ci.kubeconfig, "-n", tenantNS, "create", "configmap", "built-by-ci", "--from-literal=a=b")
	g.Expect(err).NotTo(HaveOccurred(), out)
	for _, other := range []string{ns, "default", "kube-system"} {
		out, err = kubectl(ci.kubeconfig, "-n", other, "create", "configmap", "escape")
		expectForbidden(g, out, err, "creating a ConfigMap in "+other)
		out, err = kubectl(ci.kubeconfig, "-n", other, "get", "secrets")
		expectForbidden(g, out, err, "listing Secrets in "+other)
	}
	out, err = kubectl(ci.kubeconfig, "create", "namespace", "kl-escape-"+ns)
	expectForbidden(g, out, err, "creating a namespace")
	out, err = kubectl(ci.kubeconfig, "create", "clusterrolebinding", "kl-escape-"+ns, "--clusterrole=admin", "--user="+ciUser)
	expectForbidden(g, out, err, "creating a ClusterRoleBinding")
	out, err = kubectl(ci.kubeconfig, "get", "nodes")
	expectForbidden(g, out, err, "listing nodes")
	// No ServiceAccount token and no Secret in the tenant namespace either.
	sas := &corev1.ServiceAccountList{}
	g.Expect(admin.List(ctx, sas, client.InNamespace(tenantNS), client.MatchingLabels{tenancyv1alpha1.ManagedByLabel: tenancyv1alpha1.ManagedByValue})).To(Succeed())
	g.Expect(sas.Items).To(BeEmpty(), "no tenant ServiceAccount in mode Requester")
	secrets := &corev1.SecretList{}
	g.Expect(admin.List(ctx, secrets, client.InNamespace(tenantNS))).To(Succeed())
	g.Expect(secrets.Items).To(BeEmpty())
	rb := &rbacv1.RoleBinding{}
	g.Expect(admin.Get(ctx, client.ObjectKey{Namespace: tenantNS, Name: claimpolicy.TenantRoleBindingName}, rb)).To(Succeed())
	g.Expect(rb.Subjects).To(Equal([]rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: ciUser}}))

	// The intruder forges the admitted identity as creator; the API server records its own.
	forged := &tenancyv1alpha1.NamespaceClaim{ObjectMeta: metav1.ObjectMeta{Name: "run-2"},
		Spec: tenancyv1alpha1.NamespaceClaimSpec{ClassName: class.Name, Creator: &tenancyv1alpha1.ClaimCreator{Username: ciUser}}}
	createClaim(t, intruder, forged)
	refused := waitReason(t, forged, tenancyv1alpha1.CreatorNotAdmittedReason)
	g.Expect(refused.Message).To(ContainSubstring("spec.credentials.requester.allowedUsernames"))
	g.Expect(forged.Spec.Creator.Username).To(Equal(intruderUser))
	g.Expect(forged.Status.Namespace).To(BeEmpty())
	// Nor may it rewrite the stamp of the claim it made.
	forged.Spec.Creator.Username = ciUser
	err = intruder.client.Update(ctx, forged)
	g.Expect(err).To(HaveOccurred())
	g.Expect(err.Error()).To(ContainSubstring("creator is recorded by the API server"))

	// The pipeline deletes its claim: the namespace goes with it.
	g.Expect(ci.client.Delete(ctx, claim)).To(Succeed())
	g.Eventually(namespaceGoing(tenantNS)).WithTimeout(90 * time.Second).Should(BeTrue())
	g.Eventually(gone(claim)).WithTimeout(90 * time.Second).Should(BeTrue())
	g.Expect(stopWatch()).To(BeEmpty(), "nsclaim wrote a Secret next to a claim of mode Requester")
}
