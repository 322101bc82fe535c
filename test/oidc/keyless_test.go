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

package oidc

import (
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
)

// TestAuthenticatorMapsGitHubTokens: the API server takes the issuer's token as the pipeline's
// identity (username from `sub`, group from `repository`), and rejects a repository outside `org/`
// (the configuration's claimValidationRules).
func TestAuthenticatorMapsGitHubTokens(t *testing.T) {
	g := NewWithT(t)
	app := pipeline(t, issuer.token(t, "org/app", pullRequestRef))
	review := &authenticationv1.SelfSubjectReview{}
	g.Eventually(func() error { review = &authenticationv1.SelfSubjectReview{}; return app.Create(ctx, review) }).
		WithTimeout(30*time.Second).WithPolling(time.Second).Should(Succeed(), "the API server accepts the issuer's token")
	g.Expect(review.Status.UserInfo.Username).To(Equal(username("org/app", pullRequestRef)))
	g.Expect(review.Status.UserInfo.Groups).To(ContainElements("github:repo:org/app", "system:authenticated"))

	evil := pipeline(t, issuer.token(t, "evil/app", pullRequestRef))
	err := evil.Create(ctx, &authenticationv1.SelfSubjectReview{})
	g.Expect(apierrors.IsUnauthorized(err)).To(BeTrue(), "a repository outside org/ is rejected by the authenticator, got %v", err)
}

// TestPipelineClaimsWithItsOIDCToken: with nothing but its ID token, a pipeline of org/app creates a
// claim, waits for Ready, works in its namespace with the same token, is denied everywhere else,
// cannot rewrite the recorded creator, and deletes the claim; its namespace goes. No Secret of
// nsclaim's appears in the requester namespace at any point, and no token is issued.
func TestPipelineClaimsWithItsOIDCToken(t *testing.T) {
	g := NewWithT(t)
	secrets := watchSecrets(t)
	user := username("org/app", pullRequestRef)
	p := pipeline(t, issuer.token(t, "org/app", pullRequestRef))

	claim := &tenancyv1alpha1.NamespaceClaim{ObjectMeta: metav1.ObjectMeta{Name: "pr-42", Namespace: requesterNamespace},
		Spec: tenancyv1alpha1.NamespaceClaimSpec{ClassName: className, NamespaceName: "pr-42"}}
	g.Expect(p.Create(ctx, claim)).To(Succeed())
	t.Cleanup(func() { _ = admin.Delete(ctx, claim) })
	g.Expect(claim.Spec.Creator).NotTo(BeNil(), "the API server stamps the creator")
	g.Expect(claim.Spec.Creator.Username).To(Equal(user))
	g.Expect(claim.Spec.Creator.Groups).To(ContainElement("github:repo:org/app"))

	waitReady(t, p, claim)
	secrets.expectNone(t)
	ns := claim.Status.Namespace
	g.Expect(ns).To(Equal("ci-pr-42"))
	g.Expect(claim.Status.BoundUser).To(Equal(user))
	g.Expect(claim.Status.CredentialsSecretName).To(BeEmpty(), "no credentials Secret in mode Requester")
	g.Expect(claim.Status.IssuedTokens).To(BeEmpty(), "no token is minted in mode Requester")

	// The namespace binds the creator's username, and no ServiceAccount.
	bindings := &rbacv1.RoleBindingList{}
	g.Expect(admin.List(ctx, bindings, client.InNamespace(ns))).To(Succeed())
	var subjects []rbacv1.Subject
	for _, rb := range bindings.Items {
		if rb.RoleRef.Name == "edit" {
			subjects = append(subjects, rb.Subjects...)
		}
	}
	g.Expect(subjects).To(ConsistOf(HaveField("Name", user)), "the class's role is bound to the creator only")
	g.Expect(subjects[0].Kind).To(Equal(rbacv1.UserKind))

	t.Run("works in its namespace with the same token", func(t *testing.T) {
		g := NewWithT(t)
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "build", Namespace: ns}, Data: map[string]string{"sha": "42"}}
		g.Expect(p.Create(ctx, cm)).To(Succeed())
		g.Expect(p.List(ctx, &corev1.PodList{}, client.InNamespace(ns))).To(Succeed())
	})

	t.Run("is denied everywhere else", func(t *testing.T) {
		forbidden := map[string]error{
			"a ConfigMap in another team's namespace": p.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "pwn", Namespace: otherNamespace}}),
			"reading another team's ConfigMap":        p.Get(ctx, client.ObjectKey{Namespace: otherNamespace, Name: "settings"}, &corev1.ConfigMap{}),
			"a ConfigMap in default":                  p.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "pwn", Namespace: "default"}}),
			"a ConfigMap in the requester namespace":  p.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "pwn", Namespace: requesterNamespace}}),
			"Secrets of the requester namespace":      p.List(ctx, &corev1.SecretList{}, client.InNamespace(requesterNamespace)),
			"listing namespaces":                      p.List(ctx, &corev1.NamespaceList{}),
			"a ClusterRole": p.Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "pwn"},
				Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get"}}}}),
			"a ClusterRoleBinding": p.Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "pwn"},
				RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "edit"},
				Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}}}),
			"a namespace": p.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "pwn"}}),
		}
		for what, err := range forbidden {
			if !apierrors.IsForbidden(err) {
				t.Errorf("%s: want Forbidden, got %v", what, err)
			}
		}
	})

	t.Run("cannot rewrite the recorded creator", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(p.Get(ctx, client.ObjectKeyFromObject(claim), claim)).To(Succeed())
		claim.Spec.Creator.Username = username("org/app", mainRef)
		err := p.Update(ctx, claim)
		g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "the API server rejects an edit of spec.creator, got %v", err)
	})

	secrets.expectNone(t)
	g.Expect(p.Delete(ctx, &tenancyv1alpha1.NamespaceClaim{ObjectMeta: claim.ObjectMeta})).To(Succeed())
	g.Eventually(func() bool {
		return apierrors.IsNotFound(admin.Get(ctx, client.ObjectKey{Name: ns}, &corev1.Namespace{}))
	}).WithTimeout(2*time.Minute).WithPolling(time.Second).Should(BeTrue(), "the namespace is deleted with its claim")
	g.Eventually(func() bool {
		return apierrors.IsNotFound(p.Get(ctx, client.ObjectKeyFromObject(claim), &tenancyv1alpha1.NamespaceClaim{}))
	}).WithTimeout(30 * time.Second).WithPolling(time.Second).Should(BeTrue())
	secrets.expectNone(t)
}

