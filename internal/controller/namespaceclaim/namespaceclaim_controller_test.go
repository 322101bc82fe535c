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
	"slices"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
	"github.com/nsclaim/nsclaim-operator/internal/claimpolicy"
	"github.com/nsclaim/nsclaim-operator/internal/credentials"
	"github.com/nsclaim/nsclaim-operator/internal/kube"
)

var ctx = context.Background()

func fullClass() classOpt {
	return func(c *tenancyv1alpha1.NamespaceClass) {
		c.Spec.ResourceQuota = &corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("10")}}
		c.Spec.LimitRange = &corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{
			Type:    corev1.LimitTypeContainer,
			Default: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m")},
		}}}
		c.Spec.NetworkPolicy = tenancyv1alpha1.NetworkPolicyDenyFromOtherNamespaces
		c.Spec.PodSecurity = tenancyv1alpha1.PodSecurityRestricted
		c.Spec.NamespaceLabels = map[string]string{"team": "ci"}
		c.Spec.ExtraRoleBindings = []tenancyv1alpha1.ExtraRoleBinding{{
			Name: "viewers", ClusterRole: "view",
			Subjects: []rbacv1.Subject{{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: "team-ci"}},
		}}
	}
}

func TestProvisionsNamespaceChildrenAndCredentials(t *testing.T) {
	requireEnvtest(t)
	t.Parallel()
	g := NewWithT(t)
	class := newClass(t, withPrefix("ci-"), fullClass(), withAllowedLabels("branch"))
	req := newRequesterNamespace(t, nil)
	claim := newClaim(t, req, withClass(class.Name), withNamespaceName(uniq("pr")), withTTL(2*time.Hour), withLabels(map[string]string{"branch": "main"}))
	got := waitFor(t, claim, tenancyv1alpha1.ReadyCondition, metav1.ConditionTrue, tenancyv1alpha1.ProvisionedReason)

	want := "ci-" + claim.Spec.NamespaceName
	g.Expect(got.Status.Namespace).To(Equal(want))
	g.Expect(got.Status.ClassName).To(Equal(class.Name))
	g.Expect(got.Status.ObservedGeneration).To(Equal(got.Generation))
	g.Expect(got.Status.ExpiresAt.Time).To(BeTemporally("~", got.CreationTimestamp.Add(2*time.Hour), time.Second))
	g.Expect(got.Status.TokenExpiresAt).NotTo(BeNil())
	g.Expect(got.Finalizers).To(ContainElement(tenancyv1alpha1.ClaimFinalizer))
	for _, c := range []string{tenancyv1alpha1.NamespaceReadyCondition, tenancyv1alpha1.CredentialsReadyCondition, tenancyv1alpha1.PermissionsVerifiedCondition} {
		g.Expect(got.Status.Conditions).To(ContainElement(And(
			HaveField("Type", c), HaveField("Status", metav1.ConditionTrue), HaveField("ObservedGeneration", got.Generation))))
	}

	ns := &corev1.Namespace{}
	g.Expect(k8s.Get(ctx, client.ObjectKey{Name: want}, ns)).To(Succeed())
	g.Expect(ns.Labels).To(HaveKeyWithValue(tenancyv1alpha1.ManagedByLabel, tenancyv1alpha1.ManagedByValue))
	g.Expect(ns.Labels).To(HaveKeyWithValue(tenancyv1alpha1.ClaimUIDLabel, string(claim.UID)))
	g.Expect(ns.Labels).To(HaveKeyWithValue(tenancyv1alpha1.ClaimNamespaceLabel, req))
	g.Expect(ns.Annotations).To(HaveKeyWithValue(tenancyv1alpha1.ClaimNameAnnotation, claim.Name))
	g.Expect(ns.Labels).To(HaveKeyWithValue("pod-security.kubernetes.io/enforce", "restricted"))
	g.Expect(ns.Labels).To(HaveKeyWithValue("team", "ci"))
	g.Expect(ns.Labels).To(HaveKeyWithValue("branch", "main"))

	sa := &corev1.ServiceAccount{}
	g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: want, Name: tenancyv1alpha1.TenantServiceAccountName}, sa)).To(Succeed())
	rb := &rbacv1.RoleBinding{}
	g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: want, Name: claimpolicy.TenantRoleBindingName}, rb)).To(Succeed())
	g.Expect(rb.RoleRef.Name).To(Equal(testRoleName))
	g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: want, Name: "nsclaim-viewers"}, rb)).To(Succeed())
	g.Expect(rb.RoleRef.Name).To(Equal("view"))
	g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: want, Name: claimpolicy.ReleaseRoleName}, rb)).To(Succeed())
	g.Expect(rb.RoleRef).To(Equal(rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: claimpolicy.ReleaseClusterRoleName}))
	g.Expect(isNotFound(k8s.Get(ctx, client.ObjectKey{Namespace: want, Name: claimpolicy.ReleaseRoleName}, &rbacv1.Role{}))).To(BeTrue(), "a release Role was made")
	g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: want, Name: claimpolicy.ResourceQuotaName}, &corev1.ResourceQuota{})).To(Succeed())
	g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: want, Name: claimpolicy.LimitRangeName}, &corev1.LimitRange{})).To(Succeed())
	g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: want, Name: claimpolicy.NetworkPolicyName}, &networkingv1.NetworkPolicy{})).To(Succeed())

	sec := &corev1.Secret{}
	g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: req, Name: got.Status.CredentialsSecretName}, sec)).To(Succeed())
	g.Expect(sec.Data).To(HaveKey(credentials.TokenKey))
	g.Expect(sec.Data).To(HaveKeyWithValue(credentials.NamespaceKey, []byte(want)))
	g.Expect(sec.Data).To(HaveKeyWithValue(credentials.CAKey, cfg.CAData))
	g.Expect(sec.OwnerReferences).To(ConsistOf(
		And(HaveField("UID", claim.UID), HaveField("Controller", HaveValue(BeTrue()))),
		And(HaveField("Kind", "Namespace"), HaveField("UID", ns.UID), HaveField("BlockOwnerDeletion", BeNil()))))
	kc, err := clientcmd.Load(sec.Data[credentials.KubeconfigKey])
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(kc.Contexts[kc.CurrentContext].Namespace).To(Equal(want))
	g.Expect(kc.Clusters[kc.Contexts[kc.CurrentContext].Cluster].Server).To(Equal(cfg.Host))
	g.Expect(kc.AuthInfos[kc.Contexts[kc.CurrentContext].AuthInfo].Token).To(Equal(string(sec.Data[credentials.TokenKey])))

	// The issued token works in its namespace and nowhere else.
	tenantCfg, err := clientcmd.RESTConfigFromKubeConfig(sec.Data[credentials.KubeconfigKey])
	g.Expect(err).NotTo(HaveOccurred())
	tenant, err := client.New(tenantCfg, client.Options{Scheme: scheme})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(tenant.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: want}})).To(Succeed())
	g.Expect(tenant.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: "default"}})).NotTo(Succeed())
	g.Expect(tenant.List(ctx, &corev1.SecretList{}, client.InNamespace(req))).NotTo(Succeed())
	g.Expect(tenant.List(ctx, &corev1.NamespaceList{})).NotTo(Succeed())

	// An Event tells the requester.
	g.Eventually(func(g Gomega) {
		evs := &corev1.EventList{}
		g.Expect(k8s.List(ctx, evs, client.InNamespace(req))).To(Succeed())
		g.Expect(evs.Items).To(ContainElement(And(HaveField("Reason", "Provisioned"), HaveField("InvolvedObject.UID", claim.UID))))
		for _, e := range evs.Items {
			g.Expect(e.Message).NotTo(ContainSubstring(string(sec.Data[credentials.TokenKey])))
		}
	}).WithTimeout(10 * time.Second).Should(Succeed())
}

