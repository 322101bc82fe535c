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

package security

import (
	"encoding/json"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
)

// Issue 39's attacks on what marks a namespace as nsclaim's, made as the weak identities real clusters
// have, each with its own token and realistic RBAC, never as admin:
//   - a namespace patcher (a namespace-labelling or GitOps controller, a self-service namespace
//     creator): get, list, create and patch Namespaces, no Secret;
//   - a namespaces/status patcher (a namespace clean-up tool): get Namespaces, patch namespaces/status.
// With the fence installed its label guard refuses every mark and the ownership record to both, on the
// namespace and through its subresources. Without it the marks go on, and the operator, which proves
// ownership with its record and never with the marks, leaves the marked namespace alone (the orphan
// sweep case below; the bind, handout and count cases are proven in the envtest suite of
// internal/controller/namespaceclaim).

// weakIdentity makes ServiceAccount name in namespace tools-<mode>, bound to a ClusterRole of rules,
// and returns a client with its token.
func weakIdentity(t *testing.T, name string, rules []rbacv1.PolicyRule) client.Client {
	t.Helper()
	g := NewWithT(t)
	ns := "tools-" + mode
	ensure(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	ensure(t, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}})
	ensure(t, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "security-" + name + "-" + mode}, Rules: rules})
	ensure(t, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "security-" + name + "-" + mode},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "security-" + name + "-" + mode},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: ns}}})
	token, err := mintTokenValue(admin, ns, name)
	g.Expect(err).NotTo(HaveOccurred())
	c, err := tokenClient(token)
	g.Expect(err).NotTo(HaveOccurred())
	// RBAC settles within moments.
	g.Eventually(func() error { return c.Get(ctx, client.ObjectKey{Name: ns}, &corev1.Namespace{}) }).WithTimeout(10 * time.Second).Should(Succeed())
	return c
}

func namespacePatcher(t *testing.T) client.Client {
	return weakIdentity(t, "namespace-patcher", []rbacv1.PolicyRule{{
		APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: []string{"get", "list", "watch", "create", "patch"}}})
}

func statusPatcher(t *testing.T) client.Client {
	return weakIdentity(t, "namespace-status-patcher", []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: []string{"get", "list"}},
		{APIGroups: []string{""}, Resources: []string{"namespaces/status"}, Verbs: []string{"patch", "update"}}})
}

// metaPatch is a merge patch of a namespace's labels and annotations (a nil value removes the key).
func metaPatch(labels, annotations map[string]any) client.Patch {
	body, _ := json.Marshal(map[string]any{"metadata": map[string]any{"labels": labels, "annotations": annotations}})
	return client.RawPatch(types.MergePatchType, body)
}

// claimMarks are the full marks of a claim that never existed.
func claimMarks() (map[string]any, map[string]any) {
	return map[string]any{tenancyv1alpha1.ManagedByLabel: tenancyv1alpha1.ManagedByValue,
			tenancyv1alpha1.ClaimUIDLabel: "00000000-0000-0000-0000-000000000039", tenancyv1alpha1.ClaimNamespaceLabel: "team-ghost"},
		map[string]any{tenancyv1alpha1.ClaimNameAnnotation: "never-existed"}
}

