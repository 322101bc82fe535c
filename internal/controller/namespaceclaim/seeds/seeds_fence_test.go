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

package seeds_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
	"github.com/nsclaim/nsclaim-operator/internal/claimpolicy"
	"github.com/nsclaim/nsclaim-operator/internal/controller/namespaceclaim/seeds"
	"github.com/nsclaim/nsclaim-operator/internal/fence"
	"github.com/nsclaim/nsclaim-operator/internal/testenv"
)

// operatorUser is the operator's ServiceAccount, the identity the fence confines and the label guard
// lets through.
const operatorUser = "system:serviceaccount:nsclaim-operator-system:nsclaim-operator-controller-manager"

// apiSources reads the seed namespace and the ConfigMap copies from the API server, selecting as
// watchcache.Seeds' caches do (a source only with seeds.nsclaim.dev/class, a copy only with
// seeds.nsclaim.dev/seed).
type apiSources struct {
	c  client.Reader
	ns string
}

func (s apiSources) Source(ctx context.Context, kind tenancyv1alpha1.SeedKind, name string) (client.Object, error) {
	var obj client.Object = &corev1.ConfigMap{}
	if kind == tenancyv1alpha1.SeedKindSecret {
		obj = &corev1.Secret{}
	}
	if err := s.c.Get(ctx, client.ObjectKey{Namespace: s.ns, Name: name}, obj); err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	if _, ok := obj.GetLabels()[tenancyv1alpha1.SeedClassLabel]; !ok {
		return nil, nil
	}
	return obj, nil
}

func (s apiSources) ConfigMapCopy(ctx context.Context, ns, name string) (*corev1.ConfigMap, error) {
	cm := &corev1.ConfigMap{}
	if err := s.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, cm); err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	if _, ok := cm.Labels[tenancyv1alpha1.SeedLabel]; !ok {
		return nil, nil
	}
	return cm, nil
}

// impersonate returns a client acting as user in groups through cfg.
func impersonate(t *testing.T, cfg *rest.Config, user string, groups ...string) client.Client {
	t.Helper()
	c := rest.CopyConfig(cfg)
	c.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: append(groups, "system:authenticated")}
	cl, err := client.New(c, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

// fencedCluster starts a control plane with the shipped fence and label guard enforced and the
// operator's shipped ClusterRole (config/rbac/role.yaml) bound to its ServiceAccount, and returns the
// admin client and the operator's.
func fencedCluster(t *testing.T) (admin, operator client.Client, cfg *rest.Config) {
	t.Helper()
	ctx := context.Background()
	g := NewWithT(t)
	cfg = testenv.Start(t, &envtest.Environment{})
	admin, err := client.New(cfg, client.Options{})
	g.Expect(err).NotTo(HaveOccurred())
	raw, err := os.ReadFile(filepath.Join("..", "..", "..", "..", "config", "rbac", "role.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	role := &rbacv1.ClusterRole{}
	g.Expect(yaml.UnmarshalStrict(raw, role)).To(Succeed())
	g.Expect(admin.Create(ctx, role)).To(Succeed())
	g.Expect(admin.Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: role.Name},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: operatorUser}}})).To(Succeed())
	shipped, err := fence.Shipped()
	g.Expect(err).NotTo(HaveOccurred())
	for _, obj := range []client.Object{shipped.Policy, shipped.Binding, shipped.LabelGuard, shipped.LabelGuardBinding} {
		g.Expect(admin.Create(ctx, obj)).To(Succeed())
	}
	operator = impersonate(t, cfg, operatorUser, "system:serviceaccounts", "system:serviceaccounts:nsclaim-operator-system")
	// Both policies are enforced once the operator may not write a ConfigMap in a namespace it did
	// not create, and nobody else may mark one as a seed's copy.
	g.Eventually(func(g Gomega) {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceDefault, Name: "probe"}}
		g.Expect(apierrors.IsForbidden(operator.Create(ctx, cm.DeepCopy(), client.DryRunAll))).To(BeTrue(), "fence")
		cm.Labels = map[string]string{tenancyv1alpha1.SeedLabel: "ConfigMap"}
		g.Expect(apierrors.IsForbidden(admin.Create(ctx, cm, client.DryRunAll))).To(BeTrue(), "label guard")
	}).WithTimeout(30 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())
	return admin, operator, cfg
}