func TestRestoresDriftedAndDeletedChildren(t *testing.T) {
	requireEnvtest(t)
	t.Parallel()
	g := NewWithT(t)
	class := newClass(t, fullClass())
	req := newRequesterNamespace(t, nil)
	claim := newClaim(t, req, withClass(class.Name))
	got := waitFor(t, claim, tenancyv1alpha1.ReadyCondition, metav1.ConditionTrue, tenancyv1alpha1.ProvisionedReason)
	ns := got.Status.Namespace

	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: claimpolicy.TenantRoleBindingName}}
	g.Expect(k8s.Delete(ctx, rb)).To(Succeed())
	quota := &corev1.ResourceQuota{}
	g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: claimpolicy.ResourceQuotaName}, quota)).To(Succeed())
	quota.Spec.Hard[corev1.ResourcePods] = resource.MustParse("1000")
	g.Expect(k8s.Update(ctx, quota)).To(Succeed())
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: req, Name: got.Status.CredentialsSecretName}}
	g.Expect(k8s.Delete(ctx, sec)).To(Succeed())
	nsObj := &corev1.Namespace{}
	g.Expect(k8s.Get(ctx, client.ObjectKey{Name: ns}, nsObj)).To(Succeed())
	delete(nsObj.Labels, "pod-security.kubernetes.io/enforce")
	g.Expect(k8s.Update(ctx, nsObj)).To(Succeed())

	g.Eventually(func(g Gomega) {
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(rb), rb)).To(Succeed())
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(quota), quota)).To(Succeed())
		g.Expect(quota.Spec.Hard.Pods().String()).To(Equal("10"))
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(sec), sec)).To(Succeed())
		g.Expect(sec.Data).To(HaveKey(credentials.TokenKey))
		g.Expect(k8s.Get(ctx, client.ObjectKey{Name: ns}, nsObj)).To(Succeed())
		g.Expect(nsObj.Labels).To(HaveKey("pod-security.kubernetes.io/enforce"))
	}).WithTimeout(30 * time.Second).Should(Succeed())
	waitFor(t, claim, tenancyv1alpha1.ReadyCondition, metav1.ConditionTrue, tenancyv1alpha1.ProvisionedReason)
}

