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

// Attacks by a requester (a ServiceAccount bound to the shipped namespaceclaim editor role in its own
// namespace, acting with its own token) and by the tenant of a claim, against the operator running
// under the RBAC it ships with. Each test is named after the attack it makes. docs/security.md maps
// them to the controls they prove.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
)

// editorRole is the shipped ClusterRole for requesters (config/rbac, as config/local names it).
const editorRole = "nsclaim-operator-namespaceclaim-editor-role"

// newRequester is a pipeline identity with exactly the shipped editor role on NamespaceClaims in its
// own namespace, and `get` on Secrets there to read its credentials. labels, when given, label its
// namespace from its creation (a budget's requesters are chosen by them).
func newRequester(t *testing.T, name string, labels ...map[string]string) *pipeline {
	t.Helper()
	g := NewWithT(t)
	ns := fmt.Sprintf("%s-%d", name, time.Now().UnixNano()%100000)
	nsObj := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}
	for _, l := range labels {
		nsObj.Labels = l
	}
	g.Expect(admin.Create(ctx, nsObj)).To(Succeed())
	t.Cleanup(func() {
		_ = admin.Delete(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	})
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "requester", Namespace: ns}}
	g.Expect(admin.Create(ctx, sa)).To(Succeed())
	g.Expect(admin.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "claims", Namespace: ns},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: editorRole},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa.Name, Namespace: ns}}})).To(Succeed())
	g.Expect(admin.Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "secrets", Namespace: ns}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get"}},
	}})).To(Succeed())
	g.Expect(admin.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "secrets", Namespace: ns},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "secrets"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa.Name, Namespace: ns}}})).To(Succeed())
	p := &pipeline{ns: ns}
	p.kubeconfig, p.client = loginAs(t, sa, ns)
	return p
}

// newClass creates a class as the admin, removed at the end of the test.
func newClass(t *testing.T, name string, spec tenancyv1alpha1.NamespaceClassSpec) *tenancyv1alpha1.NamespaceClass {
	t.Helper()
	c := &tenancyv1alpha1.NamespaceClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: spec}
	NewWithT(t).Expect(admin.Create(ctx, c)).To(Succeed())
	t.Cleanup(func() { _ = admin.Delete(context.Background(), c) })
	return c
}

// waitClassObserved waits until the operator has reconciled the class's current generation (its
// status says so), so every controller of the manager reads it from the shared cache.
func waitClassObserved(t *testing.T, class *tenancyv1alpha1.NamespaceClass) {
	t.Helper()
	NewWithT(t).Eventually(func(g Gomega) {
		c := &tenancyv1alpha1.NamespaceClass{}
		g.Expect(admin.Get(ctx, client.ObjectKeyFromObject(class), c)).To(Succeed())
		g.Expect(c.Status.ObservedGeneration).To(Equal(c.Generation), "NamespaceClass %s not yet reconciled", c.Name)
	}).WithTimeout(30 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())
}

// createClaim creates a claim as the requester.
func createClaim(t *testing.T, p *pipeline, claim *tenancyv1alpha1.NamespaceClaim) *tenancyv1alpha1.NamespaceClaim {
	t.Helper()
	claim.Namespace = p.ns
	NewWithT(t).Expect(p.client.Create(ctx, claim)).To(Succeed())
	return claim
}

// readyReason returns the claim's Ready condition as admin reads it (status, reason, message).
func readyOf(g Gomega, claim *tenancyv1alpha1.NamespaceClaim) *metav1.Condition {
	c := &tenancyv1alpha1.NamespaceClaim{}
	g.Expect(admin.Get(ctx, client.ObjectKeyFromObject(claim), c)).To(Succeed())
	*claim = *c
	r := meta.FindStatusCondition(c.Status.Conditions, tenancyv1alpha1.ReadyCondition)
	g.Expect(r).NotTo(BeNil())
	return r
}

