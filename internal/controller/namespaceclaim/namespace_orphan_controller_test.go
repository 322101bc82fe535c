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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
)

// A claim whose finalizer was removed and which was then deleted leaves its namespace behind; the
// operator deletes it.
func TestOrphanedNamespaceIsDeleted(t *testing.T) {
	requireEnvtest(t)
	t.Parallel()
	g := NewWithT(t)
	class := newClass(t, withPrefix("orphan-"))
	claim := newClaim(t, newRequesterNamespace(t, nil), withClass(class.Name))
	got := waitFor(t, claim, tenancyv1alpha1.ReadyCondition, metav1.ConditionTrue, tenancyv1alpha1.ProvisionedReason)
	nsName := got.Status.Namespace
	g.Expect(k8s.Patch(ctx, got, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`)))).To(Succeed())
	g.Expect(k8s.Delete(ctx, got)).To(Succeed())
	g.Eventually(func(g Gomega) {
		expectNamespaceDeleting(g, nsName)
	}).WithTimeout(20 * time.Second).Should(Succeed())
}

// A namespace that carries the marks of a claim that still exists is never deleted by the sweep, and
// neither is one without the marks. The test first proves that the sweep runs and has reached the
// events after the touch: another claim's namespace, orphaned after the live one was touched, is
// deleted; without the orphan reconciler that never happens and the test fails.
func TestLiveClaimsNamespaceIsNotAnOrphan(t *testing.T) {
	requireEnvtest(t)
	t.Parallel()
	g := NewWithT(t)
	class := newClass(t, withPrefix("alive-"))
	requesters := newRequesterNamespace(t, nil)
	claim := newClaim(t, requesters, withClass(class.Name))
	orphaned := newClaim(t, requesters, withClass(class.Name))
	got := waitFor(t, claim, tenancyv1alpha1.ReadyCondition, metav1.ConditionTrue, tenancyv1alpha1.ProvisionedReason)
	gone := waitFor(t, orphaned, tenancyv1alpha1.ReadyCondition, metav1.ConditionTrue, tenancyv1alpha1.ProvisionedReason)
	// Touch the namespace so the sweep looks at it again.
	ns := &corev1.Namespace{}
	g.Expect(k8s.Get(ctx, client.ObjectKey{Name: got.Status.Namespace}, ns)).To(Succeed())
	g.Expect(k8s.Patch(ctx, ns, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"annotations":{"touched":"yes"}}}`)))).To(Succeed())
	// Then orphan the other claim's namespace: the sweep, which must be running, deletes it.
	g.Expect(k8s.Patch(ctx, gone, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`)))).To(Succeed())
	g.Expect(k8s.Delete(ctx, gone)).To(Succeed())
	g.Eventually(func(g Gomega) {
		expectNamespaceDeleting(g, gone.Status.Namespace)
	}).WithTimeout(20*time.Second).Should(Succeed(), "the orphan reconciler did not delete an orphaned namespace: is it running?")
	g.Consistently(func(g Gomega) {
		cur := &corev1.Namespace{}
		g.Expect(k8s.Get(ctx, client.ObjectKey{Name: got.Status.Namespace}, cur)).To(Succeed())
		g.Expect(cur.DeletionTimestamp).To(BeNil())
	}).WithTimeout(3 * time.Second).Should(Succeed())
}
