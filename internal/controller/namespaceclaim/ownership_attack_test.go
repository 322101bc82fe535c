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
	"encoding/json"
	"strconv"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
	"github.com/nsclaim/nsclaim-operator/internal/claimpolicy"
	"github.com/nsclaim/nsclaim-operator/internal/testenv"
)

// The attacks of issue 39 on the operator's idea of "mine", made as the weak identity real clusters
// have: a namespace patcher (a namespace-labelling or GitOps controller, a self-service namespace
// creator) that may create, list and patch Namespaces and read no Secret. envtest runs no admission
// fence, so nothing stops the patcher from writing nsclaim's marks: what is proven here is that the
// operator itself never takes marks as ownership (its record, internal/ownership, decides). The fence's
// label guard, which refuses the marks to the patcher in the first place, is attacked in test/security.

// namespacePatcher returns a client that acts as a user who may get, list, create and patch Namespaces,
// and nothing else.
func namespacePatcher(t *testing.T) client.Client {
	t.Helper()
	g := NewWithT(t)
	user := uniq("namespace-patcher")
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: user}, Rules: []rbacv1.PolicyRule{{
		APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: []string{"get", "list", "watch", "create", "patch"}}}}
	g.Expect(k8s.Create(ctx, role)).To(Succeed())
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: user},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: user},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}}}
	g.Expect(k8s.Create(ctx, binding)).To(Succeed())
	t.Cleanup(func() { _ = k8s.Delete(ctx, binding); _ = k8s.Delete(ctx, role) })
	g.Expect(testenv.WaitAllowed(ctx, k8s, user, authorizationv1.ResourceAttributes{Verb: "patch", Resource: "namespaces"}, 10*time.Second)).To(Succeed())
	patcher := impersonating(t, user, nil, nil)
	// It reads no Secret.
	g.Expect(apierrors.IsForbidden(patcher.Get(ctx, client.ObjectKey{Namespace: "default", Name: "any"}, &corev1.Secret{}))).To(BeTrue())
	return patcher
}

// markAs patches, as c, the marks of owner onto namespace name: its ownership labels, and the
// claim-name annotation.
func markAs(g Gomega, c client.Client, name string, labels map[string]string, annotations map[string]string) {
	body, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": labels, "annotations": annotations}})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(c.Patch(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, client.RawPatch(types.MergePatchType, body))).To(Succeed())
}

// productionNamespace makes a namespace nsclaim never made, holding a Secret.
func productionNamespace(t *testing.T) string {
	t.Helper()
	g := NewWithT(t)
	name := uniq("production")
	g.Expect(k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})).To(Succeed())
	g.Expect(k8s.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "db-password", Namespace: name},
		StringData: map[string]string{"password": "hunter2"}})).To(Succeed())
	t.Cleanup(func() { _ = k8s.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}) })
	return name
}

// expectUnverifiedReported waits for the Warning Event that reports namespace name as marked without
// nsclaim's record.
func expectUnverifiedReported(t *testing.T, name string) {
	t.Helper()
	NewWithT(t).Eventually(func(g Gomega) {
		evs := &corev1.EventList{}
		g.Expect(k8s.List(ctx, evs)).To(Succeed())
		found := false
		for _, e := range evs.Items {
			found = found || (e.InvolvedObject.Kind == "Namespace" && e.InvolvedObject.Name == name &&
				e.Reason == tenancyv1alpha1.OwnershipUnverifiedReason && e.Type == corev1.EventTypeWarning)
		}
		g.Expect(found).To(BeTrue(), "no Warning Event %s on namespace %s", tenancyv1alpha1.OwnershipUnverifiedReason, name)
	}).WithTimeout(20 * time.Second).Should(Succeed())
}

// expectUntouched asserts that namespace name exists, is not being deleted, and holds no RoleBinding.
func expectUntouched(g Gomega, name string) {
	ns := &corev1.Namespace{}
	g.Expect(k8s.Get(ctx, client.ObjectKey{Name: name}, ns)).To(Succeed())
	g.Expect(ns.DeletionTimestamp).To(BeNil(), "namespace %s is being deleted", name)
	rbs := &rbacv1.RoleBindingList{}
	g.Expect(k8s.List(ctx, rbs, client.InNamespace(name))).To(Succeed())
	g.Expect(rbs.Items).To(BeEmpty(), "nsclaim bound someone in namespace %s", name)
}