// TestOtherRepositoryIsNotAdmitted: a pipeline of org/other is authenticated and may create claims in
// the requester namespace, but the class admits only org/app's usernames: its claim is refused with
// CreatorNotAdmitted and nothing is provisioned, also when it writes org/app's username into
// spec.creator itself (the admission policy replaces it with the authenticated one).
func TestOtherRepositoryIsNotAdmitted(t *testing.T) {
	secrets := watchSecrets(t)
	other := pipeline(t, issuer.token(t, "org/other", mainRef))
	for name, forged := range map[string]*tenancyv1alpha1.ClaimCreator{
		"other-plain":  nil,
		"other-forged": {Username: username("org/app", pullRequestRef), Groups: []string{"github:repo:org/app"}},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			claim := &tenancyv1alpha1.NamespaceClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: requesterNamespace},
				Spec: tenancyv1alpha1.NamespaceClaimSpec{ClassName: className, NamespaceName: name, Creator: forged}}
			g.Expect(other.Create(ctx, claim)).To(Succeed())
			t.Cleanup(func() { _ = admin.Delete(ctx, claim) })
			g.Expect(claim.Spec.Creator).NotTo(BeNil())
			g.Expect(claim.Spec.Creator.Username).To(Equal(username("org/other", mainRef)), "the stamp is the authenticated user's")

			g.Eventually(func(g Gomega) {
				g.Expect(other.Get(ctx, client.ObjectKeyFromObject(claim), claim)).To(Succeed())
				ready := meta.FindStatusCondition(claim.Status.Conditions, tenancyv1alpha1.ReadyCondition)
				g.Expect(ready).NotTo(BeNil())
				g.Expect(ready.Status).To(Equal(metav1.ConditionFalse))
				g.Expect(ready.Reason).To(Equal(tenancyv1alpha1.CreatorNotAdmittedReason))
				g.Expect(ready.Message).To(ContainSubstring("allowedUsernames"), "the refusal names the class field")
			}).WithTimeout(60 * time.Second).WithPolling(time.Second).Should(Succeed())
			g.Expect(claim.Status.Namespace).To(BeEmpty())
			g.Expect(claim.Status.BoundUser).To(BeEmpty())
			g.Expect(apierrors.IsNotFound(admin.Get(ctx, client.ObjectKey{Name: "ci-" + name}, &corev1.Namespace{}))).
				To(BeTrue(), "no namespace is made for a creator the class does not admit")
			g.Expect(other.Delete(ctx, claim)).To(Succeed())
			g.Eventually(func() bool {
				return apierrors.IsNotFound(other.Get(ctx, client.ObjectKeyFromObject(claim), &tenancyv1alpha1.NamespaceClaim{}))
			}).WithTimeout(30 * time.Second).WithPolling(time.Second).Should(BeTrue())
		})
	}
	secrets.expectNone(t)
}

