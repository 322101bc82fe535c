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
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
	"github.com/nsclaim/nsclaim-operator/internal/claimpolicy"
	"github.com/nsclaim/nsclaim-operator/internal/fence"
)

// The suite's reconciler reads the creator stamp from the API server on every decision, so these tests
// install and remove the shipped MutatingAdmissionPolicy as they need. They run sequentially (the stamp
// is cluster-wide) and leave it removed.

// installStamp installs the shipped creator stamp and returns once the API server stamps claims with
// it and its clock is past the moment claims created from now on are trusted.
func installStamp(t *testing.T) {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	want, err := fence.ShippedStamp()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(client.IgnoreAlreadyExists(k8s.Create(ctx, want.Policy.DeepCopy()))).To(Succeed())
	g.Expect(client.IgnoreAlreadyExists(k8s.Create(ctx, want.Binding.DeepCopy()))).To(Succeed())
	t.Cleanup(func() { removeStamp(t) })
	st := fence.CheckStamp(ctx, k8s, want)
	g.Expect(st.Intact).To(BeTrue(), "%v", st.Problems)
	g.Eventually(func(g Gomega) {
		c := &tenancyv1alpha1.NamespaceClaim{ObjectMeta: metav1.ObjectMeta{Name: "probe", Namespace: metav1.NamespaceDefault},
			Spec: tenancyv1alpha1.NamespaceClaimSpec{Creator: &tenancyv1alpha1.ClaimCreator{Username: "forged"}}}
		g.Expect(k8s.Create(ctx, c, client.DryRunAll)).To(Succeed())
		g.Expect(c.Spec.Creator).NotTo(BeNil())
		g.Expect(c.Spec.Creator.Username).NotTo(Equal("forged"))
		g.Expect(c.CreationTimestamp.After(st.InForceSince.Add(claimpolicy.StampSettle))).To(BeTrue())
	}).WithTimeout(20 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())
}

// removeStamp deletes the creator stamp and waits until claims are no longer stamped.
func removeStamp(t *testing.T) {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	want, err := fence.ShippedStamp()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(client.IgnoreNotFound(k8s.Delete(ctx, want.Binding.DeepCopy()))).To(Succeed())
	g.Expect(client.IgnoreNotFound(k8s.Delete(ctx, want.Policy.DeepCopy()))).To(Succeed())
	g.Eventually(func(g Gomega) {
		c := &tenancyv1alpha1.NamespaceClaim{ObjectMeta: metav1.ObjectMeta{Name: "probe", Namespace: metav1.NamespaceDefault}}
		g.Expect(k8s.Create(ctx, c, client.DryRunAll)).To(Succeed())
		g.Expect(c.Spec.Creator).To(BeNil())
	}).WithTimeout(20 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())
}

// impersonating returns a client that acts as user with groups and extra (envtest's admin may
// impersonate anyone).
func impersonating(t *testing.T, user string, groups []string, extra map[string][]string) client.Client {
	t.Helper()
	c := rest.CopyConfig(cfg)
	c.Impersonate = rest.ImpersonationConfig{UserName: user, UID: "uid-" + user, Groups: groups, Extra: extra}
	cl, err := client.New(c, client.Options{Scheme: scheme})
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	return cl
}

// mayClaim lets user create and edit claims in namespace ns, as the shipped namespaceclaim-editor role.
func mayClaim(t *testing.T, ns, user string) {
	t.Helper()
	ctx := context.Background()
	g := NewWithT(t)
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "claims", Namespace: ns}, Rules: []rbacv1.PolicyRule{{
		APIGroups: []string{tenancyv1alpha1.GroupVersion.Group}, Resources: []string{"namespaceclaims"},
		Verbs: []string{"create", "delete", "get", "list", "patch", "update", "watch"}}}}
	g.Expect(client.IgnoreAlreadyExists(k8s.Create(ctx, role))).To(Succeed())
	g.Expect(k8s.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: uniq("claims"), Namespace: ns},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}}})).To(Succeed())
}

