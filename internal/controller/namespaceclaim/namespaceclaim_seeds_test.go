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
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
)

// seedSource creates a source object in the suite's seed namespace, labelled for class (none when
// class is empty).
func seedSource(t *testing.T, obj client.Object, class string) client.Object {
	t.Helper()
	ctx := context.Background()
	if err := k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: seedNamespace}}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	obj.SetNamespace(seedNamespace)
	if class != "" {
		obj.SetLabels(map[string]string{tenancyv1alpha1.SeedClassLabel: class})
	}
	NewWithT(t).Expect(k8s.Create(ctx, obj)).To(Succeed())
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), obj) })
	return obj
}

func withSeeds(seeds ...tenancyv1alpha1.Seed) classOpt {
	return func(c *tenancyv1alpha1.NamespaceClass) { c.Spec.Seeds = seeds }
}

// seedsCondition waits for the claim's SeedsSynced condition to have status and reason.
func seedsCondition(t *testing.T, c *tenancyv1alpha1.NamespaceClaim, status metav1.ConditionStatus, reason string) *tenancyv1alpha1.NamespaceClaim {
	t.Helper()
	return waitFor(t, c, tenancyv1alpha1.SeedsSyncedCondition, status, reason)
}

// eventuallyConfigMap waits until the ConfigMap ns/name has data["ca.crt"] == want.
func eventuallyConfigMap(t *testing.T, ns, name, want string) {
	t.Helper()
	NewWithT(t).Eventually(func(g Gomega) {
		cm := &corev1.ConfigMap{}
		g.Expect(k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, cm)).To(Succeed())
		g.Expect(cm.Data["ca.crt"]).To(Equal(want))
	}).WithTimeout(30 * time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())
}

