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

// A claim's credentials are handed out in a Secret next to the claim, labelled with the claim's UID;
// the plugin, the Action, the component and ConfigMap-protocol pipelines trust a Secret by that label.
// The identity that would abuse it is a Secret writer of the requester namespace that cannot read
// Secrets (an external-secrets, sealed-secrets or replicator controller, a CD tool's token: create,
// update, patch and delete Secrets, no get): it cannot steal the token, but it could put a kubeconfig
// of its own in the claim's Secret (a server it runs, which then receives the pipeline's manifests and
// whatever they hold), or plant a Secret that looks like the operator's. The label guard refuses both.

// secretWriter makes ServiceAccount secret-writer in namespace ns, bound there to a Role that may
// create, update, patch and delete Secrets and nothing else, and returns a client with its token.
func secretWriter(t *testing.T, ns string) client.Client {
	t.Helper()
	g := NewWithT(t)
	name := "secret-writer"
	ensure(t, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}})
	ensure(t, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Rules: []rbacv1.PolicyRule{{
		APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"create", "update", "patch", "delete"}}}})
	ensure(t, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: ns}}})
	token, err := mintTokenValue(admin, ns, name)
	g.Expect(err).NotTo(HaveOccurred())
	c, err := tokenClient(token)
	g.Expect(err).NotTo(HaveOccurred())
	// RBAC settles within moments: a dry-run create of a plain Secret is allowed.
	probe := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "probe", Namespace: ns}, Type: corev1.SecretTypeOpaque}
	g.Eventually(func() error { return c.Create(ctx, probe.DeepCopy(), client.DryRunAll) }).WithTimeout(10 * time.Second).Should(Succeed())
	return c
}

// credentialsSecret returns the credentials Secret of a claim: with a fence, one the operator wrote for
// a provisioned claim; without it (the operator then provisions nothing) a stand-in the admin labels.
func credentialsSecret(t *testing.T, requester string) *corev1.Secret {
	t.Helper()
	g := NewWithT(t)
	if mode == "absent" {
		ensure(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: requester}})
		sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "ci-stand-in", Namespace: requester, Labels: map[string]string{
			tenancyv1alpha1.ManagedByLabel: tenancyv1alpha1.ManagedByValue, tenancyv1alpha1.ClaimUIDLabel: "stand-in"}},
			Type: corev1.SecretTypeOpaque, Data: map[string][]byte{"kubeconfig": []byte("stand-in")}}
		ensure(t, sec)
		return sec
	}
	claim := provision(t, requester)
	sec := &corev1.Secret{}
	g.Expect(admin.Get(ctx, client.ObjectKey{Namespace: claim.Namespace, Name: claim.Status.CredentialsSecretName}, sec)).To(Succeed())
	g.Expect(sec.Labels).To(HaveKeyWithValue(tenancyv1alpha1.ClaimUIDLabel, string(claim.UID)))
	return sec
}

// TestSecretWriterCannotSwapAClaimsCredentials: as a Secret writer of the requester namespace, replace
// the kubeconfig in a claim's credentials Secret, mark it immutable, move it to another claim, and plant
// a Secret labelled as a claim's. With the fence's label guard every attempt is refused and the Secret
// is unchanged; without it they are recorded.
func TestSecretWriterCannotSwapAClaimsCredentials(t *testing.T) {
	requester := "secret-writer-" + mode
	sec := credentialsSecret(t, requester)
	writer := secretWriter(t, requester)
	planted := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "ci-next", Namespace: requester, Labels: map[string]string{
		tenancyv1alpha1.ManagedByLabel: tenancyv1alpha1.ManagedByValue, tenancyv1alpha1.ClaimUIDLabel: sec.Labels[tenancyv1alpha1.ClaimUIDLabel]}},
		Type: corev1.SecretTypeOpaque, Data: map[string][]byte{"kubeconfig": []byte("apiVersion: v1\nkind: Config\n")}}
	patch := func(body map[string]any) func(client.Client) (string, error) {
		return func(c client.Client) (string, error) {
			raw, err := json.Marshal(body)
			if err != nil {
				return "", err
			}
			return "", c.Patch(ctx, sec.DeepCopy(), client.RawPatch(types.MergePatchType, raw))
		}
	}
	foreign := []byte("apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: https://127.0.0.1:1\n")
	runAttacks(t, writer, []attack{{
		name:        "as a Secret writer: put a kubeconfig of its own in a claim's credentials Secret",
		fenceDenies: guardDeny, kept: []client.Object{sec},
		do: patch(map[string]any{"data": map[string]any{"kubeconfig": foreign}}),
	}, {
		name:        "as a Secret writer: add a key to a claim's credentials Secret",
		fenceDenies: guardDeny, kept: []client.Object{sec},
		do: patch(map[string]any{"stringData": map[string]any{"server": "https://127.0.0.1:1"}}),
	}, {
		name:        "as a Secret writer: make a claim's credentials Secret immutable",
		fenceDenies: guardDeny, kept: []client.Object{sec},
		do: patch(map[string]any{"immutable": true}),
	}, {
		name:        "as a Secret writer: move a claim's credentials Secret to another claim",
		fenceDenies: guardDeny, kept: []client.Object{sec},
		do: patch(map[string]any{"metadata": map[string]any{"labels": map[string]any{tenancyv1alpha1.ClaimUIDLabel: "00000000-0000-0000-0000-000000000040"}}}),
	}, {
		name:        "as a Secret writer: plant a Secret labelled as a claim's",
		fenceDenies: guardDeny, absent: []client.Object{planted.DeepCopy()},
		do: func(c client.Client) (string, error) { return "", c.Create(ctx, planted.DeepCopy()) },
	}})
}