// TestChildEventsReachTheirClaimThroughItsNamespace: a claim's children do not name it (only its
// namespace does), yet a change to one child alone reaches the claim: a namespaced child through its
// namespace, a namespace watcher (cluster-scoped) through the namespace its name holds. A child that
// an earlier version applied, with the claim-name annotation and a digest that took the claim's
// identity in, is applied again and loses that annotation.
func TestChildEventsReachTheirClaimThroughItsNamespace(t *testing.T) {
	requireEnvtest(t)
	t.Parallel()
	g := NewWithT(t)
	class := newClass(t, fullClass())
	req := newRequesterNamespace(t, nil)
	claim := newClaim(t, req, withClass(class.Name))
	got := waitFor(t, claim, tenancyv1alpha1.ReadyCondition, metav1.ConditionTrue, tenancyv1alpha1.ProvisionedReason)
	ns := got.Status.Namespace

	quota := &corev1.ResourceQuota{}
	g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: claimpolicy.ResourceQuotaName}, quota)).To(Succeed())
	g.Expect(quota.Annotations).To(HaveKey(claimpolicy.AppliedAnnotation))
	g.Expect(quota.Annotations).NotTo(HaveKey(tenancyv1alpha1.ClaimNameAnnotation))
	quota.Spec.Hard[corev1.ResourcePods] = resource.MustParse("1000")
	g.Expect(k8s.Update(ctx, quota)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(quota), quota)).To(Succeed())
		g.Expect(quota.Spec.Hard.Pods().String()).To(Equal("10"))
	}).WithTimeout(30 * time.Second).Should(Succeed())

	watcher := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: tenancyv1alpha1.NamespaceWatcherPrefix + ns}}
	g.Expect(k8s.Delete(ctx, watcher)).To(Succeed())
	g.Eventually(func() error { return k8s.Get(ctx, client.ObjectKeyFromObject(watcher), watcher) }).WithTimeout(30 * time.Second).Should(Succeed())
	g.Expect(watcher.Annotations).NotTo(HaveKey(tenancyv1alpha1.ClaimNameAnnotation))

	// The limit range as an earlier version applied it: nsclaim's field owner, the claim's name and
	// another digest.
	lr := &corev1.LimitRange{}
	g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: claimpolicy.LimitRangeName}, lr)).To(Succeed())
	digest := lr.Annotations[claimpolicy.AppliedAnnotation]
	old, err := runtime.DefaultUnstructuredConverter.ToUnstructured(lr)
	g.Expect(err).NotTo(HaveOccurred())
	delete(old, "status")
	old["metadata"] = map[string]any{"name": lr.Name, "namespace": ns, "labels": lr.Labels,
		"annotations": map[string]any{tenancyv1alpha1.ClaimNameAnnotation: claim.Name, claimpolicy.AppliedAnnotation: "000000000000000000000000"}}
	old["apiVersion"], old["kind"] = "v1", "LimitRange"
	g.Expect(k8s.Apply(ctx, client.ApplyConfigurationFromUnstructured(&unstructured.Unstructured{Object: old}),
		client.FieldOwner(kube.FieldOwner), client.ForceOwnership)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(lr), lr)).To(Succeed())
		g.Expect(lr.Annotations).To(HaveKeyWithValue(claimpolicy.AppliedAnnotation, digest))
		g.Expect(lr.Annotations).NotTo(HaveKey(tenancyv1alpha1.ClaimNameAnnotation))
	}).WithTimeout(30 * time.Second).Should(Succeed())

	// The same annotation written by another field manager (as 0.2.0 made children, with an update),
	// which the apply alone would leave, on a child that is otherwise as the class wants it.
	g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(quota), quota)).To(Succeed())
	quota.Annotations[tenancyv1alpha1.ClaimNameAnnotation] = claim.Name
	g.Expect(k8s.Update(ctx, quota, client.FieldOwner("nsclaim-0.2.0"))).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(quota), quota)).To(Succeed())
		g.Expect(quota.Annotations).NotTo(HaveKey(tenancyv1alpha1.ClaimNameAnnotation))
		g.Expect(quota.Annotations).To(HaveKey(claimpolicy.AppliedAnnotation))
	}).WithTimeout(30 * time.Second).Should(Succeed())
	waitFor(t, claim, tenancyv1alpha1.ReadyCondition, metav1.ConditionTrue, tenancyv1alpha1.ProvisionedReason)
}