func waitReason(t *testing.T, claim *tenancyv1alpha1.NamespaceClaim, reason string) *metav1.Condition {
	t.Helper()
	var got *metav1.Condition
	NewWithT(t).Eventually(func(g Gomega) {
		got = readyOf(g, claim)
		g.Expect(got.Reason).To(Equal(reason), got.Message)
	}).WithTimeout(90 * time.Second).WithPolling(500 * time.Millisecond).Should(Succeed())
	return got
}

// namespaceGoing reports whether the namespace is gone or terminating.
func namespaceGoing(name string) func() bool {
	return func() bool {
		ns := &corev1.Namespace{}
		err := admin.Get(ctx, client.ObjectKey{Name: name}, ns)
		return client.IgnoreNotFound(err) == nil && (err != nil || !ns.DeletionTimestamp.IsZero())
	}
}

// TestRefusedClaimStillExpires: a requester makes its Ready claim refused (a TTL above the class's
// maxTTL, a label the class does not allow, an invalid token policy) to keep its namespace past its
// TTL. The namespace must still be deleted at the recorded expiry, the refusal reported, and the
// namespace's objects still repaired while refused.
func TestRefusedClaimStillExpires(t *testing.T) {
	t.Parallel()
	p := newRequester(t, "refused-expiry")
	ttl := &metav1.Duration{Duration: 2 * time.Minute}
	patches := map[string]struct {
		patch  string
		reason string
	}{
		"ttl":    {`{"spec":{"ttl":"200h"}}`, tenancyv1alpha1.TTLExceedsMaximumReason},
		"label":  {`{"spec":{"labels":{"not-allowed":"x"}}}`, tenancyv1alpha1.LabelNotAllowedReason},
		"policy": {`{"metadata":{"annotations":{"nsplease.container.training/issue-token":"forever"}}}`, tenancyv1alpha1.InvalidTokenPolicyReason},
	}
	for name, tc := range patches {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			g := NewWithT(t)
			_, claim := claimAndWait(t, p, "refused-"+name, ttl)
			nsName, expires := claim.Status.Namespace, claim.Status.ExpiresAt.Time
			g.Expect(p.client.Patch(ctx, claim, client.RawPatch(types.MergePatchType, []byte(tc.patch)))).To(Succeed())
			r := waitReason(t, claim, tc.reason)
			g.Expect(r.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(claim.Status.ExpiresAt.Time).To(BeTemporally("==", expires), "the recorded expiry is kept")

			// Repair goes on while refused: a deleted tenant RoleBinding comes back.
			rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: nsName, Name: "nsclaim-tenant"}}
			g.Expect(admin.Delete(ctx, rb)).To(Succeed())
			g.Eventually(func() error { return admin.Get(ctx, client.ObjectKeyFromObject(rb), rb) }).
				WithTimeout(60 * time.Second).WithPolling(500 * time.Millisecond).Should(Succeed())

			g.Eventually(namespaceGoing(nsName)).WithTimeout(4*time.Minute).WithPolling(2*time.Second).Should(BeTrue(),
				"namespace %s outlived its TTL (expiry %s)", nsName, expires)
			waitReason(t, claim, tenancyv1alpha1.ExpiredReason)
		})
	}
}

// TestDeletedClassDoesNotStopExpiry: an admin deletes the class of a Ready claim; the claim is refused
// (ClassNotFound) but its namespace is still deleted at the recorded expiry.
func TestDeletedClassDoesNotStopExpiry(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	class := newClass(t, "e2e-doomed", tenancyv1alpha1.NamespaceClassSpec{ClusterRole: "edit", Naming: tenancyv1alpha1.NamingSpec{Prefix: "doomed-"}})
	p := newRequester(t, "doomed")
	claim := createClaim(t, p, &tenancyv1alpha1.NamespaceClaim{ObjectMeta: metav1.ObjectMeta{Name: "doomed"},
		Spec: tenancyv1alpha1.NamespaceClaimSpec{ClassName: class.Name, TTL: &metav1.Duration{Duration: 2 * time.Minute}}})
	waitReason(t, claim, tenancyv1alpha1.ProvisionedReason)
	nsName := claim.Status.Namespace
	g.Expect(admin.Delete(ctx, class)).To(Succeed())
	waitReason(t, claim, tenancyv1alpha1.ClassNotFoundReason)
	g.Eventually(namespaceGoing(nsName)).WithTimeout(4 * time.Minute).WithPolling(2 * time.Second).Should(BeTrue())
}