// waitReady waits, as the pipeline, until claim is Ready, and leaves the claim as last read.
func waitReady(t *testing.T, p client.Client, claim *tenancyv1alpha1.NamespaceClaim) {
	t.Helper()
	NewWithT(t).Eventually(func(g Gomega) {
		g.Expect(p.Get(ctx, client.ObjectKeyFromObject(claim), claim)).To(Succeed())
		ready := meta.FindStatusCondition(claim.Status.Conditions, tenancyv1alpha1.ReadyCondition)
		g.Expect(ready).NotTo(BeNil())
		g.Expect(ready.Status).To(Equal(metav1.ConditionTrue), "Ready: %s: %s", ready.Reason, ready.Message)
	}).WithTimeout(90 * time.Second).WithPolling(500 * time.Millisecond).Should(Succeed())
}

// secretWatch records, from an admin's watch of the requester namespace's Secrets, every Secret that
// is nsclaim's (its labels, an owner reference to a claim, a claim's default credentials name
// `<claim>-kubeconfig`) or a ServiceAccount token, while a test runs: a watch sees each one, however
// briefly it exists.
type secretWatch struct {
	mu    sync.Mutex
	found []string
}

func watchSecrets(t *testing.T) *secretWatch {
	t.Helper()
	list := &corev1.SecretList{}
	if err := admin.List(ctx, list, client.InNamespace(requesterNamespace)); err != nil {
		t.Fatal(err)
	}
	s := &secretWatch{}
	for i := range list.Items {
		s.see(&list.Items[i])
	}
	w, err := admin.Watch(ctx, &corev1.SecretList{}, client.InNamespace(requesterNamespace),
		&client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: list.ResourceVersion}})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			if ev.Type == watch.Error {
				s.record("watch error: " + apierrors.FromObject(ev.Object).Error())
				continue
			}
			if sec, ok := ev.Object.(*corev1.Secret); ok {
				s.see(sec)
			}
		}
	}()
	t.Cleanup(func() { w.Stop(); <-done })
	return s
}

func (s *secretWatch) see(sec *corev1.Secret) {
	nsclaims := sec.Labels[tenancyv1alpha1.ManagedByLabel] != "" || len(sec.Labels[tenancyv1alpha1.ClaimUIDLabel]) > 0
	for _, o := range sec.OwnerReferences {
		nsclaims = nsclaims || o.Kind == "NamespaceClaim"
	}
	if nsclaims || strings.HasSuffix(sec.Name, "-kubeconfig") || sec.Type == corev1.SecretTypeServiceAccountToken {
		s.record(sec.Name)
	}
}

func (s *secretWatch) record(what string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !slices.Contains(s.found, what) {
		s.found = append(s.found, what)
	}
}

// expectNone fails t if a Secret of nsclaim's was seen in the requester namespace so far, or is there
// now (a list, so that a Secret written a moment ago counts before its watch event arrives).
func (s *secretWatch) expectNone(t *testing.T) {
	t.Helper()
	list := &corev1.SecretList{}
	if err := admin.List(ctx, list, client.InNamespace(requesterNamespace)); err != nil {
		t.Fatal(err)
	}
	for i := range list.Items {
		s.see(&list.Items[i])
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.found) > 0 {
		t.Errorf("Secrets of nsclaim's appeared in %s: %v", requesterNamespace, s.found)
	}
}