// foreignNamespaceCase asserts that a claim aimed at an existing namespace it does not own is refused
// with reason, that the namespace is byte-for-byte unchanged, and that no credentials appear.
func foreignNamespaceCase(t *testing.T, claim *tenancyv1alpha1.NamespaceClaim, target, reason string) {
	t.Helper()
	g := NewWithT(t)
	before := &corev1.Namespace{}
	g.Expect(k8s.Get(ctx, client.ObjectKey{Name: target}, before)).To(Succeed())
	got := waitFor(t, claim, tenancyv1alpha1.ReadyCondition, metav1.ConditionFalse, reason)
	g.Expect(got.Status.Namespace).To(BeEmpty())
	g.Expect(got.Status.CredentialsSecretName).To(BeEmpty())
	after := &corev1.Namespace{}
	g.Expect(k8s.Get(ctx, client.ObjectKey{Name: target}, after)).To(Succeed())
	g.Expect(after.ResourceVersion).To(Equal(before.ResourceVersion))
	g.Expect(after.DeletionTimestamp).To(BeNil())
	err := k8s.Get(ctx, client.ObjectKey{Namespace: claim.Namespace, Name: credentials.SecretName(claim.Name)}, &corev1.Secret{})
	g.Expect(isNotFound(err)).To(BeTrue(), "no credentials Secret: %v", err)
	sas := &corev1.ServiceAccountList{}
	g.Expect(k8s.List(ctx, sas, client.InNamespace(target), client.MatchingLabels{tenancyv1alpha1.ClaimUIDLabel: string(claim.UID)})).To(Succeed())
	g.Expect(sas.Items).To(BeEmpty())
	g.Eventually(func(g Gomega) {
		evs := &corev1.EventList{}
		g.Expect(k8s.List(ctx, evs, client.InNamespace(claim.Namespace))).To(Succeed())
		g.Expect(evs.Items).To(ContainElement(And(HaveField("Reason", reason), HaveField("Type", corev1.EventTypeWarning), HaveField("InvolvedObject.UID", claim.UID))))
	}).WithTimeout(10 * time.Second).Should(Succeed())

	// Deleting the refused claim leaves the namespace alone too.
	g.Expect(k8s.Delete(ctx, claim)).To(Succeed())
	g.Eventually(func() bool {
		return isNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(claim), &tenancyv1alpha1.NamespaceClaim{}))
	}).WithTimeout(20 * time.Second).Should(BeTrue())
	g.Expect(k8s.Get(ctx, client.ObjectKey{Name: target}, after)).To(Succeed())
	g.Expect(after.ResourceVersion).To(Equal(before.ResourceVersion))
	g.Expect(after.DeletionTimestamp).To(BeNil())
}