// TestSecondDefaultClassDoesNotStrandHeldClaims: an admin adds a second default class; a claim that
// holds a namespace keeps the class it was made from and stays Ready.
func TestSecondDefaultClassDoesNotStrandHeldClaims(t *testing.T) {
	g := NewWithT(t)
	newClass(t, "e2e-default-a", tenancyv1alpha1.NamespaceClassSpec{Default: true, ClusterRole: "edit", Naming: tenancyv1alpha1.NamingSpec{Prefix: "dfa-"}})
	p := newRequester(t, "defaults")
	claim := createClaim(t, p, &tenancyv1alpha1.NamespaceClaim{ObjectMeta: metav1.ObjectMeta{Name: "uses-default"}})
	waitReason(t, claim, tenancyv1alpha1.ProvisionedReason)
	second := newClass(t, "e2e-default-b", tenancyv1alpha1.NamespaceClassSpec{Default: true, ClusterRole: "edit", Naming: tenancyv1alpha1.NamingSpec{Prefix: "dfb-"}})
	// The operator resolves the default from its cache: a claim it reads before the second default
	// reaches that cache takes the first (and keeps it). Once the class controller has written the second
	// class's status, the claim reconciler's cache (the same informer) holds it too.
	waitClassObserved(t, second)
	fresh := createClaim(t, p, &tenancyv1alpha1.NamespaceClaim{ObjectMeta: metav1.ObjectMeta{Name: "after-second-default"}})
	waitReason(t, fresh, tenancyv1alpha1.AmbiguousDefaultClassReason)
	g.Consistently(func(g Gomega) {
		r := readyOf(g, claim)
		g.Expect(r.Status).To(Equal(metav1.ConditionTrue), r.Message)
	}).WithTimeout(5 * time.Second).WithPolling(500 * time.Millisecond).Should(Succeed())
	g.Expect(claim.Status.ClassName).To(Equal("e2e-default-a"))
}