func requesterMode(allowed []string, bindGroups ...string) classOpt {
	return func(c *tenancyv1alpha1.NamespaceClass) {
		c.Spec.Credentials.Mode = tenancyv1alpha1.CredentialsModeRequester
		c.Spec.Credentials.Requester = &tenancyv1alpha1.RequesterCredentials{AllowedUsernames: allowed, BindGroups: bindGroups}
	}
}

// createAs creates a claim of class in ns as the client's identity, the way a pipeline does, and
// retries while its RBAC settles.
func createAs(t *testing.T, as client.Client, ns, class string, creator *tenancyv1alpha1.ClaimCreator) *tenancyv1alpha1.NamespaceClaim {
	t.Helper()
	c := &tenancyv1alpha1.NamespaceClaim{ObjectMeta: metav1.ObjectMeta{Name: uniq("claim"), Namespace: ns},
		Spec: tenancyv1alpha1.NamespaceClaimSpec{ClassName: class, Creator: creator}}
	NewWithT(t).Eventually(func() error { return as.Create(context.Background(), c.DeepCopy()) }).WithTimeout(10 * time.Second).Should(Succeed())
	return c
}

// TestRequesterModeBindsCreator: a claim created by an admitted identity is stamped by the API server
// with that identity (a forged creator, extra keys and groups included, is replaced whole), becomes
// Ready with the RoleBindings naming the user and its bound group, and no ServiceAccount, token or
// Secret is made; the stamp cannot be edited afterwards.
func TestRequesterModeBindsCreator(t *testing.T) {
	requireEnvtest(t)
	installStamp(t)
	g := NewWithT(t)
	ctx := context.Background()
	class := newClass(t, withPrefix("keyless-"), requesterMode([]string{"ci:org/*"}, "ci:org"))
	ns := newRequesterNamespace(t, nil)
	user := uniq("ci:org/app")
	mayClaim(t, ns, user)
	pipeline := impersonating(t, user, []string{"ci:org", "ci:other"}, map[string][]string{"ci.example/run": {"42"}})

	forged := &tenancyv1alpha1.ClaimCreator{Username: "admin", UID: "0", Groups: []string{"system:masters"},
		Extra: map[string][]string{"forged.example/key": {"v"}, "ci.example/run": {"1"}}}
	claim := createAs(t, pipeline, ns, class.Name, forged)
	got := waitFor(t, claim, tenancyv1alpha1.ReadyCondition, metav1.ConditionTrue, tenancyv1alpha1.ProvisionedReason)

	g.Expect(got.Spec.Creator).To(Equal(&tenancyv1alpha1.ClaimCreator{Username: user, UID: "uid-" + user,
		Groups: []string{"ci:org", "ci:other", "system:authenticated"}, Extra: map[string][]string{"ci.example/run": {"42"}}}))
	g.Expect(got.Status.BoundUser).To(Equal(user))
	g.Expect(got.Status.CredentialsSecretName).To(BeEmpty())
	g.Expect(got.Status.TokenExpiresAt).To(BeNil())
	creds := meta.FindStatusCondition(got.Status.Conditions, tenancyv1alpha1.CredentialsReadyCondition)
	g.Expect(creds.Reason).To(Equal(tenancyv1alpha1.CreatorBoundReason))
	g.Expect(meta.IsStatusConditionTrue(got.Status.Conditions, tenancyv1alpha1.PermissionsVerifiedCondition)).To(BeTrue())

	tenantNS := got.Status.Namespace
	wantSubjects := []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}, {Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: "ci:org"}}
	for _, name := range []string{claimpolicy.TenantRoleBindingName, claimpolicy.ReleaseRoleName} {
		rb := &rbacv1.RoleBinding{}
		g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: tenantNS, Name: name}, rb)).To(Succeed())
		g.Expect(rb.Subjects).To(Equal(wantSubjects), "RoleBinding %s", name)
	}
	crb := &rbacv1.ClusterRoleBinding{}
	g.Expect(k8s.Get(ctx, client.ObjectKey{Name: claimpolicy.NamespaceWatcherName(tenantNS)}, crb)).To(Succeed())
	g.Expect(crb.Subjects).To(Equal(wantSubjects))
	err := k8s.Get(ctx, client.ObjectKey{Namespace: tenantNS, Name: tenancyv1alpha1.TenantServiceAccountName}, &corev1.ServiceAccount{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "no tenant ServiceAccount in mode Requester: %v", err)
	secrets := &corev1.SecretList{}
	g.Expect(k8s.List(ctx, secrets, client.InNamespace(ns))).To(Succeed())
	g.Expect(secrets.Items).To(BeEmpty(), "no Secret is written next to the claim")

	// The stamp is immutable, for the requester as for anyone.
	edited := got.DeepCopy()
	edited.Spec.Creator.Username = "admin"
	err = pipeline.Update(ctx, edited)
	g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "%v", err)
	g.Expect(err.Error()).To(ContainSubstring("creator is recorded by the API server when the claim is created and is immutable"))
	edited = got.DeepCopy()
	edited.Spec.Creator = nil
	g.Expect(apierrors.IsInvalid(pipeline.Update(ctx, edited))).To(BeTrue())

	// Deleting the claim deletes its namespace's objects with it; there are no credentials to delete.
	g.Expect(k8s.Delete(ctx, got)).To(Succeed())
	g.Eventually(func() bool {
		return isNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(got), &tenancyv1alpha1.NamespaceClaim{}))
	}).
		WithTimeout(30 * time.Second).Should(BeTrue())
}