func TestNeverTouchesForeignNamespaces(t *testing.T) {
	requireEnvtest(t)
	t.Parallel()
	t.Run("kube-system", func(t *testing.T) {
		t.Parallel()
		// Neither a class prefix nor a requested name may start with kube-: the API server says so.
		class := &tenancyv1alpha1.NamespaceClass{ObjectMeta: metav1.ObjectMeta{Name: uniq("class")},
			Spec: tenancyv1alpha1.NamespaceClassSpec{Naming: tenancyv1alpha1.NamingSpec{Prefix: "kube-"}}}
		err := k8s.Create(ctx, class)
		NewWithT(t).Expect(err).To(MatchError(ContainSubstring("naming.prefix must not start with kube-")))
	})
	t.Run("default", func(t *testing.T) {
		t.Parallel()
		class := newClass(t, withPrefix("defaul"))
		claim := newClaim(t, newRequesterNamespace(t, nil), withClass(class.Name), withNamespaceName("t"))
		foreignNamespaceCase(t, claim, "default", tenancyv1alpha1.NamespaceConflictReason)
	})
	t.Run("made by hand", func(t *testing.T) {
		t.Parallel()
		hand := uniq("handmade")
		NewWithT(t).Expect(k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: hand}})).To(Succeed())
		class := newClass(t)
		claim := newClaim(t, newRequesterNamespace(t, nil), withClass(class.Name), withNamespaceName(hand))
		foreignNamespaceCase(t, claim, hand, tenancyv1alpha1.NamespaceConflictReason)
	})
	t.Run("another claim's", func(t *testing.T) {
		t.Parallel()
		class := newClass(t)
		name := uniq("shared")
		first := newClaim(t, newRequesterNamespace(t, nil), withClass(class.Name), withNamespaceName(name))
		waitFor(t, first, tenancyv1alpha1.ReadyCondition, metav1.ConditionTrue, tenancyv1alpha1.ProvisionedReason)
		second := newClaim(t, newRequesterNamespace(t, nil), withClass(class.Name), withNamespaceName(name))
		foreignNamespaceCase(t, second, name, tenancyv1alpha1.NamespaceTakenReason)
		// The first keeps it.
		waitFor(t, first, tenancyv1alpha1.ReadyCondition, metav1.ConditionTrue, tenancyv1alpha1.ProvisionedReason)
	})
}

func TestRefusals(t *testing.T) {
	requireEnvtest(t)
	t.Parallel()
	cases := []struct {
		name   string
		setup  func(t *testing.T) *tenancyv1alpha1.NamespaceClaim
		reason string
	}{
		{"class not found", func(t *testing.T) *tenancyv1alpha1.NamespaceClaim {
			return newClaim(t, newRequesterNamespace(t, nil), withClass("no-such-class"))
		}, tenancyv1alpha1.ClassNotFoundReason},
		{"class not allowed for requester", func(t *testing.T) *tenancyv1alpha1.NamespaceClaim {
			class := newClass(t, withSelector(map[string]string{"ci": "true"}))
			return newClaim(t, newRequesterNamespace(t, map[string]string{"ci": "false"}), withClass(class.Name))
		}, tenancyv1alpha1.ClassNotAllowedReason},
		{"ttl above maximum", func(t *testing.T) *tenancyv1alpha1.NamespaceClaim {
			class := newClass(t, withMaxTTL(time.Hour))
			return newClaim(t, newRequesterNamespace(t, nil), withClass(class.Name), withTTL(2*time.Hour))
		}, tenancyv1alpha1.TTLExceedsMaximumReason},
		{"label not allowed", func(t *testing.T) *tenancyv1alpha1.NamespaceClaim {
			class := newClass(t, withAllowedLabels("branch"))
			return newClaim(t, newRequesterNamespace(t, nil), withClass(class.Name), withLabels(map[string]string{"owner": "me"}))
		}, tenancyv1alpha1.LabelNotAllowedReason},
		{"over the claim limit", func(t *testing.T) *tenancyv1alpha1.NamespaceClaim {
			class := newClass(t, withLimit(1))
			req := newRequesterNamespace(t, nil)
			first := newClaim(t, req, withClass(class.Name))
			waitFor(t, first, tenancyv1alpha1.ReadyCondition, metav1.ConditionTrue, tenancyv1alpha1.ProvisionedReason)
			return newClaim(t, req, withClass(class.Name))
		}, tenancyv1alpha1.ClaimLimitExceededReason},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			claim := tc.setup(t)
			got := waitFor(t, claim, tenancyv1alpha1.ReadyCondition, metav1.ConditionFalse, tc.reason)
			g := NewWithT(t)
			g.Expect(got.Status.Namespace).To(BeEmpty())
			nss := &corev1.NamespaceList{}
			g.Expect(k8s.List(ctx, nss, client.MatchingLabels{tenancyv1alpha1.ClaimUIDLabel: string(claim.UID)})).To(Succeed())
			g.Expect(nss.Items).To(BeEmpty())
			err := k8s.Get(ctx, client.ObjectKey{Namespace: claim.Namespace, Name: credentials.SecretName(claim.Name)}, &corev1.Secret{})
			g.Expect(isNotFound(err)).To(BeTrue())
		})
	}
}

