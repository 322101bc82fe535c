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
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
	"github.com/nsclaim/nsclaim-operator/internal/childapply"
	"github.com/nsclaim/nsclaim-operator/internal/claimpolicy"
	"github.com/nsclaim/nsclaim-operator/internal/kube"
)

// staleDigest is a digest no apply configuration of today has: the children of an earlier release.
const staleDigest = "000000000000000000000000"

// An upgrade from 0.3.0, whose children carry the claim-name annotation and a digest taken another way,
// writes each child once: the apply, which also removes the annotation 0.3.0 applied. Every write of an
// RBAC object by the operator costs kube-apiserver's escalation check, so a patch before the apply
// would double the upgrade's cost. Only an annotation written by another field manager (0.2.0's
// update), which the apply leaves, costs a patch more; on a child that is otherwise up to date the
// patch is the only write. Children that lack nothing cost no write at all, and RBAC children that lack
// only their digest neither (rbacUpToDate).
func TestUpgradeWritesEachChildOnce(t *testing.T) {
	requireEnvtest(t)
	t.Parallel()
	g := NewWithT(t)
	class := newClass(t, fullClass())
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: uniq("upgrade")}}
	g.Expect(k8s.Create(ctx, ns)).To(Succeed())
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), ns) })
	owner := claimpolicy.Owner{Namespace: "nowhere", Name: "nobody", UID: uniq("uid")}
	pass := func(repaired int) (*claimScope, []string) {
		s := &claimScope{claim: &tenancyv1alpha1.NamespaceClaim{}, class: class, owner: owner, namespace: ns,
			desired: claimpolicy.Build(ns.Name, owner, class, nil), repaired: repaired}
		writes := &countingClient{Client: k8s}
		r := &NamespaceClaimReconciler{Client: writes, APIReader: k8s, Clock: testClock, Ownership: verifier(writes)}
		g.Expect(r.reconcileChildren(ctx, s)).To(Succeed())
		return s, writes.Calls()
	}
	s, writes := pass(1)
	g.Expect(writes).To(HaveLen(9))
	children := make([]client.Object, 0, 6+len(s.desired.RoleBindings))
	children = append(children, s.desired.ServiceAccount, s.desired.ResourceQuota, s.desired.LimitRange, s.desired.NetworkPolicy,
		s.desired.NamespaceWatcher, s.desired.NamespaceWatcherBinding)
	for _, rb := range s.desired.RoleBindings {
		children = append(children, rb)
	}
	id := childapply.Identity(ns.Name, string(ns.UID), owner.UID, owner.Namespace)

	// Every child as 0.3.0 applied it: nsclaim's field owner, the claim's name, another digest.
	for _, c := range children {
		gvk, err := apiutil.GVKForObject(c, k8s.Scheme())
		g.Expect(err).NotTo(HaveOccurred())
		old, err := childapply.ApplyConfiguration(c, gvk, id)
		g.Expect(err).NotTo(HaveOccurred())
		ann := old["metadata"].(map[string]any)["annotations"].(map[string]any)
		ann[tenancyv1alpha1.ClaimNameAnnotation], ann[claimpolicy.AppliedAnnotation] = owner.Name, staleDigest
		g.Expect(k8s.Apply(ctx, client.ApplyConfigurationFromUnstructured(&unstructured.Unstructured{Object: old}),
			client.FieldOwner(kube.FieldOwner), client.ForceOwnership)).To(Succeed())
	}
	_, writes = pass(0)
	t.Logf("children of 0.3.0: %d writes %v", len(writes), writes)
	g.Expect(writes).To(HaveLen(len(children)))
	for _, w := range writes {
		g.Expect(w).To(HavePrefix("apply "))
	}
	for _, c := range children {
		now := c.DeepCopyObject().(client.Object)
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(c), now)).To(Succeed())
		g.Expect(now.GetAnnotations()).NotTo(HaveKey(tenancyv1alpha1.ClaimNameAnnotation), "%T %s", c, c.GetName())
		g.Expect(now.GetAnnotations()[claimpolicy.AppliedAnnotation]).NotTo(Equal(staleDigest))
	}
	_, writes = pass(0)
	g.Expect(writes).To(BeEmpty())

	// The claim-name annotation written with an update by another field manager, as 0.2.0 did: with a
	// stale digest, the apply and then a patch; on a child otherwise up to date, the patch alone.
	tenantRB := &rbacv1.RoleBinding{}
	g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns.Name, Name: claimpolicy.TenantRoleBindingName}, tenantRB)).To(Succeed())
	tenantRB.Annotations[tenancyv1alpha1.ClaimNameAnnotation] = owner.Name
	tenantRB.Annotations[claimpolicy.AppliedAnnotation] = staleDigest
	g.Expect(k8s.Update(ctx, tenantRB, client.FieldOwner("nsclaim-0.2.0"))).To(Succeed())
	_, writes = pass(0)
	g.Expect(writes).To(Equal([]string{"apply RoleBinding", "patch *v1.RoleBinding"}))
	g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(tenantRB), tenantRB)).To(Succeed())
	g.Expect(tenantRB.Annotations).NotTo(HaveKey(tenancyv1alpha1.ClaimNameAnnotation))

	g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(tenantRB), tenantRB)).To(Succeed())
	tenantRB.Annotations[tenancyv1alpha1.ClaimNameAnnotation] = owner.Name
	g.Expect(k8s.Update(ctx, tenantRB, client.FieldOwner("nsclaim-0.2.0"))).To(Succeed())
	_, writes = pass(0)
	g.Expect(strings.Join(writes, ", ")).To(Equal("patch *v1.RoleBinding"))
	g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(tenantRB), tenantRB)).To(Succeed())
	g.Expect(tenantRB.Annotations).NotTo(HaveKey(tenancyv1alpha1.ClaimNameAnnotation))

	// Children another client made with nsclaim's labels but no digest (as the bench's fill does): the
	// RBAC ones grant what they should and are not written; the others are applied once.
	dropDigest := client.RawPatch(types.JSONPatchType, []byte(`[{"op":"remove","path":"/metadata/annotations/tenancy.nsclaim.dev~1applied"}]`))
	for _, c := range children {
		g.Expect(k8s.Patch(ctx, c.DeepCopyObject().(client.Object), dropDigest)).To(Succeed())
	}
	_, writes = pass(0)
	g.Expect(writes).To(ConsistOf("apply ServiceAccount", "apply ResourceQuota", "apply LimitRange", "apply NetworkPolicy"))
	_, writes = pass(0)
	g.Expect(writes).To(BeEmpty())
}
