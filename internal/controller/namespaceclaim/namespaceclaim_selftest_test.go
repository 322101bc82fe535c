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
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
	"github.com/nsclaim/nsclaim-operator/internal/claimpolicy"
	"github.com/nsclaim/nsclaim-operator/internal/monitoring"
)

// selfTestCounts reads the self-test request counters.
func selfTestCounts() (rules, sars, tokens float64) {
	return monitoring.SelfTestRequests(monitoring.ReviewRules), monitoring.SelfTestRequests(monitoring.ReviewAccess), monitoring.SelfTestRequests(monitoring.ReviewToken)
}

// A new claim's self-test costs two SelfSubjectRulesReviews, no SubjectAccessReview and no token of its
// own (it uses the token then handed out). Not parallel: the counters are the process's, so no other
// claim may be reconciled meanwhile (the parallel tests wait until the sequential ones are done).
func TestSelfTestRequestsPerClaim(t *testing.T) {
	requireEnvtest(t)
	g := NewWithT(t)
	class := newClass(t, fullClass())
	const claims = 5
	rules0, sars0, tokens0 := selfTestCounts()
	for range claims {
		claim := newClaim(t, newRequesterNamespace(t, nil), withClass(class.Name))
		got := waitFor(t, claim, tenancyv1alpha1.ReadyCondition, metav1.ConditionTrue, tenancyv1alpha1.ProvisionedReason)
		c := meta.FindStatusCondition(got.Status.Conditions, tenancyv1alpha1.PermissionsVerifiedCondition)
		g.Expect(c.Message).To(HavePrefix("SelfSubjectRulesReviews made with the issued token confirm"))
	}
	rules, sars, tokens := selfTestCounts()
	t.Logf("self-test requests for %d claims: %v SelfSubjectRulesReviews, %v SubjectAccessReviews, %v self-test tokens", claims, rules-rules0, sars-sars0, tokens-tokens0)
	g.Expect(sars - sars0).To(BeZero())
	g.Expect(tokens-tokens0).To(BeZero(), "a new claim's self-test uses the token it then hands out")
	// Two per claim; a third pair only when the new RoleBindings had not reached the authorizer yet.
	g.Expect((rules - rules0) / claims).To(BeNumerically("<=", 3))
	g.Expect(rules - rules0).To(BeNumerically(">=", 2*claims))
}

// A Ready claim whose objects were repaired is self-tested again with a short-lived token minted for
// the self-test alone: its credentials Secret is not touched. Not parallel: the counters are the
// process's.
func TestRepairedClaimIsSelfTestedWithAThrowawayToken(t *testing.T) {
	requireEnvtest(t)
	g := NewWithT(t)
	class := newClass(t)
	claim := newClaim(t, newRequesterNamespace(t, nil), withClass(class.Name))
	got := waitFor(t, claim, tenancyv1alpha1.ReadyCondition, metav1.ConditionTrue, tenancyv1alpha1.ProvisionedReason)
	sec := &corev1.Secret{}
	g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: claim.Namespace, Name: got.Status.CredentialsSecretName}, sec)).To(Succeed())
	rules0, _, tokens0 := selfTestCounts()

	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: got.Status.Namespace, Name: claimpolicy.TenantRoleBindingName}}
	g.Expect(k8s.Delete(ctx, rb)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(rb), rb)).To(Succeed())
		rules, _, tokens := selfTestCounts()
		g.Expect(tokens - tokens0).To(BeNumerically(">=", 1))
		g.Expect(rules - rules0).To(BeNumerically(">=", 2))
	}).WithTimeout(30 * time.Second).Should(Succeed())
	waitFor(t, claim, tenancyv1alpha1.ReadyCondition, metav1.ConditionTrue, tenancyv1alpha1.ProvisionedReason)
	now := &corev1.Secret{}
	g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(sec), now)).To(Succeed())
	g.Expect(now.ResourceVersion).To(Equal(sec.ResourceVersion), "the self-test's token was written")
	g.Expect(getClaim(g, claim).Status.TokenExpiresAt).To(Equal(got.Status.TokenExpiresAt))
}