func TestSecretConflictLeavesForeignSecret(t *testing.T) {
	requireEnvtest(t)
	t.Parallel()
	g := NewWithT(t)
	class := newClass(t)
	req := newRequesterNamespace(t, nil)
	name := uniq("claim")
	foreign := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: req, Name: credentials.SecretName(name)}, StringData: map[string]string{"token": "mine"}}
	g.Expect(k8s.Create(ctx, foreign)).To(Succeed())
	claim := &tenancyv1alpha1.NamespaceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: req, Name: name}, Spec: tenancyv1alpha1.NamespaceClaimSpec{ClassName: class.Name}}
	g.Expect(k8s.Create(ctx, claim)).To(Succeed())
	waitFor(t, claim, tenancyv1alpha1.ReadyCondition, metav1.ConditionFalse, tenancyv1alpha1.SecretConflictReason)
	after := &corev1.Secret{}
	g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(foreign), after)).To(Succeed())
	g.Expect(after.ResourceVersion).To(Equal(foreign.ResourceVersion))
}

func TestDefaultClassAndAmbiguity(t *testing.T) {
	requireEnvtest(t)
	// Not parallel: default classes are cluster-wide.
	g := NewWithT(t)
	def := newClass(t, asDefault())
	claim := newClaim(t, newRequesterNamespace(t, nil))
	got := waitFor(t, claim, tenancyv1alpha1.ReadyCondition, metav1.ConditionTrue, tenancyv1alpha1.ProvisionedReason)
	g.Expect(got.Status.ClassName).To(Equal(def.Name))

	second := newClass(t, asDefault())
	ambiguous := newClaim(t, newRequesterNamespace(t, nil))
	waitFor(t, ambiguous, tenancyv1alpha1.ReadyCondition, metav1.ConditionFalse, tenancyv1alpha1.AmbiguousDefaultClassReason)
	// The claim that already resolved its class keeps it.
	g.Expect(k8s.Delete(ctx, second)).To(Succeed())
	waitFor(t, ambiguous, tenancyv1alpha1.ReadyCondition, metav1.ConditionTrue, tenancyv1alpha1.ProvisionedReason)
	g.Expect(k8s.Delete(ctx, def)).To(Succeed())
}

