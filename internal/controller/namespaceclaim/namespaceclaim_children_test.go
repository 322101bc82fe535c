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
	"fmt"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
	"github.com/nsclaim/nsclaim-operator/internal/claimpolicy"
)

// countingClient passes every call to the API server and records each write (and each read, for the
// APIReader, whose reads are API requests in the operator too).
type countingClient struct {
	client.Client
	mu    sync.Mutex
	calls []string
}

func (c *countingClient) record(verb string, obj any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if k, ok := obj.(interface{ GetKind() string }); ok && k.GetKind() != "" {
		c.calls = append(c.calls, verb+" "+k.GetKind())
		return
	}
	c.calls = append(c.calls, fmt.Sprintf("%s %T", verb, obj))
}

func (c *countingClient) Calls() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.calls...)
}

func (c *countingClient) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	c.record("create", obj)
	return c.Client.Create(ctx, obj, opts...)
}

func (c *countingClient) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	c.record("update", obj)
	return c.Client.Update(ctx, obj, opts...)
}

func (c *countingClient) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	c.record("patch", obj)
	return c.Client.Patch(ctx, obj, patch, opts...)
}

func (c *countingClient) Apply(ctx context.Context, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
	c.record("apply", obj)
	return c.Client.Apply(ctx, obj, opts...)
}

func (c *countingClient) Delete(ctx context.Context, obj client.Object, opts ...client.DeleteOption) error {
	c.record("delete", obj)
	return c.Client.Delete(ctx, obj, opts...)
}

// countingReader records every read.
type countingReader struct {
	client.Reader
	countingClient
}

func (c *countingReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	c.record("get", obj)
	return c.Reader.Get(ctx, key, obj, opts...)
}

func (c *countingReader) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	c.record("list", list)
	return c.Reader.List(ctx, list, opts...)
}

// childrenPass runs, with a reconciler whose writes and direct reads are counted, the phases of a
// reconcile that lead to and include the children: class, namespace, children.
func childrenPass(t *testing.T, claim *tenancyv1alpha1.NamespaceClaim, edit func(*claimpolicy.Desired)) (*claimScope, []string, []string) {
	t.Helper()
	g := NewWithT(t)
	writes := &countingClient{Client: k8s}
	reads := &countingReader{Reader: k8s}
	r := &NamespaceClaimReconciler{Client: writes, APIReader: reads, Clock: testClock, Ownership: verifier(writes)}
	s := &claimScope{claim: getClaim(g, claim), now: testClock.Now()}
	g.Expect(r.reconcileClass(ctx, s)).To(Succeed())
	g.Expect(s.refusal).NotTo(HaveOccurred())
	g.Expect(r.reconcileNamespace(ctx, s)).To(Succeed())
	g.Expect(s.refusal).NotTo(HaveOccurred())
	if edit != nil {
		edit(&s.desired)
	}
	g.Expect(r.reconcileChildren(ctx, s)).To(Succeed())
	g.Expect(s.childrenReady).To(BeTrue())
	return s, writes.Calls(), reads.Calls()
}

// A reconcile of a Ready claim whose children are as the class says writes nothing and reads nothing
// from the API server directly, even where someone else added a label to a child; a child that differs
// from the desired state costs one write, for that child only.
func TestSteadyStateChildrenCostNoRequest(t *testing.T) {
	requireEnvtest(t)
	t.Parallel()
	g := NewWithT(t)
	class := newClass(t, fullClass())
	claim := newClaim(t, newRequesterNamespace(t, nil), withClass(class.Name))
	got := waitFor(t, claim, tenancyv1alpha1.ReadyCondition, metav1.ConditionTrue, tenancyv1alpha1.ProvisionedReason)
	ns := got.Status.Namespace

	sa := &corev1.ServiceAccount{}
	g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: tenancyv1alpha1.TenantServiceAccountName}, sa)).To(Succeed())
	sa.Labels["team.example/note"] = "kept"
	g.Expect(k8s.Update(ctx, sa)).To(Succeed())

	s, writes, reads := childrenPass(t, claim, nil)
	t.Logf("steady state: %d writes %v, %d direct reads %v", len(writes), writes, len(reads), reads)
	g.Expect(writes).To(BeEmpty())
	g.Expect(reads).To(BeEmpty())
	g.Expect(s.repaired).To(BeZero())

	// The same pass with one child wanted otherwise: exactly one write, and it counts as a repair.
	s, writes, _ = childrenPass(t, claim, func(d *claimpolicy.Desired) {
		d.ResourceQuota.Spec.Hard[corev1.ResourcePods] = resource.MustParse("11")
	})
	t.Logf("one child differs: %d writes %v", len(writes), writes)
	g.Expect(writes).To(HaveLen(1))
	g.Expect(s.repaired).To(Equal(1))
	g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(sa), sa)).To(Succeed())
	g.Expect(sa.Labels).To(HaveKeyWithValue("team.example/note", "kept"))
}