// Finding 1: a namespace patcher puts a refused claim's marks on a production namespace; once the
// claim is admitted it must not be handed that namespace (no RoleBinding there, its token reads
// nothing there), and the claim's release must not delete it.
func TestForgedClaimMarksNeverHandOverAForeignNamespace(t *testing.T) {
	requireEnvtest(t)
	t.Parallel()
	g := NewWithT(t)
	patcher := namespacePatcher(t)
	class := newClass(t, withPrefix("forged-"), withPool(1), withSelector(map[string]string{"forged-test": "admitted"}))
	waitPoolReady(t, class, 1)
	req := newRequesterNamespace(t, nil)
	claim := newClaim(t, req, withClass(class.Name))
	waitFor(t, claim, tenancyv1alpha1.ReadyCondition, metav1.ConditionFalse, tenancyv1alpha1.ClassNotAllowedReason)
	claim = getClaim(g, claim)

	prod := productionNamespace(t)
	owner := claimpolicy.OwnerOf(claim)
	markAs(g, patcher, prod, claimpolicy.OwnershipLabels(owner), claimpolicy.OwnershipAnnotations(owner))

	requester := &corev1.Namespace{}
	g.Expect(k8s.Get(ctx, client.ObjectKey{Name: req}, requester)).To(Succeed())
	requester.Labels = map[string]string{"forged-test": "admitted"}
	g.Expect(k8s.Update(ctx, requester)).To(Succeed())
	touch(t, claim)
	got := waitFor(t, claim, tenancyv1alpha1.ReadyCondition, metav1.ConditionTrue, tenancyv1alpha1.ProvisionedReason)
	g.Expect(got.Status.Namespace).NotTo(Equal(prod), "the claim was handed the production namespace")
	expectUnverifiedReported(t, prod)
	expectUntouched(g, prod)

	// Released, the claim's own namespace goes; the production namespace stays.
	g.Expect(k8s.Delete(ctx, got)).To(Succeed())
	g.Eventually(func() bool {
		return isNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(got), &tenancyv1alpha1.NamespaceClaim{}))
	}).
		WithTimeout(60 * time.Second).Should(BeTrue())
	expectUntouched(g, prod)
}

// Finding 1, second part: a foreign namespace carrying the marks of a claim that never existed is not
// deleted by the orphan sweep; it is reported.
func TestOrphanSweepSparesForgedMarks(t *testing.T) {
	requireEnvtest(t)
	t.Parallel()
	g := NewWithT(t)
	patcher := namespacePatcher(t)
	prod := productionNamespace(t)
	ghost := claimpolicy.Owner{Namespace: "team-ghost", Name: "never-existed", UID: "00000000-0000-0000-0000-000000000039"}
	markAs(g, patcher, prod, claimpolicy.OwnershipLabels(ghost), claimpolicy.OwnershipAnnotations(ghost))
	// Only the managed-by label (what an admission fence trusts) is reported too.
	managedOnly := productionNamespace(t)
	markAs(g, patcher, managedOnly, map[string]string{tenancyv1alpha1.ManagedByLabel: tenancyv1alpha1.ManagedByValue}, nil)
	expectUnverifiedReported(t, prod)
	expectUnverifiedReported(t, managedOnly)
	g.Consistently(func(g Gomega) { expectUntouched(g, prod); expectUntouched(g, managedOnly) }).WithTimeout(3 * time.Second).Should(Succeed())
}

// Finding 2 without the label guard: a namespace made to look like one of a class's warm pool is
// neither counted, handed out nor deleted (the old pool reconciler deleted it as one too many).
func TestForgedPooledNamespaceIsNeverHandedOutNorDeleted(t *testing.T) {
	requireEnvtest(t)
	t.Parallel()
	g := NewWithT(t)
	patcher := namespacePatcher(t)
	class := newClass(t, withPrefix("fakepool-"), withPool(1))
	pooled := waitPoolReady(t, class, 1)
	prod := productionNamespace(t)
	markAs(g, patcher, prod, map[string]string{
		tenancyv1alpha1.ManagedByLabel:      tenancyv1alpha1.ManagedByValue,
		tenancyv1alpha1.PoolLabel:           claimpolicy.Label(class.Name),
		tenancyv1alpha1.PoolClassUIDLabel:   string(class.UID),
		tenancyv1alpha1.PoolGenerationLabel: strconv.FormatInt(class.Generation, 10),
	}, nil)
	expectUnverifiedReported(t, prod)
	g.Consistently(func(g Gomega) { expectUntouched(g, prod) }).WithTimeout(3 * time.Second).Should(Succeed())
	// The pool still counts its one real namespace, which a claim gets.
	claim := newClaim(t, newRequesterNamespace(t, nil), withClass(class.Name))
	got := waitFor(t, claim, tenancyv1alpha1.ReadyCondition, metav1.ConditionTrue, tenancyv1alpha1.ProvisionedReason)
	g.Expect(got.Status.Namespace).To(Equal(pooled[0].Name))
	expectUntouched(g, prod)
}