// TestRequesterCannotOrphanItsNamespace: the requester removes its claim's finalizer (the editor role
// allows the patch) and deletes the claim. The namespace must not outlive the claim: the operator
// deletes namespaces whose claim no longer exists.
func TestRequesterCannotOrphanItsNamespace(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	p := newRequester(t, "orphan")
	_, claim := claimAndWait(t, p, "orphan-me", nil)
	nsName, secret := claim.Status.Namespace, claim.Status.CredentialsSecretName
	g.Expect(p.client.Patch(ctx, claim, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`)))).To(Succeed())
	g.Expect(p.client.Delete(ctx, claim)).To(Succeed())
	// The operator may win the race and put its finalizer back before the delete arrives: then the claim
	// is deleted the ordinary way (it waits for its namespace), and there is no orphan to report.
	restored := &tenancyv1alpha1.NamespaceClaim{}
	err := admin.Get(ctx, client.ObjectKeyFromObject(claim), restored)
	orphaned := apierrors.IsNotFound(err) || (err == nil && !slices.Contains(restored.Finalizers, tenancyv1alpha1.ClaimFinalizer))
	g.Eventually(namespaceGoing(nsName)).WithTimeout(60*time.Second).WithPolling(500*time.Millisecond).Should(BeTrue(),
		"namespace %s of a deleted claim stays", nsName)
	g.Eventually(gone(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: p.ns, Name: secret}})).WithTimeout(60 * time.Second).Should(BeTrue())
	if !orphaned {
		t.Log("the operator restored its finalizer before the delete: the claim was deleted the ordinary way")
		g.Eventually(gone(claim)).WithTimeout(90 * time.Second).Should(BeTrue())
		return
	}
	// The operator says why, on the namespace.
	g.Eventually(func(g Gomega) {
		evs := &corev1.EventList{}
		g.Expect(admin.List(ctx, evs, client.InNamespace(metav1.NamespaceDefault))).To(Succeed())
		found := false
		for _, e := range evs.Items {
			if e.InvolvedObject.Kind == "Namespace" && e.InvolvedObject.Name == nsName && e.Reason == tenancyv1alpha1.OrphanedNamespaceReason {
				found = true
			}
		}
		g.Expect(found).To(BeTrue(), "an OrphanedNamespace Event on namespace %s", nsName)
	}).WithTimeout(30 * time.Second).WithPolling(time.Second).Should(Succeed())
}

// TestRemovedFinalizerIsRestored: the requester removes the finalizer of a live claim; the operator
// puts it back.
func TestRemovedFinalizerIsRestored(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	p := newRequester(t, "finalizer")
	_, claim := claimAndWait(t, p, "keep-finalizer", nil)
	g.Expect(p.client.Patch(ctx, claim, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`)))).To(Succeed())
	g.Eventually(func(g Gomega) {
		c := &tenancyv1alpha1.NamespaceClaim{}
		g.Expect(admin.Get(ctx, client.ObjectKeyFromObject(claim), c)).To(Succeed())
		g.Expect(c.Finalizers).To(ContainElement(tenancyv1alpha1.ClaimFinalizer))
	}).WithTimeout(30 * time.Second).WithPolling(500 * time.Millisecond).Should(Succeed())
}

// TestClassNamingUnbindableClusterRoleIsRefused: a class names cluster-admin (in spec.clusterRole, or
// in an extra binding). Claims are refused with a reason naming the field, the class's own status says
// the same, and no binding to cluster-admin exists.
func TestClassNamingUnbindableClusterRoleIsRefused(t *testing.T) {
	t.Parallel()
	for field, spec := range map[string]tenancyv1alpha1.NamespaceClassSpec{
		"spec.clusterRole": {ClusterRole: "cluster-admin", Naming: tenancyv1alpha1.NamingSpec{Prefix: "ca-"}},
		"spec.extraRoleBindings[0].clusterRole": {ClusterRole: "edit", Naming: tenancyv1alpha1.NamingSpec{Prefix: "cax-"},
			ExtraRoleBindings: []tenancyv1alpha1.ExtraRoleBinding{{Name: "root", ClusterRole: "cluster-admin",
				Subjects: []rbacv1.Subject{{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: "team"}}}}},
	} {
		t.Run(field, func(t *testing.T) {
			t.Parallel()
			g := NewWithT(t)
			class := newClass(t, "e2e-"+strings.NewReplacer(".", "-", "[", "-", "]", "").Replace(strings.ToLower(field)), spec)
			p := newRequester(t, "unbindable")
			claim := createClaim(t, p, &tenancyv1alpha1.NamespaceClaim{ObjectMeta: metav1.ObjectMeta{Name: "root"},
				Spec: tenancyv1alpha1.NamespaceClaimSpec{ClassName: class.Name}})
			r := waitReason(t, claim, tenancyv1alpha1.ClusterRoleNotBindableReason)
			g.Expect(r.Message).To(ContainSubstring(field))
			g.Eventually(func(g Gomega) {
				c := &tenancyv1alpha1.NamespaceClass{}
				g.Expect(admin.Get(ctx, client.ObjectKeyFromObject(class), c)).To(Succeed())
				cond := meta.FindStatusCondition(c.Status.Conditions, tenancyv1alpha1.ReadyCondition)
				g.Expect(cond).NotTo(BeNil())
				g.Expect(cond.Reason).To(Equal(tenancyv1alpha1.ClusterRoleNotBindableReason))
				g.Expect(cond.Message).To(ContainSubstring(field))
			}).WithTimeout(30 * time.Second).Should(Succeed())
			nss := &corev1.NamespaceList{}
			g.Expect(admin.List(ctx, nss, client.MatchingLabels{tenancyv1alpha1.ClaimUIDLabel: string(claim.UID)})).To(Succeed())
			for _, ns := range nss.Items {
				rbs := &rbacv1.RoleBindingList{}
				g.Expect(admin.List(ctx, rbs, client.InNamespace(ns.Name))).To(Succeed())
				for _, rb := range rbs.Items {
					g.Expect(rb.RoleRef.Name).NotTo(Equal("cluster-admin"), "binding %s/%s", ns.Name, rb.Name)
				}
			}
		})
	}
}

