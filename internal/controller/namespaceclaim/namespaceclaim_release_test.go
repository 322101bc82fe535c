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
	"path/filepath"
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
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
	"github.com/nsclaim/nsclaim-operator/internal/claimpolicy"
	"github.com/nsclaim/nsclaim-operator/internal/testenv"
)

// The release RoleBinding binds the shared ClusterRole: the tenant, acting as itself, may get and
// delete its own namespace and no other one.
func TestReleaseGrantCoversOnlyTheTenantsNamespace(t *testing.T) {
	requireEnvtest(t)
	t.Parallel()
	g := NewWithT(t)
	ctx := context.Background()
	class := newClass(t)
	req := newRequesterNamespace(t, nil)
	a := waitFor(t, newClaim(t, req, withClass(class.Name)), tenancyv1alpha1.ReadyCondition, metav1.ConditionTrue, tenancyv1alpha1.ProvisionedReason)
	b := waitFor(t, newClaim(t, req, withClass(class.Name)), tenancyv1alpha1.ReadyCondition, metav1.ConditionTrue, tenancyv1alpha1.ProvisionedReason)
	d := claimpolicy.Build(a.Status.Namespace, claimpolicy.OwnerOf(a), class, nil)
	tenantA := impersonating(t, d.TenantUser, d.TenantGroups, nil)

	g.Expect(tenantA.Get(ctx, client.ObjectKey{Name: a.Status.Namespace}, &corev1.Namespace{})).To(Succeed())
	own := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: a.Status.Namespace}}
	g.Expect(tenantA.Delete(ctx, own, client.DryRunAll)).To(Succeed(), "the tenant may delete its own namespace")
	for _, other := range []string{b.Status.Namespace, metav1.NamespaceSystem, req} {
		err := tenantA.Get(ctx, client.ObjectKey{Name: other}, &corev1.Namespace{})
		g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "get namespace %s: %v", other, err)
		err = tenantA.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: other}}, client.DryRunAll)
		g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "delete namespace %s: %v", other, err)
	}
	err := tenantA.DeleteAllOf(ctx, &corev1.Namespace{}, client.DryRunAll)
	g.Expect(apierrors.IsForbidden(err) || apierrors.IsMethodNotSupported(err)).To(BeTrue(), "deletecollection of namespaces: %v", err)
}

// A claim provisioned by a release before 0.4.0 has a release Role in its namespace and a RoleBinding
// nsclaim-release that binds it. The operator replaces the binding (its roleRef cannot change) with one
// to the shared ClusterRole and deletes the Role.
func TestReleaseRoleOfAnEarlierReleaseIsReplaced(t *testing.T) {
	requireEnvtest(t)
	t.Parallel()
	g := NewWithT(t)
	ctx := context.Background()
	class := newClass(t)
	req := newRequesterNamespace(t, nil)
	claim := waitFor(t, newClaim(t, req, withClass(class.Name)), tenancyv1alpha1.ReadyCondition, metav1.ConditionTrue, tenancyv1alpha1.ProvisionedReason)
	ns := claim.Status.Namespace
	owner := claimpolicy.OwnerOf(claim)
	tenant := rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: tenancyv1alpha1.TenantServiceAccountName, Namespace: ns}
	key := client.ObjectKey{Namespace: ns, Name: claimpolicy.ReleaseRoleName}

	// The children as 0.3.0 made them: the Role, and the binding to it in place of the current one.
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: claimpolicy.ReleaseRoleName, Namespace: ns, Labels: claimpolicy.OwnershipLabels(owner)},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"namespaces"}, ResourceNames: []string{ns}, Verbs: []string{"get", "delete"}}}}
	g.Expect(k8s.Create(ctx, role)).To(Succeed())
	var oldUID types.UID
	g.Eventually(func(g Gomega) {
		rb := &rbacv1.RoleBinding{}
		if err := k8s.Get(ctx, key, rb); err == nil {
			if rb.RoleRef.Kind == "Role" {
				oldUID = rb.UID
				return
			}
			g.Expect(client.IgnoreNotFound(k8s.Delete(ctx, rb))).To(Succeed())
		}
		old := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: claimpolicy.ReleaseRoleName, Namespace: ns, Labels: claimpolicy.OwnershipLabels(owner)},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: claimpolicy.ReleaseRoleName},
			Subjects: []rbacv1.Subject{tenant}}
		g.Expect(k8s.Create(ctx, old)).To(Succeed())
		oldUID = old.UID
	}).WithTimeout(30 * time.Second).WithPolling(50 * time.Millisecond).Should(Succeed())

	g.Eventually(func(g Gomega) {
		rb := &rbacv1.RoleBinding{}
		g.Expect(k8s.Get(ctx, key, rb)).To(Succeed())
		g.Expect(rb.UID).NotTo(Equal(oldUID), "the binding to the Role was not replaced")
		g.Expect(rb.RoleRef).To(Equal(rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: claimpolicy.ReleaseClusterRoleName}))
		g.Expect(rb.Subjects).To(Equal([]rbacv1.Subject{tenant}))
		g.Expect(isNotFound(k8s.Get(ctx, key, &rbacv1.Role{}))).To(BeTrue(), "the release Role is still there")
	}).WithTimeout(30 * time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())
	// The repair re-runs the self-test: the claim is Ready again once it has.
	g.Eventually(func(g Gomega) {
		g.Expect(meta.IsStatusConditionTrue(getClaim(g, claim).Status.Conditions, tenancyv1alpha1.ReadyCondition)).To(BeTrue())
	}).WithTimeout(30 * time.Second).Should(Succeed())
}

