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
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
)

// Seeds (docs/seeds.md) are the copy controllers' CVE class: a reference a tenant or a class editor
// can influence, resolved with the controller's privileges. The operator reads Secrets only through a
// Role in the seed namespace; these attacks check what its own token, and a tenant's, can do with what
// the project ships: a copy written outside a namespace nsclaim created, a service-account-token
// Secret passed off as a copy, a read of Secrets elsewhere, a tenant replacing a copy's content or
// forging the copy label.

// seedCopyLabels are a copy's labels as the operator writes them, for the claim named by uid.
func seedCopyLabels(kind tenancyv1alpha1.SeedKind, uid string) map[string]string {
	return map[string]string{tenancyv1alpha1.ManagedByLabel: tenancyv1alpha1.ManagedByValue, tenancyv1alpha1.ClaimUIDLabel: uid,
		tenancyv1alpha1.ClaimNamespaceLabel: "owner-" + mode, tenancyv1alpha1.SeedLabel: string(kind)}
}

// TestSeedAttacksAsTheOperator: with the operator's token, write a seed's copy outside namespaces
// nsclaim created, or a service-account-token Secret as a copy in one, and read the Secrets a copy
// controller would reach for. With the fence every write is denied; RBAC alone denies the reads.
func TestSeedAttacksAsTheOperator(t *testing.T) {
	victim := "seed-victim-" + mode
	ensure(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: victim}})
	owned := ownedNamespace(t)
	uid := owned.Labels[tenancyv1alpha1.ClaimUIDLabel]
	copyIn := func(ns, name string, typ corev1.SecretType) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: seedCopyLabels(tenancyv1alpha1.SeedKindSecret, uid)},
			Type: typ, Data: map[string][]byte{".dockerconfigjson": []byte(`{"auths":{}}`)}}
	}
	outside := copyIn(victim, "pull", corev1.SecretTypeOpaque)
	pullOutside := copyIn(victim, "pull-docker", corev1.SecretTypeDockerConfigJson)
	tokenCopy := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "token-copy", Namespace: owned.Name, Labels: seedCopyLabels(tenancyv1alpha1.SeedKindSecret, uid),
		Annotations: map[string]string{corev1.ServiceAccountNameKey: "default"}}, Type: corev1.SecretTypeServiceAccountToken}
	cmOutside := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "corp-ca", Namespace: victim, Labels: seedCopyLabels(tenancyv1alpha1.SeedKindConfigMap, uid)},
		Data: map[string]string{"ca.crt": "forged"}}
	runAttacks(t, operator, []attack{{
		name:        "write a seed's Secret copy into a namespace nsclaim did not create",
		fenceDenies: fenceDeny, absent: []client.Object{outside.DeepCopy()}, do: createOnce(operator, outside),
	}, {
		name:        "write a seed's pull Secret copy into a namespace nsclaim did not create",
		fenceDenies: fenceDeny, absent: []client.Object{pullOutside.DeepCopy()}, do: createOnce(operator, pullOutside),
	}, {
		name:        "write a seed's ConfigMap copy into a namespace nsclaim did not create",
		fenceDenies: fenceDeny, absent: []client.Object{cmOutside.DeepCopy()}, do: createOnce(operator, cmOutside),
	}, {
		name:        "pass a service-account-token Secret off as a seed's copy in an owned namespace",
		fenceDenies: fenceDeny, absent: []client.Object{tokenCopy.DeepCopy()}, do: createOnce(operator, tokenCopy),
	}, {
		name:       "list the Secrets of every namespace to pick a seed",
		rbacDenies: true,
		do:         func(op client.Client) (string, error) { return "", op.List(ctx, &corev1.SecretList{}) },
	}, {
		name:       "read a Secret outside the seed namespace",
		rbacDenies: true,
		do: func(op client.Client) (string, error) {
			return "", op.Get(ctx, client.ObjectKey{Namespace: metav1.NamespaceSystem, Name: "bootstrap-token-abcdef"}, &corev1.Secret{})
		},
	}})
}