func TestExcessPermissionsAreNeverReady(t *testing.T) {
	requireEnvtest(t)
	t.Parallel()
	g := NewWithT(t)
	class := newClass(t)
	target := uniq("leaky")
	// A ClusterRoleBinding that gives the identity a cluster-wide read of Secrets.
	crb := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: uniq("leak")},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: "system:serviceaccounts:" + target}},
	}
	g.Expect(k8s.Create(ctx, crb)).To(Succeed())
	t.Cleanup(func() { _ = k8s.Delete(ctx, crb) })
	// Wait until the authorizer sees the binding, so the claim's self-test meets it.
	g.Eventually(func(g Gomega) {
		sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User: "system:serviceaccount:" + target + ":nsclaim-tenant", Groups: []string{"system:serviceaccounts:" + target},
			ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: "default", Verb: "get", Resource: "secrets"}}}
		g.Expect(k8s.Create(ctx, sar)).To(Succeed())
		g.Expect(sar.Status.Allowed).To(BeTrue())
	}).WithTimeout(10 * time.Second).Should(Succeed())
	claim := newClaim(t, newRequesterNamespace(t, nil), withClass(class.Name), withNamespaceName(target))
	got := waitFor(t, claim, tenancyv1alpha1.PermissionsVerifiedCondition, metav1.ConditionFalse, tenancyv1alpha1.ExcessPermissionsReason)
	g.Expect(got.Status.Conditions).To(ContainElement(And(HaveField("Type", tenancyv1alpha1.ReadyCondition), HaveField("Status", metav1.ConditionFalse), HaveField("Reason", tenancyv1alpha1.ExcessPermissionsReason))))
	// No credential is handed out before the identity is proven: no Secret, no token recorded.
	g.Expect(isNotFound(k8s.Get(ctx, client.ObjectKey{Namespace: claim.Namespace, Name: claim.Name + "-kubeconfig"}, &corev1.Secret{}))).To(BeTrue(), "a Secret was written for a claim that failed its self-test")
	g.Expect(got.Status.TokenExpiresAt).To(BeNil())
	g.Expect(k8s.Delete(ctx, crb)).To(Succeed())
	waitFor(t, claim, tenancyv1alpha1.ReadyCondition, metav1.ConditionTrue, tenancyv1alpha1.ProvisionedReason)
}

func TestDeletingClaimDeletesItsNamespace(t *testing.T) {
	requireEnvtest(t)
	t.Parallel()
	g := NewWithT(t)
	class := newClass(t)
	claim := newClaim(t, newRequesterNamespace(t, nil), withClass(class.Name))
	got := waitFor(t, claim, tenancyv1alpha1.ReadyCondition, metav1.ConditionTrue, tenancyv1alpha1.ProvisionedReason)
	// A finalizer of someone else's holds the namespace in Terminating: the claim must wait for it,
	// say so, and not let go of its own finalizer.
	ns := &corev1.Namespace{}
	g.Expect(k8s.Get(ctx, client.ObjectKey{Name: got.Status.Namespace}, ns)).To(Succeed())
	ns.Finalizers = append(ns.Finalizers, "test.nsclaim.dev/hold")
	g.Expect(k8s.Update(ctx, ns)).To(Succeed())
	g.Expect(k8s.Delete(ctx, claim)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(k8s.Get(ctx, client.ObjectKey{Name: got.Status.Namespace}, ns)).To(Succeed())
		g.Expect(ns.DeletionTimestamp).NotTo(BeNil())
		cur := getClaim(g, claim)
		g.Expect(cur.Finalizers).To(ContainElement(tenancyv1alpha1.ClaimFinalizer))
		rc := meta.FindStatusCondition(cur.Status.Conditions, tenancyv1alpha1.ReadyCondition)
		g.Expect(rc).NotTo(BeNil())
		g.Expect(rc.Reason).To(Equal(tenancyv1alpha1.NamespaceTerminatingReason))
		g.Expect(rc.Message).To(ContainSubstring("namespace " + got.Status.Namespace))
		// The credentials go at once, not with the claim.
		err := k8s.Get(ctx, client.ObjectKey{Namespace: claim.Namespace, Name: got.Status.CredentialsSecretName}, &corev1.Secret{})
		g.Expect(isNotFound(err)).To(BeTrue(), "credentials Secret still there: %v", err)
	}).WithTimeout(20 * time.Second).Should(Succeed())
	g.Consistently(func(g Gomega) {
		g.Expect(getClaim(g, claim).Finalizers).To(ContainElement(tenancyv1alpha1.ClaimFinalizer))
	}).WithTimeout(2 * time.Second).Should(Succeed())
	// Once the namespace is gone, the claim goes.
	g.Expect(k8s.Get(ctx, client.ObjectKey{Name: got.Status.Namespace}, ns)).To(Succeed())
	ns.Finalizers = slices.DeleteFunc(ns.Finalizers, func(f string) bool { return f == "test.nsclaim.dev/hold" })
	g.Expect(k8s.Update(ctx, ns)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(isNotFound(k8s.Get(ctx, client.ObjectKey{Name: got.Status.Namespace}, &corev1.Namespace{}))).To(BeTrue(), "namespace still there")
		g.Expect(isNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(claim), &tenancyv1alpha1.NamespaceClaim{}))).To(BeTrue(), "claim still there")
	}).WithTimeout(60 * time.Second).Should(Succeed())
}