// Repairs change only the fields nsclaim sets: a label someone added to the ServiceAccount stays while
// the field nsclaim sets is restored. A class that drops a quota key removes it from the quota, and a
// class that names another ClusterRole gets a new tenant RoleBinding (roleRef cannot change in place).
func TestRepairsOnlyOwnFieldsAndReplacesBindings(t *testing.T) {
	requireEnvtest(t)
	t.Parallel()
	g := NewWithT(t)
	class := newClass(t, fullClass(), func(c *tenancyv1alpha1.NamespaceClass) {
		c.Spec.ResourceQuota.Hard[corev1.ResourceServices] = resource.MustParse("5")
	})
	claim := newClaim(t, newRequesterNamespace(t, nil), withClass(class.Name))
	got := waitFor(t, claim, tenancyv1alpha1.ReadyCondition, metav1.ConditionTrue, tenancyv1alpha1.ProvisionedReason)
	ns := got.Status.Namespace

	sa := &corev1.ServiceAccount{}
	g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: tenancyv1alpha1.TenantServiceAccountName}, sa)).To(Succeed())
	sa.Labels["team.example/note"] = "kept"
	sa.AutomountServiceAccountToken = ptr.To(true)
	g.Expect(k8s.Update(ctx, sa)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(sa), sa)).To(Succeed())
		g.Expect(sa.AutomountServiceAccountToken).To(HaveValue(BeFalse()))
		g.Expect(sa.Labels).To(HaveKeyWithValue("team.example/note", "kept"))
	}).WithTimeout(30 * time.Second).Should(Succeed())

	tenantRB := &rbacv1.RoleBinding{}
	g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: claimpolicy.TenantRoleBindingName}, tenantRB)).To(Succeed())
	oldUID := tenantRB.UID
	other := testRole()
	other.Name = uniq("other-edit")
	g.Expect(k8s.Create(ctx, other)).To(Succeed())
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), other) })
	g.Eventually(func() error {
		c := &tenancyv1alpha1.NamespaceClass{}
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(class), c); err != nil {
			return err
		}
		c.Spec.ClusterRole = other.Name
		delete(c.Spec.ResourceQuota.Hard, corev1.ResourceServices)
		return k8s.Update(ctx, c)
	}).WithTimeout(10 * time.Second).Should(Succeed())

	g.Eventually(func(g Gomega) {
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(tenantRB), tenantRB)).To(Succeed())
		g.Expect(tenantRB.RoleRef.Name).To(Equal(other.Name))
		g.Expect(tenantRB.UID).NotTo(Equal(oldUID))
		q := &corev1.ResourceQuota{}
		g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: claimpolicy.ResourceQuotaName}, q)).To(Succeed())
		g.Expect(q.Spec.Hard).NotTo(HaveKey(corev1.ResourceServices))
		g.Expect(q.Spec.Hard.Pods().String()).To(Equal("10"))
	}).WithTimeout(30 * time.Second).Should(Succeed())
	waitFor(t, claim, tenancyv1alpha1.ReadyCondition, metav1.ConditionTrue, tenancyv1alpha1.ProvisionedReason)
}

// Provisioning a namespace's children costs one apply each and no read from the API server: the
// namespace was just made, so nothing the cache misses can be older. A child deleted from a namespace
// where nothing else changed costs one read (to tell it from a child the cache lags behind) and one
// apply.
func TestProvisioningAndRestoringRequests(t *testing.T) {
	requireEnvtest(t)
	t.Parallel()
	g := NewWithT(t)
	class := newClass(t, fullClass())
	// A namespace nsclaim's caches and watches ignore, and an owner no claim matches: only this test's
	// reconciler writes here.
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: uniq("first")}}
	g.Expect(k8s.Create(ctx, ns)).To(Succeed())
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), ns) })
	owner := claimpolicy.Owner{Namespace: "nowhere", Name: "nobody", UID: uniq("uid")}
	pass := func(repaired int) (*claimScope, []string, []string) {
		s := &claimScope{claim: &tenancyv1alpha1.NamespaceClaim{}, class: class, owner: owner, namespace: ns,
			desired: claimpolicy.Build(ns.Name, owner, class, nil), repaired: repaired}
		writes := &countingClient{Client: k8s}
		reads := &countingReader{Reader: k8s}
		r := &NamespaceClaimReconciler{Client: writes, APIReader: reads, Clock: testClock, Ownership: verifier(writes)}
		g.Expect(r.reconcileChildren(ctx, s)).To(Succeed())
		return s, writes.Calls(), reads.Calls()
	}

	// The namespace phase counted the namespace it created.
	s, writes, reads := pass(1)
	t.Logf("first provisioning: %d writes %v, %d direct reads %v", len(writes), writes, len(reads), reads)
	children := s.repaired - 1
	g.Expect(children).To(Equal(9)) // 3 RoleBindings, ServiceAccount, quota, limits, policy, watcher pair
	g.Expect(writes).To(HaveLen(children))
	g.Expect(reads).To(BeEmpty())

	_, writes, reads = pass(0)
	g.Expect(writes).To(BeEmpty())
	g.Expect(reads).To(BeEmpty())

	g.Expect(k8s.Delete(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: claimpolicy.TenantRoleBindingName}})).To(Succeed())
	s, writes, reads = pass(0)
	t.Logf("one child deleted: %d writes %v, %d direct reads %v", len(writes), writes, len(reads), reads)
	g.Expect(s.repaired).To(Equal(1))
	g.Expect(writes).To(HaveLen(1))
	g.Expect(reads).To(HaveLen(1))
}