// TestRequesterModeRefusesUnadmittedCreator: a creator matching none of the class's allowedUsernames is
// refused with CreatorNotAdmitted naming the field, and nothing is made for it.
func TestRequesterModeRefusesUnadmittedCreator(t *testing.T) {
	requireEnvtest(t)
	installStamp(t)
	g := NewWithT(t)
	ctx := context.Background()
	class := newClass(t, withPrefix("keyless-"), requesterMode([]string{"ci:org/*"}))
	ns := newRequesterNamespace(t, nil)
	user := uniq("ci:evil/app")
	mayClaim(t, ns, user)
	// A forged creator the class would admit is replaced by the real one, which it does not.
	claim := createAs(t, impersonating(t, user, []string{"ci:evil"}, nil), ns, class.Name, &tenancyv1alpha1.ClaimCreator{Username: "ci:org/app"})
	got := waitFor(t, claim, tenancyv1alpha1.ReadyCondition, metav1.ConditionFalse, tenancyv1alpha1.CreatorNotAdmittedReason)
	ready := meta.FindStatusCondition(got.Status.Conditions, tenancyv1alpha1.ReadyCondition)
	g.Expect(ready.Message).To(ContainSubstring("spec.credentials.requester.allowedUsernames"))
	g.Expect(ready.Message).To(ContainSubstring(user))
	g.Expect(got.Status.Namespace).To(BeEmpty())
	g.Expect(got.Status.BoundUser).To(BeEmpty())
	owned := &corev1.NamespaceList{}
	g.Expect(k8s.List(ctx, owned, client.MatchingLabels{tenancyv1alpha1.ClaimUIDLabel: string(got.UID)})).To(Succeed())
	g.Expect(owned.Items).To(BeEmpty())
}

