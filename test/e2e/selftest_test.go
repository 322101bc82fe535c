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
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
)

// verifiedOf returns the claim's PermissionsVerified condition as admin reads it.
func verifiedOf(g Gomega, claim *tenancyv1alpha1.NamespaceClaim) *metav1.Condition {
	c := &tenancyv1alpha1.NamespaceClaim{}
	g.Expect(admin.Get(ctx, client.ObjectKeyFromObject(claim), c)).To(Succeed())
	v := meta.FindStatusCondition(c.Status.Conditions, tenancyv1alpha1.PermissionsVerifiedCondition)
	g.Expect(v).NotTo(BeNil())
	return v
}

// A grant made ahead of time to a claim's future tenant (its ServiceAccount, cluster-wide, or its
// namespace's group, in another team's namespace) is found by the self-test the operator runs with the
// tenant's own token: ExcessPermissions naming the binding and the rule, and the requester, with the
// shipped RBAC, finds no Secret while it fails. Once the grant is gone the claim turns Ready and its
// token works.
func TestSelfTestFindsGrantsMadeAheadOfTime(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		clusterWide bool
		subject     func(ns string) rbacv1.Subject
	}{
		"ServiceAccount cluster-wide": {clusterWide: true, subject: func(ns string) rbacv1.Subject {
			return rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: tenancyv1alpha1.TenantServiceAccountName}
		}},
		"namespace group in another namespace": {subject: func(ns string) rbacv1.Subject {
			return rbacv1.Subject{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: "system:serviceaccounts:" + ns}
		}},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			g := NewWithT(t)
			p := newRequester(t, "selftest")
			short := fmt.Sprintf("ahead-%d", time.Now().UnixNano()%1000000)
			target := "e2e-" + short
			var binding client.Object
			var named string
			if tc.clusterWide {
				crb := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "planted-" + short},
					RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"},
					Subjects: []rbacv1.Subject{tc.subject(target)}}
				binding, named = crb, "ClusterRoleBinding "+crb.Name+" grants ClusterRole view"
			} else {
				other := newRequester(t, "other-team").ns
				rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "planted", Namespace: other},
					RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "edit"},
					Subjects: []rbacv1.Subject{tc.subject(target)}}
				binding, named = rb, "RoleBinding "+other+"/planted grants ClusterRole edit"
			}
			g.Expect(admin.Create(ctx, binding)).To(Succeed())
			t.Cleanup(func() { _ = admin.Delete(context.Background(), binding) })

			claim := createClaim(t, p, &tenancyv1alpha1.NamespaceClaim{ObjectMeta: metav1.ObjectMeta{Name: "ahead"},
				Spec: tenancyv1alpha1.NamespaceClaimSpec{ClassName: className, NamespaceName: short}})
			waitReason(t, claim, tenancyv1alpha1.ExcessPermissionsReason)
			v := verifiedOf(g, claim)
			g.Expect(v.Reason).To(Equal(tenancyv1alpha1.ExcessPermissionsReason))
			g.Expect(v.Message).To(ContainSubstring(named))
			if tc.clusterWide {
				// The rule is named too, with the binding that gives it.
				g.Expect(v.Message).To(MatchRegexp(`(get|list|watch)[a-z,]* [a-z./]+ in namespace %s \(%s\)`, p.ns, named))
			}
			g.Expect(v.Message).To(ContainSubstring("found with SelfSubjectRulesReviews made with the issued token"))
			// The requester, with the shipped RBAC, finds no Secret: none was written.
			err := p.client.Get(ctx, client.ObjectKey{Namespace: p.ns, Name: "ahead-kubeconfig"}, &corev1.Secret{})
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "want NotFound, got %v", err)
			g.Expect(claim.Status.TokenExpiresAt).To(BeNil())

			g.Expect(admin.Delete(ctx, binding)).To(Succeed())
			waitReason(t, claim, tenancyv1alpha1.ProvisionedReason)
			sec := &corev1.Secret{}
			g.Expect(p.client.Get(ctx, client.ObjectKey{Namespace: p.ns, Name: claim.Status.CredentialsSecretName}, sec)).To(Succeed())
			kubeconfig := writeKubeconfig(t, string(sec.Data["token"]), target)
			out, err := kubectl(kubeconfig, "create", "configmap", "proof", "-n", target)
			g.Expect(err).NotTo(HaveOccurred(), out)
		})
	}
}

// A grant to every ServiceAccount is not blamed on a claim: claims turn Ready, their condition names
// the binding, and the operator reports it once, with one Warning Event on the binding. Not parallel:
// every claim of the run meets the grant while it exists.
func TestSelfTestReportsGrantToEveryServiceAccountOnce(t *testing.T) {
	g := NewWithT(t)
	suffix := fmt.Sprint(time.Now().UnixNano() % 1000000)
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "e2e-every-sa-" + suffix}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{"example.com"}, Resources: []string{"markers"}, Verbs: []string{"get"}}}}
	crb := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "e2e-every-sa-" + suffix},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: "system:serviceaccounts"}}}
	for _, o := range []client.Object{role, crb} {
		g.Expect(admin.Create(ctx, o)).To(Succeed())
		t.Cleanup(func() { _ = admin.Delete(context.Background(), o) })
	}
	p := newRequester(t, "every-sa")
	for _, name := range []string{"one", "two"} {
		claim := createClaim(t, p, &tenancyv1alpha1.NamespaceClaim{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: tenancyv1alpha1.NamespaceClaimSpec{ClassName: className}})
		waitReason(t, claim, tenancyv1alpha1.ProvisionedReason)
		g.Expect(verifiedOf(g, claim).Message).To(ContainSubstring("ClusterRoleBinding " + crb.Name))
	}
	events := func(g Gomega) []eventsv1.Event {
		list := &eventsv1.EventList{}
		g.Expect(admin.List(ctx, list)).To(Succeed())
		var out []eventsv1.Event
		for _, e := range list.Items {
			if e.Regarding.Kind == "ClusterRoleBinding" && e.Regarding.Name == crb.Name && e.Reason == "GrantsEveryIdentity" {
				out = append(out, e)
			}
		}
		return out
	}
	g.Eventually(func(g Gomega) {
		es := events(g)
		g.Expect(es).To(HaveLen(1))
		g.Expect(es[0].Type).To(Equal(corev1.EventTypeWarning))
		g.Expect(es[0].ReportingController).NotTo(BeEmpty())
	}).WithTimeout(20 * time.Second).Should(Succeed())
	g.Consistently(func(g Gomega) {
		es := events(g)
		g.Expect(es).To(HaveLen(1))
		g.Expect(es[0].DeprecatedCount).To(BeNumerically("<=", 1))
	}).WithTimeout(3 * time.Second).Should(Succeed())
}