// A cluster-wide grant made ahead of time to a claim's future ServiceAccount is excess, named by its
// rule and its binding, and no credential is written until it is gone.
func TestSelfTestNamesTheExcessRuleAndBinding(t *testing.T) {
	requireEnvtest(t)
	t.Parallel()
	g := NewWithT(t)
	class := newClass(t)
	target := uniq("ahead")
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: uniq("reads-secrets")}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get", "list"}}}}
	g.Expect(k8s.Create(ctx, role)).To(Succeed())
	t.Cleanup(func() { _ = k8s.Delete(ctx, role) })
	crb := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: uniq("planted")},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: target, Name: tenancyv1alpha1.TenantServiceAccountName}},
	}
	expectExcessUntilRemoved(t, crb, class, target,
		"get,list secrets in every namespace (ClusterRoleBinding "+crb.Name+" grants ClusterRole "+role.Name+")",
		"found with SelfSubjectRulesReviews")
}

// expectExcessUntilRemoved creates planted, a grant made ahead of time to the future tenant of a claim
// of class for namespace target, and checks what the self-test makes of it: the claim is refused
// ExcessPermissions with a message holding each of want, no Secret is written and no token recorded.
// Once planted is deleted, the claim turns Ready.
func expectExcessUntilRemoved(t *testing.T, planted client.Object, class *tenancyv1alpha1.NamespaceClass, target string, want ...string) {
	t.Helper()
	g := NewWithT(t)
	g.Expect(k8s.Create(ctx, planted)).To(Succeed())
	t.Cleanup(func() { _ = k8s.Delete(ctx, planted) })

	claim := newClaim(t, newRequesterNamespace(t, nil), withClass(class.Name), withNamespaceName(target))
	got := waitFor(t, claim, tenancyv1alpha1.ReadyCondition, metav1.ConditionFalse, tenancyv1alpha1.ExcessPermissionsReason)
	c := meta.FindStatusCondition(got.Status.Conditions, tenancyv1alpha1.PermissionsVerifiedCondition)
	g.Expect(c.Reason).To(Equal(tenancyv1alpha1.ExcessPermissionsReason))
	for _, w := range want {
		g.Expect(c.Message).To(ContainSubstring(w))
	}
	// The self-test ran and failed: no Secret, no token recorded.
	g.Expect(isNotFound(k8s.Get(ctx, client.ObjectKey{Namespace: claim.Namespace, Name: claim.Name + "-kubeconfig"}, &corev1.Secret{}))).To(BeTrue(), "a Secret was written for a claim that failed its self-test")
	g.Expect(got.Status.TokenExpiresAt).To(BeNil())
	g.Expect(got.Status.CredentialsSecretName).To(BeEmpty())

	g.Expect(k8s.Delete(ctx, planted)).To(Succeed())
	waitFor(t, claim, tenancyv1alpha1.ReadyCondition, metav1.ConditionTrue, tenancyv1alpha1.ProvisionedReason)
}

// A RoleBinding in another namespace that carries nsclaim's ownership labels (the binding index reads
// nsclaim's bindings from the manager's cache, and leaves only those of a namespace's own
// ServiceAccounts out of its index) is still found when it names a claim's future ServiceAccount: excess,
// named, and no credential.
func TestSelfTestFindsAGrantLabelledAsNsclaims(t *testing.T) {
	requireEnvtest(t)
	t.Parallel()
	class := newClass(t)
	target := uniq("labelled")
	elsewhere := newRequesterNamespace(t, nil)
	rb := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "planted", Namespace: elsewhere, Labels: map[string]string{
			tenancyv1alpha1.ManagedByLabel: tenancyv1alpha1.ManagedByValue, tenancyv1alpha1.ClaimUIDLabel: "forged", tenancyv1alpha1.ClaimNamespaceLabel: elsewhere}},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "edit"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: target, Name: tenancyv1alpha1.TenantServiceAccountName}},
	}
	expectExcessUntilRemoved(t, rb, class, target, "RoleBinding "+elsewhere+"/planted")
}