// TestSeedsSyncRevertRotateDrop: a class's seeds are copied into a claim's namespace (a pull Secret
// listed on the tenant's and the default ServiceAccount, a CA bundle), a seed without its owner's
// consent is not, a tenant's edit and delete of a copy are reverted by events, a rotated source
// reaches the copy, a source made again under the same name is not taken until acknowledged, a seed
// dropped from the class is deleted, and a source that disappears leaves the claim Ready with
// SeedsSynced=False.
func TestSeedsSyncRevertRotateDrop(t *testing.T) {
	requireEnvtest(t)
	ctx := context.Background()
	g := NewWithT(t)
	classSeeds := []tenancyv1alpha1.Seed{
		{Kind: tenancyv1alpha1.SeedKindSecret, Name: uniq("registry"), As: "pull", ImagePullSecret: tenancyv1alpha1.ImagePullTenantAndDefault, Required: true},
		{Kind: tenancyv1alpha1.SeedKindConfigMap, Name: uniq("corp-ca")},
		{Kind: tenancyv1alpha1.SeedKindSecret, Name: uniq("private")},
	}
	class := newClass(t, withPrefix("seed-"), withSeeds(classSeeds...))
	registry := seedSource(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: classSeeds[0].Name}, Type: corev1.SecretTypeDockerConfigJson,
		Data: map[string][]byte{".dockerconfigjson": []byte(`{"auths":{"r.example":{}}}`)}}, class.Name).(*corev1.Secret)
	ca := seedSource(t, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: classSeeds[1].Name}, Data: map[string]string{"ca.crt": "v1"}}, tenancyv1alpha1.SeedAnyClass).(*corev1.ConfigMap)
	// The attack: a Secret of the seed namespace whose owner never offered it.
	seedSource(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: classSeeds[2].Name}, Data: map[string][]byte{"token": []byte("s3cret")}}, "")

	claim := newClaim(t, newRequesterNamespace(t, nil), withClass(class.Name))
	waitFor(t, claim, tenancyv1alpha1.ReadyCondition, metav1.ConditionTrue, tenancyv1alpha1.ProvisionedReason)
	// The operator never reads an unlabelled object of the seed namespace: to it, there is none.
	got := seedsCondition(t, claim, metav1.ConditionFalse, tenancyv1alpha1.SeedSourceNotFoundReason)
	ns := got.Status.Namespace
	g.Expect(meta.FindStatusCondition(got.Status.Conditions, tenancyv1alpha1.SeedsSyncedCondition).Message).To(ContainSubstring(classSeeds[2].Name + ": no such object carrying the label seeds.nsclaim.dev/class"))

	// The consented seeds are copied, with their origin; the other is not.
	pull := &corev1.Secret{}
	g.Eventually(func() error { return k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "pull"}, pull) }).WithTimeout(30 * time.Second).Should(Succeed())
	g.Expect(pull.Type).To(Equal(corev1.SecretTypeDockerConfigJson))
	g.Expect(pull.Data).To(Equal(registry.Data))
	g.Expect(pull.Annotations[tenancyv1alpha1.SeedSourceUIDAnnotation]).To(Equal(string(registry.UID)))
	eventuallyConfigMap(t, ns, ca.Name, "v1")
	err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: classSeeds[2].Name}, &corev1.Secret{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the unconsented Secret was copied: %v", err)
	for _, sa := range []string{tenancyv1alpha1.TenantServiceAccountName, "default"} {
		g.Eventually(func(g Gomega) {
			acc := &corev1.ServiceAccount{}
			g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: sa}, acc)).To(Succeed())
			g.Expect(acc.ImagePullSecrets).To(ContainElement(corev1.LocalObjectReference{Name: "pull"}))
		}).WithTimeout(30*time.Second).Should(Succeed(), "ServiceAccount %s", sa)
	}

	// A tenant's edit of the ConfigMap copy is reverted, as is its delete.
	cm := &corev1.ConfigMap{}
	g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: ca.Name}, cm)).To(Succeed())
	cm.Data["ca.crt"] = "tenant's own CA"
	g.Expect(k8s.Update(ctx, cm)).To(Succeed())
	eventuallyConfigMap(t, ns, ca.Name, "v1")
	g.Expect(k8s.Delete(ctx, cm)).To(Succeed())
	eventuallyConfigMap(t, ns, ca.Name, "v1")

	// A rotation of a source reaches the copy.
	registry.Data = map[string][]byte{".dockerconfigjson": []byte(`{"auths":{"r.example":{"auth":"rotated"}}}`)}
	g.Expect(k8s.Update(ctx, registry)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "pull"}, pull)).To(Succeed())
		g.Expect(pull.Data).To(Equal(registry.Data))
	}).WithTimeout(30 * time.Second).Should(Succeed())

	// The attack: the CA bundle made again under the same name (a new UID) is not taken silently.
	oldUID := string(ca.UID)
	g.Expect(k8s.Delete(ctx, ca)).To(Succeed())
	remade := seedSource(t, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: ca.Name}, Data: map[string]string{"ca.crt": "impostor"}}, tenancyv1alpha1.SeedAnyClass).(*corev1.ConfigMap)
	got = seedsCondition(t, claim, metav1.ConditionFalse, tenancyv1alpha1.SeedSourceReplacedReason)
	g.Expect(meta.FindStatusCondition(got.Status.Conditions, tenancyv1alpha1.ReadyCondition).Status).To(Equal(metav1.ConditionTrue))
	eventuallyConfigMap(t, ns, ca.Name, "v1")
	// Its owner acknowledges the replacement: the new content is copied.
	remade.Annotations = map[string]string{tenancyv1alpha1.SeedReplacesAnnotation: oldUID}
	g.Expect(k8s.Update(ctx, remade)).To(Succeed())
	eventuallyConfigMap(t, ns, ca.Name, "impostor")

	// A seed dropped from the class is deleted from the namespace; the condition forgets it.
	g.Eventually(func() error {
		c := &tenancyv1alpha1.NamespaceClass{}
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(class), c); err != nil {
			return err
		}
		c.Spec.Seeds = []tenancyv1alpha1.Seed{classSeeds[0]}
		return k8s.Update(ctx, c)
	}).Should(Succeed())
	g.Eventually(func() bool {
		return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: ca.Name}, &corev1.ConfigMap{}))
	}).WithTimeout(30 * time.Second).Should(BeTrue())
	seedsCondition(t, claim, metav1.ConditionTrue, tenancyv1alpha1.SeedsSyncedReason)

	// A source that disappears: the claim stays Ready, SeedsSynced turns False, the copy stays.
	g.Expect(k8s.Delete(ctx, registry)).To(Succeed())
	got = seedsCondition(t, claim, metav1.ConditionFalse, tenancyv1alpha1.SeedSourceNotFoundReason)
	g.Expect(meta.FindStatusCondition(got.Status.Conditions, tenancyv1alpha1.ReadyCondition).Status).To(Equal(metav1.ConditionTrue))
	g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "pull"}, &corev1.Secret{})).To(Succeed())
}