// TestPrefixlessClassCannotSquatNames: a requester uses a class without a prefix (like the ConfigMap
// protocol's nsplease class) to take cluster-wide names such as monitoring or argocd-x before an admin
// creates them. Claims that are not protocol requests are refused and nothing is created.
func TestPrefixlessClassCannotSquatNames(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	p := newRequester(t, "squat")
	for _, target := range []string{"monitoring", "argocd-x", "nsplease-requests-squat"} {
		claim := createClaim(t, p, &tenancyv1alpha1.NamespaceClaim{ObjectMeta: metav1.ObjectMeta{Name: "squat-" + target},
			Spec: tenancyv1alpha1.NamespaceClaimSpec{ClassName: "nsplease", NamespaceName: target}})
		r := waitReason(t, claim, tenancyv1alpha1.ClassNotAllowedReason)
		g.Expect(r.Message).To(ContainSubstring("naming.prefix"))
		ns := &corev1.Namespace{}
		g.Expect(admin.Get(ctx, client.ObjectKey{Name: target}, ns)).NotTo(Succeed(), "namespace %s was created", target)
	}
	// A class whose prefix starts with kube- is rejected by the API server.
	err := admin.Create(ctx, &tenancyv1alpha1.NamespaceClass{ObjectMeta: metav1.ObjectMeta{Name: "e2e-kube"},
		Spec: tenancyv1alpha1.NamespaceClassSpec{Naming: tenancyv1alpha1.NamingSpec{Prefix: "kube-"}}})
	g.Expect(err).To(HaveOccurred())
	g.Expect(err.Error()).To(ContainSubstring("naming.prefix must not start with kube-"))
}

// TestNamespaceTakenDoesNotRevealTheHolder: a second requester asks for a name another holds; the
// refusal must not tell it the holder's namespace or claim name.
func TestNamespaceTakenDoesNotRevealTheHolder(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	victim, attacker := newRequester(t, "holder"), newRequester(t, "prober")
	want := fmt.Sprintf("taken-%d", time.Now().UnixNano()%100000)
	held := createClaim(t, victim, &tenancyv1alpha1.NamespaceClaim{ObjectMeta: metav1.ObjectMeta{Name: "secret-project"},
		Spec: tenancyv1alpha1.NamespaceClaimSpec{ClassName: className, NamespaceName: want}})
	waitReason(t, held, tenancyv1alpha1.ProvisionedReason)
	probe := createClaim(t, attacker, &tenancyv1alpha1.NamespaceClaim{ObjectMeta: metav1.ObjectMeta{Name: "probe"},
		Spec: tenancyv1alpha1.NamespaceClaimSpec{ClassName: className, NamespaceName: want}})
	r := waitReason(t, probe, tenancyv1alpha1.NamespaceTakenReason)
	g.Expect(r.Message).NotTo(ContainSubstring(victim.ns))
	g.Expect(r.Message).NotTo(ContainSubstring("secret-project"))
}