// TestRequesterModeFailsClosedWithoutStamp: while the creator stamp is absent, a class of mode
// Requester reports it and its claims are refused with CreatorNotStamped, whether they carry no creator
// or one the requester wrote itself; once the stamp is installed the class recovers, but a claim created
// before it stays refused (its creator cannot be verified), while a claim created after it is Ready.
func TestRequesterModeFailsClosedWithoutStamp(t *testing.T) {
	requireEnvtest(t)
	removeStamp(t)
	g := NewWithT(t)
	ctx := context.Background()
	class := newClass(t, withPrefix("keyless-"), requesterMode([]string{"ci:org/*"}))
	g.Eventually(func(g Gomega) {
		cur := &tenancyv1alpha1.NamespaceClass{}
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(class), cur)).To(Succeed())
		c := meta.FindStatusCondition(cur.Status.Conditions, tenancyv1alpha1.ReadyCondition)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(c.Reason).To(Equal(tenancyv1alpha1.CreatorNotStampedReason))
		g.Expect(c.Message).To(ContainSubstring("MutatingAdmissionPolicy nsclaim-operator-stamp-creator is missing"))
	}).WithTimeout(30 * time.Second).Should(Succeed())

	ns := newRequesterNamespace(t, nil)
	user := uniq("ci:org/app")
	mayClaim(t, ns, user)
	pipeline := impersonating(t, user, nil, nil)
	unstamped := createAs(t, pipeline, ns, class.Name, nil)
	got := waitFor(t, unstamped, tenancyv1alpha1.ReadyCondition, metav1.ConditionFalse, tenancyv1alpha1.CreatorNotStampedReason)
	g.Expect(meta.FindStatusCondition(got.Status.Conditions, tenancyv1alpha1.ReadyCondition).Message).To(ContainSubstring("no spec.creator"))
	selfMade := createAs(t, pipeline, ns, class.Name, &tenancyv1alpha1.ClaimCreator{Username: user})
	got = waitFor(t, selfMade, tenancyv1alpha1.ReadyCondition, metav1.ConditionFalse, tenancyv1alpha1.CreatorNotStampedReason)
	g.Expect(meta.FindStatusCondition(got.Status.Conditions, tenancyv1alpha1.ReadyCondition).Message).To(ContainSubstring("cannot be verified"))
	g.Expect(got.Status.Namespace).To(BeEmpty())

	installStamp(t)
	// A spec change makes the class controller look again at once.
	cur := &tenancyv1alpha1.NamespaceClass{}
	g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(class), cur)).To(Succeed())
	patch := client.MergeFrom(cur.DeepCopy())
	cur.Spec.Credentials.Requester.AllowedUsernames = append(cur.Spec.Credentials.Requester.AllowedUsernames, "ci:other/*")
	g.Expect(k8s.Patch(ctx, cur, patch)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(class), cur)).To(Succeed())
		g.Expect(meta.IsStatusConditionTrue(cur.Status.Conditions, tenancyv1alpha1.ReadyCondition)).To(BeTrue())
	}).WithTimeout(30 * time.Second).Should(Succeed())

	touch(t, selfMade)
	got = waitFor(t, selfMade, tenancyv1alpha1.ReadyCondition, metav1.ConditionFalse, tenancyv1alpha1.CreatorNotStampedReason)
	g.Expect(meta.FindStatusCondition(got.Status.Conditions, tenancyv1alpha1.ReadyCondition).Message).To(ContainSubstring("before the MutatingAdmissionPolicy"))
	g.Expect(got.Status.Namespace).To(BeEmpty())

	after := createAs(t, pipeline, ns, class.Name, nil)
	got = waitFor(t, after, tenancyv1alpha1.ReadyCondition, metav1.ConditionTrue, tenancyv1alpha1.ProvisionedReason)
	g.Expect(got.Status.BoundUser).To(Equal(user))
}