func TestQuietWhenNothingChanges(t *testing.T) {
	requireEnvtest(t)
	t.Parallel()
	g := NewWithT(t)
	class := newClass(t, fullClass())
	claim := newClaim(t, newRequesterNamespace(t, nil), withClass(class.Name))
	got := waitFor(t, claim, tenancyv1alpha1.ReadyCondition, metav1.ConditionTrue, tenancyv1alpha1.ProvisionedReason)
	sec := &corev1.Secret{}
	g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: claim.Namespace, Name: got.Status.CredentialsSecretName}, sec)).To(Succeed())
	ns := &corev1.Namespace{}
	g.Expect(k8s.Get(ctx, client.ObjectKey{Name: got.Status.Namespace}, ns)).To(Succeed())

	touch(t, claim)
	touched := getClaim(g, claim)
	waitReconciled(t, "namespaceclaim", touched)
	g.Consistently(func(g Gomega) {
		now := getClaim(g, claim)
		g.Expect(now.ResourceVersion).To(Equal(touched.ResourceVersion), "no status patch")
		s := &corev1.Secret{}
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(sec), s)).To(Succeed())
		g.Expect(s.ResourceVersion).To(Equal(sec.ResourceVersion), "no token re-issued")
		n := &corev1.Namespace{}
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(ns), n)).To(Succeed())
		g.Expect(n.ResourceVersion).To(Equal(ns.ResourceVersion))
	}).WithTimeout(3 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())
}

// A RoleBinding made ahead of time in another team's namespace, granting edit to the future tenant of
// a claim (its ServiceAccount user, or its namespace's group), is found: ExcessPermissions naming the
// binding, and no credential is handed out. A SubjectAccessReview sample of a few namespaces misses it.
func TestGrantMadeAheadOfTimeElsewhereIsExcess(t *testing.T) {
	requireEnvtest(t)
	t.Parallel()
	for name, subject := range map[string]rbacv1.Subject{
		"user":  {Kind: rbacv1.ServiceAccountKind, Name: tenancyv1alpha1.TenantServiceAccountName},
		"group": {Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			g := NewWithT(t)
			class := newClass(t)
			target := uniq("ahead")
			if subject.Kind == rbacv1.ServiceAccountKind {
				subject.Namespace = target
			} else {
				subject.Name = "system:serviceaccounts:" + target
			}
			other := newRequesterNamespace(t, nil) // another team's namespace
			rb := &rbacv1.RoleBinding{
				ObjectMeta: metav1.ObjectMeta{Name: uniq("planted"), Namespace: other},
				RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: testRoleName},
				Subjects:   []rbacv1.Subject{subject},
			}
			g.Expect(k8s.Create(ctx, rb)).To(Succeed())
			claim := newClaim(t, newRequesterNamespace(t, nil), withClass(class.Name), withNamespaceName(target))
			got := waitFor(t, claim, tenancyv1alpha1.ReadyCondition, metav1.ConditionFalse, tenancyv1alpha1.ExcessPermissionsReason)
			c := meta.FindStatusCondition(got.Status.Conditions, tenancyv1alpha1.PermissionsVerifiedCondition)
			g.Expect(c.Message).To(ContainSubstring("RoleBinding " + other + "/" + rb.Name))
			g.Expect(isNotFound(k8s.Get(ctx, client.ObjectKey{Namespace: claim.Namespace, Name: claim.Name + "-kubeconfig"}, &corev1.Secret{}))).To(BeTrue())
			g.Expect(k8s.Delete(ctx, rb)).To(Succeed())
			waitFor(t, claim, tenancyv1alpha1.ReadyCondition, metav1.ConditionTrue, tenancyv1alpha1.ProvisionedReason)
		})
	}
}