// TestWeakIdentitiesCannotMarkNamespaces: the label guard refuses nsclaim's marks and record on
// Namespaces to a namespace patcher and a namespaces/status patcher, on every path.
func TestWeakIdentitiesCannotMarkNamespaces(t *testing.T) {
	patcher, status := namespacePatcher(t), statusPatcher(t)
	prod := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "production-" + mode}}
	ensure(t, prod)
	owned := ownedNamespace(t)
	if mode != "installed" {
		// Without the guard the removals below succeed: they take their marks off a stand-in of their
		// own, not off the one the operator-token attacks use.
		owned = &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "owned-stripped-" + mode, Labels: map[string]string{
			tenancyv1alpha1.ManagedByLabel: tenancyv1alpha1.ManagedByValue, tenancyv1alpha1.ClaimUIDLabel: "stand-in",
			tenancyv1alpha1.ClaimNamespaceLabel: "stand-in", psaEnforce: "restricted"}}}
		ensure(t, owned)
	}
	labels, annotations := claimMarks()
	pool := map[string]any{tenancyv1alpha1.ManagedByLabel: tenancyv1alpha1.ManagedByValue, tenancyv1alpha1.PoolLabel: className,
		tenancyv1alpha1.PoolClassUIDLabel: "uid", tenancyv1alpha1.PoolGenerationLabel: "1"}
	record := owned.Annotations[tenancyv1alpha1.OwnershipAnnotation]
	if record == "" {
		record = "u1.copied"
	}
	marked := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "marked-at-create-" + mode,
		Labels: map[string]string{tenancyv1alpha1.ManagedByLabel: tenancyv1alpha1.ManagedByValue, tenancyv1alpha1.ClaimUIDLabel: "x", tenancyv1alpha1.ClaimNamespaceLabel: "y"}}}
	patchAs := func(c client.Client, ns *corev1.Namespace, p client.Patch) func(client.Client) (string, error) {
		return func(client.Client) (string, error) { return "", c.Patch(ctx, ns.DeepCopy(), p) }
	}
	statusPatchAs := func(ns *corev1.Namespace, p client.Patch) func(client.Client) (string, error) {
		return func(client.Client) (string, error) { return "", status.Status().Patch(ctx, ns.DeepCopy(), p) }
	}
	runAttacks(t, patcher, []attack{{
		name:        "as a namespace patcher: put a claim's marks on a production namespace",
		fenceDenies: guardDeny, kept: []client.Object{prod}, do: patchAs(patcher, prod, metaPatch(labels, annotations)),
	}, {
		name:        "as a namespace patcher: copy a claim namespace's ownership record onto a production namespace",
		fenceDenies: guardDeny, kept: []client.Object{prod},
		do: patchAs(patcher, prod, metaPatch(nil, map[string]any{tenancyv1alpha1.OwnershipAnnotation: record})),
	}, {
		name:        "as a namespace patcher: put a warm pool's labels on a production namespace",
		fenceDenies: guardDeny, kept: []client.Object{prod}, do: patchAs(patcher, prod, metaPatch(pool, nil)),
	}, {
		name:        "as a namespace patcher: create a namespace carrying a claim's marks",
		fenceDenies: guardDeny, do: createOnce(patcher, marked), absent: []client.Object{marked.DeepCopy()},
	}, {
		name:        "as a namespace patcher: take a claim's marks off its namespace",
		fenceDenies: guardDeny, kept: []client.Object{owned},
		do: patchAs(patcher, owned, metaPatch(map[string]any{tenancyv1alpha1.ClaimUIDLabel: nil, tenancyv1alpha1.ManagedByLabel: nil}, nil)),
	}, {
		name:        "as a namespace patcher: take nsclaim's ownership record off a claim's namespace",
		fenceDenies: guardDeny, kept: []client.Object{owned},
		do: patchAs(patcher, owned, metaPatch(nil, map[string]any{tenancyv1alpha1.OwnershipAnnotation: "u1.replaced"})),
	}, {
		name:        "as a namespaces/status patcher: put a warm pool's labels on a production namespace through namespaces/status",
		fenceDenies: guardDeny, kept: []client.Object{prod}, do: statusPatchAs(prod, metaPatch(pool, nil)),
	}, {
		name:        "as a namespaces/status patcher: put a claim's marks on a production namespace through namespaces/status",
		fenceDenies: guardDeny, kept: []client.Object{prod}, do: statusPatchAs(prod, metaPatch(labels, annotations)),
	}, {
		name:        "as a namespaces/status patcher: take a claim's marks off its namespace through namespaces/status",
		fenceDenies: guardDeny, kept: []client.Object{owned},
		do: statusPatchAs(owned, metaPatch(map[string]any{tenancyv1alpha1.ClaimUIDLabel: nil}, nil)),
	}})
}

// TestOrphanSweepSparesForgedMarks: without the fence a namespace patcher can put the marks of a claim
// that never existed on a production namespace. The orphan sweep used to delete it within a minute;
// now it reports it (a Warning Event OwnershipUnverified) and leaves it alone. With the fence the
// marks cannot be put on at all (above).
func TestOrphanSweepSparesForgedMarks(t *testing.T) {
	if mode == "installed" {
		t.Skip("the label guard refuses the marks (TestWeakIdentitiesCannotMarkNamespaces)")
	}
	g := NewWithT(t)
	patcher := namespacePatcher(t)
	prod := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "production-orphan-" + mode}}
	ensure(t, prod)
	labels, annotations := claimMarks()
	g.Expect(patcher.Patch(ctx, prod.DeepCopy(), metaPatch(labels, annotations))).To(Succeed())
	g.Eventually(func(g Gomega) {
		evs := &corev1.EventList{}
		g.Expect(admin.List(ctx, evs)).To(Succeed())
		found := false
		for _, e := range evs.Items {
			found = found || (e.InvolvedObject.Name == prod.Name && e.Reason == tenancyv1alpha1.OwnershipUnverifiedReason)
		}
		g.Expect(found).To(BeTrue(), "the operator reports the forged marks")
	}).WithTimeout(60 * time.Second).WithPolling(time.Second).Should(Succeed())
	g.Consistently(func(g Gomega) {
		cur := &corev1.Namespace{}
		g.Expect(admin.Get(ctx, client.ObjectKeyFromObject(prod), cur)).To(Succeed())
		g.Expect(cur.DeletionTimestamp).To(BeNil(), "the orphan sweep deletes a namespace it never made")
	}).WithTimeout(5 * time.Second).WithPolling(time.Second).Should(Succeed())
}