// TestRequesterModeSelfTestFindsCreatorsRightsElsewhere: the self-test proves, as the creator, that it
// can do nothing outside its namespace: a RoleBinding that grants the creator a role in some third
// namespace keeps the claim from Ready (ExcessPermissions naming the binding) until it is removed.
func TestRequesterModeSelfTestFindsCreatorsRightsElsewhere(t *testing.T) {
	requireEnvtest(t)
	installStamp(t)
	g := NewWithT(t)
	ctx := context.Background()
	class := newClass(t, withPrefix("keyless-"), requesterMode([]string{"ci:*"}))
	ns := newRequesterNamespace(t, nil)
	user := uniq("ci:org/app")
	mayClaim(t, ns, user)
	elsewhere := newRequesterNamespace(t, nil)
	grant := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "ci-edit", Namespace: elsewhere},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: testRoleName},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}}}
	g.Expect(k8s.Create(ctx, grant)).To(Succeed())

	claim := createAs(t, impersonating(t, user, []string{"ci:org"}, nil), ns, class.Name, nil)
	got := waitFor(t, claim, tenancyv1alpha1.ReadyCondition, metav1.ConditionFalse, tenancyv1alpha1.ExcessPermissionsReason)
	g.Expect(meta.FindStatusCondition(got.Status.Conditions, tenancyv1alpha1.ReadyCondition).Message).To(ContainSubstring("RoleBinding " + elsewhere + "/ci-edit"))
	g.Expect(got.Status.BoundUser).To(BeEmpty())

	g.Expect(k8s.Delete(ctx, grant)).To(Succeed())
	touch(t, claim)
	got = waitFor(t, claim, tenancyv1alpha1.ReadyCondition, metav1.ConditionTrue, tenancyv1alpha1.ProvisionedReason)
	g.Expect(got.Status.BoundUser).To(Equal(user))
}

// TestClassSwitchedToRequesterModeRevokesTheToken: when an admin switches a class from mode Token to
// Requester, a claim that already holds a token keeps none: its Secret and its ServiceAccount (whose
// token, wherever it was copied to, dies with it) are deleted, and nobody is bound.
func TestClassSwitchedToRequesterModeRevokesTheToken(t *testing.T) {
	requireEnvtest(t)
	t.Parallel()
	g := NewWithT(t)
	class := newClass(t)
	claim := newClaim(t, newRequesterNamespace(t, nil), withClass(class.Name))
	got := waitFor(t, claim, tenancyv1alpha1.ReadyCondition, metav1.ConditionTrue, tenancyv1alpha1.ProvisionedReason)
	sa := &corev1.ServiceAccount{}
	g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: got.Status.Namespace, Name: tenancyv1alpha1.TenantServiceAccountName}, sa)).To(Succeed())

	cur := &tenancyv1alpha1.NamespaceClass{}
	g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(class), cur)).To(Succeed())
	requesterMode([]string{"system:serviceaccount:*"})(cur)
	g.Expect(k8s.Update(ctx, cur)).To(Succeed())

	g.Eventually(func(g Gomega) {
		err := k8s.Get(ctx, client.ObjectKey{Namespace: claim.Namespace, Name: got.Status.CredentialsSecretName}, &corev1.Secret{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "credentials Secret still there: %v", err)
		now := &corev1.ServiceAccount{}
		err = k8s.Get(ctx, client.ObjectKeyFromObject(sa), now)
		g.Expect(apierrors.IsNotFound(err) || (err == nil && (now.UID != sa.UID || !now.DeletionTimestamp.IsZero()))).To(BeTrue(), "the tenant ServiceAccount is still there: %v", err)
		c := getClaim(g, claim)
		g.Expect(c.Status.CredentialsSecretName).To(BeEmpty())
		g.Expect(c.Status.BoundUser).To(BeEmpty())
		g.Expect(meta.IsStatusConditionTrue(c.Status.Conditions, tenancyv1alpha1.ReadyCondition)).To(BeFalse())
	}).WithTimeout(30 * time.Second).Should(Succeed())
	rbs := &rbacv1.RoleBindingList{}
	g.Expect(k8s.List(ctx, rbs, client.InNamespace(got.Status.Namespace))).To(Succeed())
	for _, rb := range rbs.Items {
		for _, sub := range rb.Subjects {
			g.Expect(sub.Kind == rbacv1.ServiceAccountKind && sub.Name == tenancyv1alpha1.TenantServiceAccountName).To(BeFalse(), "RoleBinding %s still binds the tenant ServiceAccount", rb.Name)
		}
	}
}