// TestSeedsRequiredSourceBlocksANewClaim: a new claim of a class whose required seed has no source is
// not Ready, with the seed's reason; once the source appears it becomes Ready.
func TestSeedsRequiredSourceBlocksANewClaim(t *testing.T) {
	requireEnvtest(t)
	seed := tenancyv1alpha1.Seed{Kind: tenancyv1alpha1.SeedKindConfigMap, Name: uniq("bundle"), Required: true}
	class := newClass(t, withPrefix("seedreq-"), withSeeds(seed))
	claim := newClaim(t, newRequesterNamespace(t, nil), withClass(class.Name))
	got := waitFor(t, claim, tenancyv1alpha1.ReadyCondition, metav1.ConditionFalse, tenancyv1alpha1.SeedSourceNotFoundReason)
	g := NewWithT(t)
	g.Expect(meta.FindStatusCondition(got.Status.Conditions, tenancyv1alpha1.ReadyCondition).Message).To(ContainSubstring("Waiting for a required seed"))
	seedSource(t, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: seed.Name}, Data: map[string]string{"ca.crt": "v1"}}, class.Name)
	got = waitFor(t, claim, tenancyv1alpha1.ReadyCondition, metav1.ConditionTrue, tenancyv1alpha1.ProvisionedReason)
	eventuallyConfigMap(t, got.Status.Namespace, seed.Name, "v1")
}

// TestSeedsReachAPooledNamespaceOnlyAtHandout: a class's warm pool makes its namespaces without the
// seeds (nothing readable sits in an unclaimed namespace); the claim handed one gets them.
func TestSeedsReachAPooledNamespaceOnlyAtHandout(t *testing.T) {
	requireEnvtest(t)
	ctx := context.Background()
	g := NewWithT(t)
	seed := tenancyv1alpha1.Seed{Kind: tenancyv1alpha1.SeedKindSecret, Name: uniq("pool-pull"), As: "pull"}
	class := newClass(t, withPrefix("seedpool-"), withSeeds(seed), withPool(1))
	seedSource(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: seed.Name}, Type: corev1.SecretTypeOpaque, Data: map[string][]byte{"k": []byte("v")}}, class.Name)
	pooled := waitPoolReady(t, class, 1)
	err := k8s.Get(ctx, client.ObjectKey{Namespace: pooled[0].Name, Name: "pull"}, &corev1.Secret{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "a pooled namespace holds a seed's copy: %v", err)

	claim := newClaim(t, newRequesterNamespace(t, nil), withClass(class.Name))
	got := waitFor(t, claim, tenancyv1alpha1.ReadyCondition, metav1.ConditionTrue, tenancyv1alpha1.ProvisionedReason)
	g.Expect(meta.FindStatusCondition(got.Status.Conditions, tenancyv1alpha1.PooledCondition).Reason).To(Equal(tenancyv1alpha1.PoolHitReason))
	g.Eventually(func() error {
		return k8s.Get(ctx, client.ObjectKey{Namespace: got.Status.Namespace, Name: "pull"}, &corev1.Secret{})
	}).WithTimeout(30 * time.Second).Should(Succeed())
	seedsCondition(t, claim, metav1.ConditionTrue, tenancyv1alpha1.SeedsSyncedReason)
}