// A class whose ClusterRole aggregates a rule the authorizer does not see (envtest runs no
// kube-controller-manager, so aggregation never copies it; on a cluster, the moment before it does)
// leaves the identity without a permission the class grants: MissingPermissions naming the rule, and
// no credential.
func TestSelfTestFindsAMissingRule(t *testing.T) {
	requireEnvtest(t)
	t.Parallel()
	g := NewWithT(t)
	label := uniq("aggregate")
	part := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: uniq("part"), Labels: map[string]string{"nsclaim.test/aggregate": label}},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{"batch"}, Resources: []string{"jobs"}, Verbs: []string{"create", "get"}}}}
	whole := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: uniq("whole")},
		AggregationRule: &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{{MatchLabels: part.Labels}}},
		Rules:           testRole().Rules}
	for _, o := range []client.Object{part, whole} {
		g.Expect(k8s.Create(ctx, o)).To(Succeed())
		t.Cleanup(func() { _ = k8s.Delete(ctx, o) })
	}
	class := newClass(t, func(c *tenancyv1alpha1.NamespaceClass) { c.Spec.ClusterRole = whole.Name })
	claim := newClaim(t, newRequesterNamespace(t, nil), withClass(class.Name))
	got := waitFor(t, claim, tenancyv1alpha1.PermissionsVerifiedCondition, metav1.ConditionFalse, tenancyv1alpha1.MissingPermissionsReason)
	c := meta.FindStatusCondition(got.Status.Conditions, tenancyv1alpha1.PermissionsVerifiedCondition)
	g.Expect(c.Message).To(ContainSubstring("create,get jobs.batch in namespace " + got.Status.Namespace))
	g.Expect(meta.IsStatusConditionTrue(got.Status.Conditions, tenancyv1alpha1.ReadyCondition)).To(BeFalse())
	g.Expect(isNotFound(k8s.Get(ctx, client.ObjectKey{Namespace: claim.Namespace, Name: claim.Name + "-kubeconfig"}, &corev1.Secret{}))).To(BeTrue(), "a Secret was written for a claim that failed its self-test")
	g.Expect(got.Status.TokenExpiresAt).To(BeNil())

	// What kube-controller-manager would do: copy the aggregated rule. The retry (backoff) finds it.
	g.Eventually(func() error {
		cur := &rbacv1.ClusterRole{}
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(whole), cur); err != nil {
			return err
		}
		cur.Rules = append(cur.Rules, part.Rules...)
		return k8s.Update(ctx, cur)
	}).Should(Succeed())
	waitFor(t, claim, tenancyv1alpha1.ReadyCondition, metav1.ConditionTrue, tenancyv1alpha1.ProvisionedReason)
}

// A grant to every ServiceAccount is not blamed on any claim: claims turn Ready, their condition notes
// the grant, and it is reported once, with one Warning Event on the binding and the gauge. Not parallel:
// the grant reaches every claim of the suite while it exists.
func TestGrantToEveryServiceAccountIsReportedOnce(t *testing.T) {
	requireEnvtest(t)
	g := NewWithT(t)
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: uniq("everyone")}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{"example.com"}, Resources: []string{"markers"}, Verbs: []string{"get"}}}}
	crb := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: uniq("every-sa")},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: "system:serviceaccounts"}},
	}
	for _, o := range []client.Object{role, crb} {
		g.Expect(k8s.Create(ctx, o)).To(Succeed())
		t.Cleanup(func() { _ = k8s.Delete(ctx, o) })
	}
	class := newClass(t)
	for range 2 {
		claim := newClaim(t, newRequesterNamespace(t, nil), withClass(class.Name))
		g.Eventually(func(g Gomega) {
			got := getClaim(g, claim)
			c := meta.FindStatusCondition(got.Status.Conditions, tenancyv1alpha1.PermissionsVerifiedCondition)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Status).To(Equal(metav1.ConditionTrue), c.Message)
			g.Expect(c.Message).To(ContainSubstring("ClusterRoleBinding " + crb.Name))
			g.Expect(meta.IsStatusConditionTrue(got.Status.Conditions, tenancyv1alpha1.ReadyCondition)).To(BeTrue())
		}).WithTimeout(30 * time.Second).Should(Succeed())
	}
	events := func(g Gomega) []eventsv1.Event {
		list := &eventsv1.EventList{}
		g.Expect(k8s.List(ctx, list)).To(Succeed())
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
		g.Expect(es[0].Note).To(ContainSubstring("system:serviceaccounts"))
	}).WithTimeout(10 * time.Second).Should(Succeed())
	g.Consistently(func(g Gomega) {
		es := events(g)
		g.Expect(es).To(HaveLen(1))
		g.Expect(es[0].DeprecatedCount).To(BeNumerically("<=", 1))
	}).WithTimeout(2 * time.Second).Should(Succeed())
	g.Expect(gaugeValue(g, monitoring.ClusterWideGrantsName)).To(BeNumerically(">=", 1))
}

// gaugeValue reads an unlabelled gauge from the registry the metrics endpoint serves.
func gaugeValue(g Gomega, name string) float64 {
	monitoring.Register()
	families, err := metrics.Registry.Gather()
	g.Expect(err).NotTo(HaveOccurred())
	for _, f := range families {
		if f.GetName() == name && len(f.GetMetric()) == 1 {
			return f.GetMetric()[0].GetGauge().GetValue()
		}
	}
	g.Expect(name).To(BeEmpty(), "gauge not served")
	return 0
}