// Without the release ClusterRole (an install that left config/rbac's release_role.yaml out) the tenant
// cannot release its namespace: the self-test says which role is missing and the claim is not Ready;
// once the ClusterRole exists, it is.
func TestMissingReleaseClusterRoleKeepsTheClaimFromReady(t *testing.T) {
	requireEnvtest(t)
	t.Parallel()
	env := &envtest.Environment{CRDDirectoryPaths: []string{filepath.Join("..", "..", "..", "config", "crd", "bases")}, ErrorIfCRDPathMissing: true}
	c := startOwnEnvtest(t, env, false)
	g := NewWithT(t)
	ctx := context.Background()
	every := &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: corev1.LabelMetadataName, Operator: metav1.LabelSelectorOpExists}}}
	class := &tenancyv1alpha1.NamespaceClass{ObjectMeta: metav1.ObjectMeta{Name: "release"}, Spec: tenancyv1alpha1.NamespaceClassSpec{
		ClusterRole: testRoleName, Access: tenancyv1alpha1.AccessSpec{RequesterNamespaceSelector: every}}}
	g.Expect(c.Create(ctx, class)).To(Succeed())
	g.Expect(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "pipeline"}})).To(Succeed())
	claim := &tenancyv1alpha1.NamespaceClaim{ObjectMeta: metav1.ObjectMeta{Name: "no-release", Namespace: "pipeline"}, Spec: tenancyv1alpha1.NamespaceClaimSpec{ClassName: class.Name}}
	g.Expect(c.Create(ctx, claim)).To(Succeed())

	verified := func(g Gomega) (*tenancyv1alpha1.NamespaceClaim, *metav1.Condition) {
		cur := &tenancyv1alpha1.NamespaceClaim{}
		g.Expect(c.Get(ctx, client.ObjectKeyFromObject(claim), cur)).To(Succeed())
		v := meta.FindStatusCondition(cur.Status.Conditions, tenancyv1alpha1.PermissionsVerifiedCondition)
		g.Expect(v).NotTo(BeNil())
		return cur, v
	}
	g.Eventually(func(g Gomega) {
		cur, v := verified(g)
		g.Expect(v.Status).To(Equal(metav1.ConditionFalse), v.Message)
		g.Expect(v.Reason).To(Equal(tenancyv1alpha1.MissingPermissionsReason), v.Message)
		g.Expect(v.Message).To(ContainSubstring("ClusterRole " + claimpolicy.ReleaseClusterRoleName + ", bound by RoleBinding " + cur.Status.Namespace + "/" + claimpolicy.ReleaseRoleName + ", does not exist"))
		g.Expect(meta.IsStatusConditionTrue(cur.Status.Conditions, tenancyv1alpha1.ReadyCondition)).To(BeFalse())
	}).WithTimeout(30 * time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())
	g.Expect(isNotFound(c.Get(ctx, client.ObjectKey{Namespace: "pipeline", Name: "no-release-kubeconfig"}, &corev1.Secret{}))).To(BeTrue(),
		"a Secret was written for a claim whose tenant cannot release its namespace")

	role, err := testenv.ReleaseClusterRole(filepath.Join("..", "..", ".."))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(c.Create(ctx, role)).To(Succeed())
	g.Eventually(func(g Gomega) {
		cur, v := verified(g)
		g.Expect(v.Status).To(Equal(metav1.ConditionTrue), v.Message)
		g.Expect(meta.IsStatusConditionTrue(cur.Status.Conditions, tenancyv1alpha1.ReadyCondition)).To(BeTrue())
	}).WithTimeout(60 * time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())
}