// TestSeedsSecretCopyPutBackWithoutAWatch: the operator never watches Secrets outside the seed
// namespace, so a tenant's change of a Secret copy reaches it by no event; the claim's periodic resync
// (--seed-resync-interval, 2s in this suite) applies the copy again. As the tenant (its ServiceAccount,
// with a class role that may write Secrets), edit the pull Secret copy's data, delete it, and replace
// it with a Secret of another type under the same name: each time the copy comes back equal to its
// source, and nothing else moved (no claim, class or source edit).
func TestSeedsSecretCopyPutBackWithoutAWatch(t *testing.T) {
	requireEnvtest(t)
	ctx := context.Background()
	g := NewWithT(t)
	role := testRole()
	role.Name = uniq("seed-secrets-writer")
	role.Rules = append(role.Rules, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"secrets"},
		Verbs: []string{"create", "get", "update", "patch", "delete"}})
	g.Expect(k8s.Create(ctx, role)).To(Succeed())
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), role) })
	seed := tenancyv1alpha1.Seed{Kind: tenancyv1alpha1.SeedKindSecret, Name: uniq("registry"), As: "pull", ImagePullSecret: tenancyv1alpha1.ImagePullTenant}
	class := newClass(t, withPrefix("seedrs-"), withSeeds(seed), func(c *tenancyv1alpha1.NamespaceClass) { c.Spec.ClusterRole = role.Name })
	source := seedSource(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: seed.Name}, Type: corev1.SecretTypeDockerConfigJson,
		Data: map[string][]byte{".dockerconfigjson": []byte(`{"auths":{"r.example":{}}}`)}}, class.Name).(*corev1.Secret)

	claim := newClaim(t, newRequesterNamespace(t, nil), withClass(class.Name))
	ready := seedsCondition(t, claim, metav1.ConditionTrue, tenancyv1alpha1.SeedsSyncedReason)
	ns := ready.Status.Namespace
	tenant := impersonating(t, "system:serviceaccount:"+ns+":"+tenancyv1alpha1.TenantServiceAccountName,
		[]string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"}, nil)
	key := client.ObjectKey{Namespace: ns, Name: "pull"}
	// putBack waits until the copy is the source's again, and checks that nothing else was edited.
	putBack := func(step string) {
		t.Helper()
		g.Eventually(func(g Gomega) {
			cp := &corev1.Secret{}
			g.Expect(k8s.Get(ctx, key, cp)).To(Succeed())
			g.Expect(cp.Type).To(Equal(corev1.SecretTypeDockerConfigJson))
			g.Expect(cp.Data).To(Equal(source.Data))
			g.Expect(cp.Annotations[tenancyv1alpha1.SeedSourceUIDAnnotation]).To(Equal(string(source.UID)))
		}).WithTimeout(30*time.Second).WithPolling(100*time.Millisecond).Should(Succeed(), "after the tenant's %s", step)
		now := &tenancyv1alpha1.NamespaceClaim{}
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(claim), now)).To(Succeed())
		g.Expect(now.Generation).To(Equal(ready.Generation), "the claim was edited")
		src := &corev1.Secret{}
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(source), src)).To(Succeed())
		g.Expect(src.ResourceVersion).To(Equal(source.ResourceVersion), "the source was edited")
	}
	waitFor(t, claim, tenancyv1alpha1.ReadyCondition, metav1.ConditionTrue, tenancyv1alpha1.ProvisionedReason)
	// The tenant may read the copy once its RoleBinding is there.
	g.Eventually(func() error { return tenant.Get(ctx, key, &corev1.Secret{}) }).WithTimeout(30 * time.Second).Should(Succeed())

	// The tenant's edit of the copy's data (the label guard refuses it on a cluster with the fence;
	// envtest runs none, so it lands).
	cp := &corev1.Secret{}
	g.Expect(tenant.Get(ctx, key, cp)).To(Succeed())
	cp.Data = map[string][]byte{".dockerconfigjson": []byte(`{"auths":{"evil.example":{}}}`)}
	g.Expect(tenant.Update(ctx, cp)).To(Succeed())
	putBack("edit")

	// Its delete.
	g.Expect(tenant.Delete(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "pull"}})).To(Succeed())
	putBack("delete")

	// Its replacement by a Secret of another type (a type is immutable: delete, then create), forged
	// with the copy's marks, which only the fence's label guard would refuse.
	// A resync between the two may put the copy back first: the tenant tries again.
	g.Eventually(func(g Gomega) {
		g.Expect(tenant.Get(ctx, key, cp)).To(Succeed())
		g.Expect(client.IgnoreNotFound(tenant.Delete(ctx, cp.DeepCopy()))).To(Succeed())
		forged := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "pull", Labels: cp.Labels, Annotations: cp.Annotations},
			Type: corev1.SecretTypeOpaque, Data: map[string][]byte{"token": []byte("tenant's")}}
		g.Expect(tenant.Create(ctx, forged)).To(Succeed())
	}).WithTimeout(30 * time.Second).Should(Succeed())
	putBack("replacement by an Opaque Secret")
}