// aggregateEdit fills the ClusterRoles view and edit (which view is aggregated into) with the rules of
// the ClusterRoles aggregated into them, as kube-controller-manager's aggregation controller does on a
// cluster (envtest runs none, so both are empty there).
func aggregateEdit(t *testing.T, admin client.Client) {
	t.Helper()
	ctx := context.Background()
	g := NewWithT(t)
	for _, name := range []string{"view", "edit"} {
		role := &rbacv1.ClusterRole{}
		g.Expect(admin.Get(ctx, client.ObjectKey{Name: name}, role)).To(Succeed())
		g.Expect(role.AggregationRule).NotTo(BeNil())
		role.Rules = nil
		for _, sel := range role.AggregationRule.ClusterRoleSelectors {
			parts := &rbacv1.ClusterRoleList{}
			g.Expect(admin.List(ctx, parts, client.MatchingLabels(sel.MatchLabels))).To(Succeed())
			for _, p := range parts.Items {
				role.Rules = append(role.Rules, p.Rules...)
			}
		}
		g.Expect(role.Rules).NotTo(BeEmpty())
		g.Expect(admin.Update(ctx, role)).To(Succeed())
	}
}

// TestTenantCannotKeepItsContentUnderACopysName: under the shipped fence and label guard, a tenant
// (the ServiceAccount nsclaim-tenant, bound to `edit` in its namespace, as a class binds it by default)
// cannot change a copy's data while it carries the claim's marks. It takes the marks off in one
// update, then changes the data (and adds a key, and makes it immutable) in a second; it replaces the
// pull Secret by an Opaque one of its own; it takes the marks off the CA ConfigMap and edits it. The
// copy's name in a namespace nsclaim created is the class's: the next reconcile of the seeds phase, as
// the operator's own identity under its shipped RBAC, puts the source's content back each time, with
// its marks, and reports the seeds Synced.
func TestTenantCannotKeepItsContentUnderACopysName(t *testing.T) {
	ctx := context.Background()
	g := NewWithT(t)
	admin, operator, cfg := fencedCluster(t)

	const seedNS = "nsclaim-seeds"
	g.Expect(admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: seedNS}})).To(Succeed())
	class := &tenancyv1alpha1.NamespaceClass{ObjectMeta: metav1.ObjectMeta{Name: "ci"}, Spec: tenancyv1alpha1.NamespaceClassSpec{
		Seeds: []tenancyv1alpha1.Seed{{Kind: tenancyv1alpha1.SeedKindSecret, Name: "registry", As: "pull"}, {Kind: tenancyv1alpha1.SeedKindConfigMap, Name: "corp-ca"}}}}
	consent := map[string]string{tenancyv1alpha1.SeedClassLabel: class.Name}
	registry := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: seedNS, Name: "registry", Labels: consent},
		Type: corev1.SecretTypeDockerConfigJson, Data: map[string][]byte{".dockerconfigjson": []byte(`{"auths":{"r.example":{}}}`)}}
	ca := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: seedNS, Name: "corp-ca", Labels: consent}, Data: map[string]string{"ca.crt": "corporate"}}
	g.Expect(admin.Create(ctx, registry)).To(Succeed())
	g.Expect(admin.Create(ctx, ca)).To(Succeed())

	// The claim's namespace, made by the operator as its namespace phase makes it.
	claim := &tenancyv1alpha1.NamespaceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "ci-1", UID: types.UID("0c1a1d2e-0000-4000-8000-000000000045")}}
	owner := claimpolicy.OwnerOf(claim)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ci-1-abcde", Labels: claimpolicy.OwnershipLabels(owner)}}
	ns.Labels["pod-security.kubernetes.io/enforce"] = "baseline"
	g.Expect(operator.Create(ctx, ns)).To(Succeed())
	g.Expect(admin.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: tenancyv1alpha1.TenantServiceAccountName}})).To(Succeed())
	g.Expect(admin.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "tenant"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "edit"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns.Name, Name: tenancyv1alpha1.TenantServiceAccountName}}})).To(Succeed())
	aggregateEdit(t, admin)
	tenant := impersonate(t, cfg, "system:serviceaccount:"+ns.Name+":"+tenancyv1alpha1.TenantServiceAccountName,
		"system:serviceaccounts", "system:serviceaccounts:"+ns.Name)

	phase := &seeds.Phase{Client: operator, APIReader: operator, Sources: apiSources{c: admin, ns: seedNS}, SeedNamespace: seedNS}
	// reconcile runs the phase once, as the claim reconciler would, and records its status.seeds.
	reconcile := func(step string) {
		t.Helper()
		s := &seeds.Claim{Claim: claim, Class: class, Owner: owner, Namespace: ns}
		g.Expect(phase.Reconcile(ctx, s)).To(Succeed(), step)
		g.Expect(s.Condition).NotTo(BeNil(), step)
		g.Expect(s.Condition.Reason).To(Equal(tenancyv1alpha1.SeedsSyncedReason), "%s: %s", step, s.Condition.Message)
		claim.Status.Seeds = s.Seeds
	}
	pullKey, caKey := client.ObjectKey{Namespace: ns.Name, Name: "pull"}, client.ObjectKey{Namespace: ns.Name, Name: "corp-ca"}
	// restored checks that both copies hold their sources' content and the claim's marks.
	restored := func(step string) {
		t.Helper()
		pull := &corev1.Secret{}
		g.Expect(admin.Get(ctx, pullKey, pull)).To(Succeed(), step)
		g.Expect(pull.Type).To(Equal(corev1.SecretTypeDockerConfigJson), step)
		g.Expect(pull.Data).To(Equal(registry.Data), step)
		g.Expect(pull.Immutable == nil || !*pull.Immutable).To(BeTrue(), step)
		g.Expect(claimpolicy.MarkedFor(pull, owner)).To(BeTrue(), "%s: the pull copy lacks the claim's marks: %v", step, pull.Labels)
		g.Expect(pull.Labels).To(HaveKeyWithValue(tenancyv1alpha1.SeedLabel, "Secret"), step)
		cm := &corev1.ConfigMap{}
		g.Expect(admin.Get(ctx, caKey, cm)).To(Succeed(), step)
		g.Expect(cm.Data).To(Equal(ca.Data), step)
		g.Expect(claimpolicy.MarkedFor(cm, owner)).To(BeTrue(), "%s: the CA copy lacks the claim's marks: %v", step, cm.Labels)
	}
	reconcile("first sync")
	restored("first sync")

	// The label guard is on: the copy's data cannot be changed while it carries the claim's marks.
	// The tenant's RoleBinding takes a moment to be in force.
	pull := &corev1.Secret{}
	g.Eventually(func() error { return tenant.Get(ctx, pullKey, pull) }).WithTimeout(10 * time.Second).Should(Succeed())
	pull.Data = map[string][]byte{".dockerconfigjson": []byte(`{"auths":{"evil.example":{}}}`)}
	err := tenant.Update(ctx, pull)
	g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "the tenant changed a marked copy's data: %v", err)

	// Attack 1: the marks off in one update, the data changed in a second (a key of its own added, and
	// the Secret made immutable so that nothing may change it again).
	g.Expect(tenant.Get(ctx, pullKey, pull)).To(Succeed())
	pull.Labels = nil
	g.Expect(tenant.Update(ctx, pull)).To(Succeed())
	pull.Data = map[string][]byte{".dockerconfigjson": []byte(`{"auths":{"evil.example":{}}}`), "extra": []byte("tenant's")}
	pull.Immutable = new(bool)
	*pull.Immutable = true
	g.Expect(tenant.Update(ctx, pull)).To(Succeed())
	reconcile("marks taken off the pull Secret, then its data changed")
	restored("marks taken off the pull Secret, then its data changed")

	// Attack 2: the copy replaced by an Opaque Secret of the tenant's own, unmarked.
	g.Expect(tenant.Delete(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "pull"}})).To(Succeed())
	g.Expect(tenant.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "pull"},
		Type: corev1.SecretTypeOpaque, Data: map[string][]byte{"token": []byte("tenant's")}})).To(Succeed())
	reconcile("pull Secret replaced by an Opaque one")
	restored("pull Secret replaced by an Opaque one")

	// Attack 3: the marks off the CA bundle's copy, then its data changed.
	cm := &corev1.ConfigMap{}
	g.Expect(tenant.Get(ctx, caKey, cm)).To(Succeed())
	cm.Labels = nil
	g.Expect(tenant.Update(ctx, cm)).To(Succeed())
	cm.Data = map[string]string{"ca.crt": "tenant's own CA", "extra.crt": "tenant's"}
	g.Expect(tenant.Update(ctx, cm)).To(Succeed())
	reconcile("marks taken off the CA ConfigMap, then its data changed")
	restored("marks taken off the CA ConfigMap, then its data changed")

	// What the fence grants for this is narrow: in a namespace nsclaim created, the operator may not
	// change a tenant's own Secret without making it a seed's copy; outside one, not even that.
	own := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "tenants-own"}, Data: map[string][]byte{"k": []byte("v")}}
	g.Expect(tenant.Create(ctx, own)).To(Succeed())
	err = operator.Patch(ctx, own.DeepCopy(), client.RawPatch(types.MergePatchType, []byte(`{"data":{"k":"b3duZWQ="}}`)))
	g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "the operator changed a tenant's Secret: %v", err)
	g.Expect(admin.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: seedNS, Name: "unowned"}, Data: map[string][]byte{"k": []byte("v")}})).To(Succeed())
	copyLabels := claimpolicy.OwnershipLabels(owner)
	copyLabels[tenancyv1alpha1.SeedLabel] = "Secret"
	raw, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": copyLabels}})
	g.Expect(err).NotTo(HaveOccurred())
	err = operator.Patch(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: seedNS, Name: "unowned"}}, client.RawPatch(types.MergePatchType, raw))
	g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "the operator made a Secret outside its namespaces a seed's copy: %v", err)
}
