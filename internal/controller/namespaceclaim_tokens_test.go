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

package controller

import (
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
)

// An only-once claim whose ServiceAccount is recreated holds a dead token, and gets no other: it must
// not stay Ready.
func TestOnlyOnceClaimIsNotReadyAfterItsServiceAccountIsRecreated(t *testing.T) {
	requireEnvtest(t)
	t.Parallel()
	g := NewWithT(t)
	class := newClass(t, withPrefix("once-sa-"))
	claim := newClaim(t, newRequesterNamespace(t, nil), withClass(class.Name), func(c *tenancyv1alpha1.NamespaceClaim) {
		c.Annotations = map[string]string{tenancyv1alpha1.TokenPolicyAnnotation: tenancyv1alpha1.TokenPolicyOnlyOnce}
	})
	got := waitFor(t, claim, tenancyv1alpha1.ReadyCondition, metav1.ConditionTrue, tenancyv1alpha1.ProvisionedReason)
	sa := &corev1.ServiceAccount{}
	g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: got.Status.Namespace, Name: tenancyv1alpha1.TenantServiceAccountName}, sa)).To(Succeed())
	g.Expect(k8s.Delete(ctx, sa)).To(Succeed())
	after := waitFor(t, claim, tenancyv1alpha1.ReadyCondition, metav1.ConditionFalse, tenancyv1alpha1.TokenRevokedReason)
	g.Expect(after.Status.TokenServiceAccountUID).To(Equal(string(sa.UID)), "no new token was issued")
}