// TestDerivedNameCannotBeSquatted: an attacker who knows a victim's namespace and claim name computes
// the victim's derived namespace name (unkeyed, as it was) and claims it literally first. The victim's
// claim must still become Ready, in a namespace of its own.
func TestDerivedNameCannotBeSquatted(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	victim, attacker := newRequester(t, "victim"), newRequester(t, "squatter")
	sum := sha256.Sum256([]byte(victim.ns + "/build"))
	guess := victim.ns + "-build-" + hex.EncodeToString(sum[:])[:10]
	squat := createClaim(t, attacker, &tenancyv1alpha1.NamespaceClaim{ObjectMeta: metav1.ObjectMeta{Name: "squat"},
		Spec: tenancyv1alpha1.NamespaceClaimSpec{ClassName: className, NamespaceName: guess}})
	waitReason(t, squat, tenancyv1alpha1.ProvisionedReason)
	claim := createClaim(t, victim, &tenancyv1alpha1.NamespaceClaim{ObjectMeta: metav1.ObjectMeta{Name: "build"},
		Spec: tenancyv1alpha1.NamespaceClaimSpec{ClassName: className}})
	waitReason(t, claim, tenancyv1alpha1.ProvisionedReason)
	g.Expect(claim.Status.Namespace).NotTo(Equal(squat.Status.Namespace))
}

// TestOnlyOnceTokenRespectsClassTokenTTL: a requester asks for an only-once token on a long claim to
// get a token that outlives the class's tokenTTL.
func TestOnlyOnceTokenRespectsClassTokenTTL(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	class := newClass(t, "e2e-short-tokens", tenancyv1alpha1.NamespaceClassSpec{ClusterRole: "edit", Naming: tenancyv1alpha1.NamingSpec{Prefix: "st-"},
		Credentials: tenancyv1alpha1.CredentialsSpec{TokenTTL: &metav1.Duration{Duration: 10 * time.Minute}, RenewBefore: &metav1.Duration{Duration: 2 * time.Minute}}})
	p := newRequester(t, "once")
	claim := createClaim(t, p, &tenancyv1alpha1.NamespaceClaim{ObjectMeta: metav1.ObjectMeta{Name: "once",
		Annotations: map[string]string{tenancyv1alpha1.TokenPolicyAnnotation: tenancyv1alpha1.TokenPolicyOnlyOnce}},
		Spec: tenancyv1alpha1.NamespaceClaimSpec{ClassName: class.Name, TTL: &metav1.Duration{Duration: 48 * time.Hour}}})
	waitReason(t, claim, tenancyv1alpha1.ProvisionedReason)
	// Both times are the API server's: the token's expiry against the claim's creation.
	lifetime := claim.Status.TokenExpiresAt.Sub(claim.CreationTimestamp.Time)
	g.Expect(lifetime).To(BeNumerically("<=", 10*time.Minute+time.Minute), "only-once token lives %s", lifetime)
}

// TestTenantDeletesItsNamespaceWithDefaultKubectlFlags: the tenant releases its namespace with
// `kubectl delete namespace <own>` and kubectl's default flags (it waits for the deletion). The command
// must return, and the credentials Secret must be gone as soon as the namespace is going.
func TestTenantDeletesItsNamespaceWithDefaultKubectlFlags(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	p := newRequester(t, "kubectl-wait")
	tenant, claim := claimAndWait(t, p, "wait-for-me", nil)
	// Another namespace, which exists: forbidden (not NotFound).
	out, err := kubectl(tenant, "delete", "namespace", p.ns, "--wait=false")
	g.Expect(err).To(HaveOccurred())
	g.Expect(out).To(ContainSubstring("forbidden"))
	cctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(cctx, kubectlBin(), "--kubeconfig", tenant, "delete", "namespace", claim.Status.Namespace)
	b, err := cmd.CombinedOutput()
	g.Expect(cctx.Err()).NotTo(HaveOccurred(), "kubectl delete namespace did not return: %s", b)
	g.Expect(err).NotTo(HaveOccurred(), string(b))
	g.Eventually(gone(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: p.ns, Name: claim.Status.CredentialsSecretName}})).WithTimeout(30 * time.Second).Should(BeTrue())
}
