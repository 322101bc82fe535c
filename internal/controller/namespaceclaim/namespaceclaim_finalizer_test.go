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
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
)

// shippedAddFinalizer reads config/fence's finalizer policy and its binding as shipped.
func shippedAddFinalizer(g Gomega) (*admissionregistrationv1.MutatingAdmissionPolicy, *admissionregistrationv1.MutatingAdmissionPolicyBinding) {
	dir := filepath.Join("..", "..", "..", "config", "fence", "base")
	p := &admissionregistrationv1.MutatingAdmissionPolicy{}
	b := &admissionregistrationv1.MutatingAdmissionPolicyBinding{}
	for file, obj := range map[string]any{"add-finalizer.yaml": p, "add-finalizer-binding.yaml": b} {
		raw, err := os.ReadFile(filepath.Join(dir, file))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(yaml.UnmarshalStrict(raw, obj)).To(Succeed(), file)
	}
	return p, b
}

// With config/fence's finalizer policy in force, a claim carries the claim finalizer from its CREATE:
// added once, next to whatever finalizers the request carried (the policy adds that one string and
// nothing else), and not twice when the request already had it. The operator then leaves it as it is.
// Without the policy (every other test of this suite) the operator adds it itself.
func TestFinalizerIsAddedAtCreateByTheFencePolicy(t *testing.T) {
	requireEnvtest(t)
	// Not parallel: the policy applies to every claim of the cluster while it is installed.
	g := NewWithT(t)
	ctx := context.Background()
	policy, binding := shippedAddFinalizer(g)
	g.Expect(k8s.Create(ctx, policy)).To(Succeed())
	g.Expect(k8s.Create(ctx, binding)).To(Succeed())
	t.Cleanup(func() {
		g.Expect(client.IgnoreNotFound(k8s.Delete(ctx, binding))).To(Succeed())
		g.Expect(client.IgnoreNotFound(k8s.Delete(ctx, policy))).To(Succeed())
	})
	g.Eventually(func(g Gomega) {
		c := &tenancyv1alpha1.NamespaceClaim{ObjectMeta: metav1.ObjectMeta{Name: "probe", Namespace: metav1.NamespaceDefault}}
		g.Expect(k8s.Create(ctx, c, client.DryRunAll)).To(Succeed())
		g.Expect(c.Finalizers).To(Equal([]string{tenancyv1alpha1.ClaimFinalizer}))
	}).WithTimeout(20 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())

	class := newClass(t)
	ns := newRequesterNamespace(t, nil)
	const other = "example.com/keep"
	cases := []struct {
		name       string
		finalizers []string
		want       []string
	}{
		{"none", nil, []string{tenancyv1alpha1.ClaimFinalizer}},
		{"another one", []string{other}, []string{other, tenancyv1alpha1.ClaimFinalizer}},
		{"already there", []string{tenancyv1alpha1.ClaimFinalizer}, []string{tenancyv1alpha1.ClaimFinalizer}},
	}
	for _, tc := range cases {
		c := newClaim(t, ns, withClass(class.Name), func(c *tenancyv1alpha1.NamespaceClaim) { c.Finalizers = tc.finalizers })
		g.Expect(c.Finalizers).To(Equal(tc.want), "%s: as created", tc.name)
		got := waitFor(t, c, tenancyv1alpha1.ReadyCondition, metav1.ConditionTrue, tenancyv1alpha1.ProvisionedReason)
		g.Expect(got.Finalizers).To(Equal(tc.want), "%s: after the operator provisioned it", tc.name)
		if tc.finalizers != nil && tc.finalizers[0] == other {
			// The other finalizer is the test's own: take it off so the claim can go.
			g.Eventually(func(g Gomega) {
				cur := getClaim(g, c)
				cur.Finalizers = []string{tenancyv1alpha1.ClaimFinalizer}
				g.Expect(k8s.Update(ctx, cur)).To(Succeed())
			}).WithTimeout(10 * time.Second).Should(Succeed())
		}
	}
}
