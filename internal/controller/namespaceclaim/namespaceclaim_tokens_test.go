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
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
	"github.com/nsclaim/nsclaim-operator/internal/claimpolicy"
	"github.com/nsclaim/nsclaim-operator/internal/credentials"
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

// The crash window of a first token: the Secret was written but the status that records it was not
// (here: the status's record is wiped). The next reconcile creates the Secret without a probe, finds
// it there, and keeps this claim's own token instead of handing out a second one; the token's
// credential ID is recorded again from the Secret.
func TestSecretWrittenBeforeItsStatusKeepsItsToken(t *testing.T) {
	requireEnvtest(t)
	// Not parallel: it restarts the manager, as a crash does.
	g := NewWithT(t)
	class := newClass(t)
	claim := newClaim(t, newRequesterNamespace(t, nil), withClass(class.Name))
	got := waitFor(t, claim, tenancyv1alpha1.ReadyCondition, metav1.ConditionTrue, tenancyv1alpha1.ProvisionedReason)
	key, sec, id := crashBeforeTokenStatus(t, claim, got)

	g.Eventually(func(g Gomega) {
		c := getClaim(g, claim)
		g.Expect(c.Status.CredentialsSecretName).To(Equal(key.Name))
		g.Expect(c.Status.IssuedTokens).To(HaveLen(1))
		g.Expect(c.Status.IssuedTokens[0].CredentialID).To(Equal(id), "the token already in the Secret is recorded, none issued")
	}).WithTimeout(30 * time.Second).Should(Succeed())
	expectTokenKept(g, claim, sec)
}

// The crash window of a first token issued only once: the Secret was written but the status that
// records it was not. The token expires with the claim, in 15 minutes, inside the 20 minutes before
// expiry in which any other token would be renewed; but a token issued only once is never renewed, so
// the next reconcile keeps it and records it, and issues none.
func TestSecretWrittenBeforeItsStatusKeepsItsOnlyOnceToken(t *testing.T) {
	requireEnvtest(t)
	// Not parallel: it restarts the manager, as a crash does.
	g := NewWithT(t)
	class := newClass(t)
	claim := newClaim(t, newRequesterNamespace(t, nil), withClass(class.Name), withTTL(15*time.Minute), func(c *tenancyv1alpha1.NamespaceClaim) {
		c.Annotations = map[string]string{tenancyv1alpha1.TokenPolicyAnnotation: tenancyv1alpha1.TokenPolicyOnlyOnce}
	})
	got := waitFor(t, claim, tenancyv1alpha1.ReadyCondition, metav1.ConditionTrue, tenancyv1alpha1.ProvisionedReason)
	g.Expect(got.Status.TokenExpiresAt.Sub(testClock.Now())).To(BeNumerically("<", claimpolicy.DefaultRenewBefore),
		"the token is inside the window in which a token that is not only-once would be renewed")
	key, sec, id := crashBeforeTokenStatus(t, claim, got)

	g.Eventually(func(g Gomega) {
		c := getClaim(g, claim)
		g.Expect(c.Status.CredentialsSecretName).To(Equal(key.Name))
		g.Expect(c.Status.TokenExpiresAt).NotTo(BeNil())
		g.Expect(c.Status.TokenExpiresAt.Time).To(BeTemporally("==", got.Status.TokenExpiresAt.Time), "the kept token's expiry is recorded")
		g.Expect(c.Status.TokenServiceAccountUID).To(Equal(got.Status.TokenServiceAccountUID))
		g.Expect(c.Status.IssuedTokens).To(HaveLen(1))
		g.Expect(c.Status.IssuedTokens[0].CredentialID).To(Equal(id), "the token already in the Secret is recorded, none issued")
	}).WithTimeout(30 * time.Second).Should(Succeed())
	expectTokenKept(g, claim, sec)
}

// crashBeforeTokenStatus reads the credentials Secret of claim (got is the claim Ready), then plays the
// crash window of its token: the operator stops, the status that records the token is lost, and a new
// process starts with no memory of it. It returns the Secret's key, the Secret as it was, and the
// credential ID of its token.
func crashBeforeTokenStatus(t *testing.T, claim, got *tenancyv1alpha1.NamespaceClaim) (client.ObjectKey, *corev1.Secret, string) {
	t.Helper()
	g := NewWithT(t)
	key := client.ObjectKey{Namespace: claim.Namespace, Name: got.Status.CredentialsSecretName}
	sec := &corev1.Secret{}
	g.Expect(k8s.Get(ctx, key, sec)).To(Succeed())
	id, err := credentials.CredentialID(string(sec.Data[credentials.TokenKey]))
	g.Expect(err).NotTo(HaveOccurred())

	stopManager()
	g.Eventually(func(g Gomega) {
		c := getClaim(g, claim)
		c.Status.CredentialsSecretName = ""
		c.Status.TokenExpiresAt = nil
		c.Status.TokenServiceAccountUID = ""
		c.Status.IssuedTokens = nil
		g.Expect(k8s.Status().Update(ctx, c)).To(Succeed())
	}).WithTimeout(10 * time.Second).Should(Succeed())
	startManager()
	return key, sec, id
}

// expectTokenKept checks that the Secret sec still holds its token and that claim is Ready.
func expectTokenKept(g Gomega, claim *tenancyv1alpha1.NamespaceClaim, sec *corev1.Secret) {
	after := &corev1.Secret{}
	g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(sec), after)).To(Succeed())
	g.Expect(after.Data[credentials.TokenKey]).To(Equal(sec.Data[credentials.TokenKey]), "the Secret keeps its token")
	g.Expect(meta.IsStatusConditionTrue(getClaim(g, claim).Status.Conditions, tenancyv1alpha1.ReadyCondition)).To(BeTrue())
}
