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

package v1alpha1_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
)

// TestSeedValidation: a class's seeds are checked when the class is admitted: a kind of the
// allow-list, DNS names, no copy over kube-root-ca.crt, no two copies of one kind and name, at most 16,
// imagePullSecret on Secrets only.
func TestSeedValidation(t *testing.T) {
	requireEnvtest(t)
	ctx := context.Background()
	secret := func(n, as string) tenancyv1alpha1.Seed {
		return tenancyv1alpha1.Seed{Kind: tenancyv1alpha1.SeedKindSecret, Name: n, As: as}
	}
	cm := func(n, as string) tenancyv1alpha1.Seed {
		return tenancyv1alpha1.Seed{Kind: tenancyv1alpha1.SeedKindConfigMap, Name: n, As: as}
	}
	seventeen := make([]tenancyv1alpha1.Seed, 17)
	for i := range seventeen {
		seventeen[i] = secret(fmt.Sprintf("s%d", i), "")
	}
	cases := []struct {
		name    string
		seeds   []tenancyv1alpha1.Seed
		wantErr string
	}{
		{name: "a pull Secret and a CA bundle", seeds: []tenancyv1alpha1.Seed{
			{Kind: tenancyv1alpha1.SeedKindSecret, Name: "registry", ImagePullSecret: tenancyv1alpha1.ImagePullTenantAndDefault, Required: true},
			cm("corp-ca.v2", "corp-ca")}},
		{name: "a Secret and a ConfigMap of one name", seeds: []tenancyv1alpha1.Seed{secret("shared", ""), cm("shared", "")}},
		{name: "cluster-scoped kind", seeds: []tenancyv1alpha1.Seed{{Kind: "ClusterRole", Name: "admin"}}, wantErr: `spec.seeds[0].kind: Unsupported value: "ClusterRole"`},
		{name: "namespace kind", seeds: []tenancyv1alpha1.Seed{{Kind: "Namespace", Name: "kube-system"}}, wantErr: `spec.seeds[0].kind: Unsupported value: "Namespace"`},
		{name: "namespaced kind off the list", seeds: []tenancyv1alpha1.Seed{{Kind: "ServiceAccount", Name: "builder"}}, wantErr: `spec.seeds[0].kind: Unsupported value: "ServiceAccount"`},
		{name: "name not DNS", seeds: []tenancyv1alpha1.Seed{secret("Registry_Cred", "")}, wantErr: "seeds[].name must be a DNS-1123 subdomain"},
		{name: "name with a path", seeds: []tenancyv1alpha1.Seed{secret("kube-system/admin", "")}, wantErr: "seeds[].name must be a DNS-1123 subdomain"},
		{name: "as not DNS", seeds: []tenancyv1alpha1.Seed{secret("registry", "-pull")}, wantErr: "seeds[].as must be a DNS-1123 subdomain"},
		{name: "name too long", seeds: []tenancyv1alpha1.Seed{secret(strings.Repeat("a", 254), "")}, wantErr: "spec.seeds[0].name"},
		{name: "two copies of one name", seeds: []tenancyv1alpha1.Seed{secret("a", "pull"), secret("b", "pull")}, wantErr: "seeds must not name two copies of the same kind with the same name"},
		{name: "as equal to another's name", seeds: []tenancyv1alpha1.Seed{secret("a", ""), secret("b", "a")}, wantErr: "seeds must not name two copies of the same kind with the same name"},
		{name: "one source copied twice under two names", seeds: []tenancyv1alpha1.Seed{secret("a", "x"), secret("a", "y")}},
		{name: "over kube-root-ca.crt", seeds: []tenancyv1alpha1.Seed{cm("corp-ca", "kube-root-ca.crt")}, wantErr: "seeds must not copy over kube-root-ca.crt"},
		{name: "pull attachment on a ConfigMap", seeds: []tenancyv1alpha1.Seed{{Kind: tenancyv1alpha1.SeedKindConfigMap, Name: "ca", ImagePullSecret: tenancyv1alpha1.ImagePullTenant}}, wantErr: "seeds[].imagePullSecret applies to seeds of kind Secret only"},
		{name: "unknown attachment", seeds: []tenancyv1alpha1.Seed{{Kind: tenancyv1alpha1.SeedKindSecret, Name: "r", ImagePullSecret: "Everyone"}}, wantErr: "spec.seeds[0].imagePullSecret"},
		{name: "too many", seeds: seventeen, wantErr: "spec.seeds: Too many"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := &tenancyv1alpha1.NamespaceClass{ObjectMeta: metav1.ObjectMeta{Name: name("seeds")}, Spec: tenancyv1alpha1.NamespaceClassSpec{Seeds: tc.seeds}}
			check(t, k8s.Create(ctx, c), tc.wantErr)
		})
	}
}

// TestSeedHasNoNamespaceAndClaimsNoSeeds: the attacks of the copy-controller CVEs that go through the
// API are refused by the schema: a seed naming a source namespace (the source namespace is the
// operator's setting, nothing else), and a claim adding or overriding a seed (a claim has no seeds).
// With strict field validation the refusal names the field; without it, the field is dropped and the
// stored object carries no such field.
func TestSeedHasNoNamespaceAndClaimsNoSeeds(t *testing.T) {
	requireEnvtest(t)
	ctx := context.Background()
	cases := []struct {
		name, kind string
		namespace  string
		spec       map[string]any
		wantErr    string
	}{
		{name: "class seed in another namespace", kind: "NamespaceClass",
			spec:    map[string]any{"seeds": []any{map[string]any{"kind": "Secret", "name": "admin-token", "namespace": "kube-system"}}},
			wantErr: `unknown field "spec.seeds[0].namespace"`},
		{name: "claim adding a seed", kind: "NamespaceClaim", namespace: "default",
			spec:    map[string]any{"seeds": []any{map[string]any{"kind": "Secret", "name": "admin-token"}}},
			wantErr: `unknown field "spec.seeds"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": tenancyv1alpha1.GroupVersion.String(), "kind": tc.kind, "spec": tc.spec}}
			u.SetName(name("attack"))
			u.SetNamespace(tc.namespace)
			check(t, k8s.Create(ctx, u.DeepCopy(), client.FieldValidation("Strict")), tc.wantErr)
			// Without strict validation the API server drops the field: nothing of it is stored.
			if err := k8s.Create(ctx, u, client.FieldValidation("Ignore")); err != nil {
				t.Fatal(err)
			}
			got := &unstructured.Unstructured{}
			got.SetGroupVersionKind(u.GroupVersionKind())
			if err := k8s.Get(ctx, client.ObjectKeyFromObject(u), got); err != nil {
				t.Fatal(err)
			}
			if tc.kind == "NamespaceClaim" {
				if _, found, _ := unstructured.NestedFieldNoCopy(got.Object, "spec", "seeds"); found {
					t.Fatalf("a claim stored spec.seeds: %v", got.Object["spec"])
				}
				return
			}
			seeds, _, _ := unstructured.NestedSlice(got.Object, "spec", "seeds")
			if len(seeds) != 1 || seeds[0].(map[string]any)["namespace"] != nil {
				t.Fatalf("the stored seed kept a namespace: %v", seeds)
			}
		})
	}
}