// tenantWriter makes ServiceAccount name in ns, bound there to a Role that may create, update, patch
// and delete resource (Secrets or ConfigMaps) and nothing else, and returns a client with its token.
func tenantWriter(t *testing.T, ns, name, resource string) client.Client {
	t.Helper()
	g := NewWithT(t)
	ensure(t, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}})
	ensure(t, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Rules: []rbacv1.PolicyRule{{
		APIGroups: []string{""}, Resources: []string{resource}, Verbs: []string{"create", "update", "patch", "delete", "get"}}}})
	ensure(t, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: ns}}})
	token, err := mintTokenValue(admin, ns, name)
	g.Expect(err).NotTo(HaveOccurred())
	c, err := tokenClient(token)
	g.Expect(err).NotTo(HaveOccurred())
	// RBAC settles within moments: a dry-run create of a plain object is allowed.
	var probe client.Object = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "probe", Namespace: ns}}
	if resource == "secrets" {
		probe = &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "probe", Namespace: ns}, Type: corev1.SecretTypeOpaque}
	}
	g.Eventually(func() error { return c.Create(ctx, probe.DeepCopyObject().(client.Object), client.DryRunAll) }).WithTimeout(10 * time.Second).Should(Succeed())
	return c
}

// TestTenantCannotReplaceOrForgeSeedCopies: as a tenant that may write Secrets and ConfigMaps in its
// namespace, replace a pull Secret copy's content (the pipeline would pull from the tenant's registry
// with the tenant's credentials under the copy's name) and mark a ConfigMap of its own as a seed's copy
// (it would land in the operator's copies cache). The label guard denies both; a ConfigMap copy's
// content a tenant may edit, and the operator puts back (internal/controller/namespaceclaim's envtest).
func TestTenantCannotReplaceOrForgeSeedCopies(t *testing.T) {
	owned := ownedNamespace(t)
	uid := owned.Labels[tenancyv1alpha1.ClaimUIDLabel]
	pull := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "seed-pull-" + mode, Namespace: owned.Name, Labels: seedCopyLabels(tenancyv1alpha1.SeedKindSecret, uid)},
		Type: corev1.SecretTypeDockerConfigJson, Data: map[string][]byte{".dockerconfigjson": []byte(`{"auths":{"registry.example":{}}}`)}}
	// Only the operator may write a Secret with nsclaim's labels (the label guard): it makes the copy, as
	// its seeds phase would; the fence lets it, in a namespace it created.
	if err := operator.Create(ctx, pull.DeepCopy()); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("the operator could not write a seed's copy in a namespace it created: %v", err)
	}
	secrets := tenantWriter(t, owned.Name, "seed-secret-writer", "secrets")
	configMaps := tenantWriter(t, owned.Name, "seed-configmap-writer", "configmaps")
	forged := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "forged-" + mode, Namespace: owned.Name,
		Labels: map[string]string{tenancyv1alpha1.SeedLabel: string(tenancyv1alpha1.SeedKindConfigMap)}}, Data: map[string]string{"ca.crt": "mine"}}
	patch := func(body map[string]any) func(client.Client) (string, error) {
		return func(c client.Client) (string, error) {
			raw, err := json.Marshal(body)
			if err != nil {
				return "", err
			}
			return "", c.Patch(ctx, pull.DeepCopy(), client.RawPatch(types.MergePatchType, raw))
		}
	}
	runAttacks(t, secrets, []attack{{
		name:        "as a tenant: replace a pull Secret copy with its own registry credentials",
		fenceDenies: guardDeny, kept: []client.Object{pull},
		do: patch(map[string]any{"data": map[string]any{".dockerconfigjson": []byte(`{"auths":{"evil.example":{}}}`)}}),
	}, {
		name:        "as a tenant: make a pull Secret copy immutable, so no rotation reaches it",
		fenceDenies: guardDeny, kept: []client.Object{pull},
		do: patch(map[string]any{"immutable": true}),
	}})
	runAttacks(t, configMaps, []attack{{
		name:        "as a tenant: label a ConfigMap of its own as a seed's copy",
		fenceDenies: guardDeny, absent: []client.Object{forged.DeepCopy()}, do: createOnce(configMaps, forged),
	}})
}
