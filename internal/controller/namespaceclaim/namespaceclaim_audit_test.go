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
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
	"github.com/nsclaim/nsclaim-operator/internal/credentials"
)

// Every token handed out is recorded by its credential ID (the jti the API server's audit log carries)
// in the claim's status and in an Event that never holds the token.
func TestIssuedTokensAreRecordedByCredentialID(t *testing.T) {
	requireEnvtest(t)
	t.Parallel()
	g := NewWithT(t)
	class := newClass(t)
	claim := newClaim(t, newRequesterNamespace(t, nil), withClass(class.Name))
	got := waitFor(t, claim, tenancyv1alpha1.ReadyCondition, metav1.ConditionTrue, tenancyv1alpha1.ProvisionedReason)
	sec := &corev1.Secret{}
	g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: claim.Namespace, Name: got.Status.CredentialsSecretName}, sec)).To(Succeed())
	id, err := credentials.CredentialID(string(sec.Data[credentials.TokenKey]))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got.Status.IssuedTokens).To(HaveLen(1))
	g.Expect(got.Status.IssuedTokens[0].CredentialID).To(Equal(id), "the ID of the token in the Secret")
	g.Expect(got.Status.IssuedTokens[0].ExpiresAt.Time).To(BeTemporally("~", got.Status.TokenExpiresAt.Time, time.Second))
	// The first token is told of by the Provisioned Event, with no TokenIssued Event of its own.
	tokenEvents := func(g Gomega) map[string][]string {
		evs := &corev1.EventList{}
		g.Expect(k8s.List(ctx, evs, client.InNamespace(claim.Namespace))).To(Succeed())
		notes := map[string][]string{}
		for _, e := range evs.Items {
			if e.InvolvedObject.UID == claim.UID && (e.Reason == "TokenIssued" || e.Reason == "Provisioned") {
				g.Expect(e.Message).NotTo(ContainSubstring(string(sec.Data[credentials.TokenKey])))
				notes[e.Reason] = append(notes[e.Reason], e.Message)
			}
		}
		return notes
	}
	g.Eventually(func(g Gomega) {
		notes := tokenEvents(g)
		g.Expect(notes["Provisioned"]).To(ConsistOf(ContainSubstring("credential ID " + id)))
		g.Expect(notes["TokenIssued"]).To(BeEmpty())
	}).WithTimeout(10 * time.Second).Should(Succeed())

	// A token issued again (the Secret deleted and the ServiceAccount recreated force a new one) is
	// recorded first, and the old one stays listed.
	sa := &corev1.ServiceAccount{}
	g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: got.Status.Namespace, Name: tenancyv1alpha1.TenantServiceAccountName}, sa)).To(Succeed())
	g.Expect(k8s.Delete(ctx, sa)).To(Succeed())
	g.Eventually(func(g Gomega) {
		c := getClaim(g, claim)
		g.Expect(c.Status.IssuedTokens).To(HaveLen(2))
		g.Expect(c.Status.IssuedTokens[1].CredentialID).To(Equal(id))
		s := &corev1.Secret{}
		g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: claim.Namespace, Name: got.Status.CredentialsSecretName}, s)).To(Succeed())
		newID, err := credentials.CredentialID(string(s.Data[credentials.TokenKey]))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(c.Status.IssuedTokens[0].CredentialID).To(Equal(newID))
		g.Expect(newID).NotTo(Equal(id))
		// A token after the first has its own TokenIssued Event.
		g.Expect(tokenEvents(g)["TokenIssued"]).To(ContainElement(ContainSubstring("credential ID " + newID)))
	}).WithTimeout(30 * time.Second).Should(Succeed())
}
