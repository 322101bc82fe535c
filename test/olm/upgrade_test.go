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

package olm

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
)

// The checks of a live upgrade from an older release: objects that the old version's CRDs stored are
// read and written back through the new ones, the CRDs are the ones of the installed bundle, and their
// stored versions are the storage versions that either bundle declared.

// crdNames are nsclaim's CRDs; each bundle carries them as manifests/tenancy.nsclaim.dev_<plural>.yaml.
var crdNames = []string{"namespaceclaims.tenancy.nsclaim.dev", "namespaceclasses.tenancy.nsclaim.dev"}

// writtenBackLabel is set on the objects of the old version by the write-back through the new CRDs.
const writtenBackLabel = "test.nsclaim.dev/written-back"

// bundleCRD reads the CRD name from the bundle directory dir.
func bundleCRD(t *testing.T, dir, name string) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(dir, "manifests", "tenancy.nsclaim.dev_"+name[:len(name)-len(".tenancy.nsclaim.dev")]+".yaml"))
	if err != nil {
		t.Fatal(err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.UnmarshalStrict(raw, crd); err != nil {
		t.Fatalf("%s in %s: %v", name, dir, err)
	}
	return crd
}

// storageVersions returns the names of the versions a CRD stores objects in.
func storageVersions(crd *apiextensionsv1.CustomResourceDefinition) []string {
	var out []string
	for _, v := range crd.Spec.Versions {
		if v.Storage {
			out = append(out, v.Name)
		}
	}
	return out
}

// checkCRDs checks that the CRDs on the cluster serve exactly the versions and schemas of the bundle in
// dir (when dir is set: OLM applied that bundle's API), and that their status.storedVersions is
// storedVersions: the versions any installed bundle stored objects in, oldest first.
func checkCRDs(t *testing.T, dir string, storedVersions map[string][]string) {
	t.Helper()
	g := NewWithT(t)
	for _, name := range crdNames {
		want := storedVersions[name]
		if dir != "" {
			for _, v := range storageVersions(bundleCRD(t, dir, name)) {
				if !slices.Contains(want, v) {
					want = append(want, v)
				}
			}
		} else if len(want) == 0 {
			want = []string{tenancyv1alpha1.GroupVersion.Version}
		}
		storedVersions[name] = want
		g.Eventually(func(g Gomega) {
			live := &apiextensionsv1.CustomResourceDefinition{}
			g.Expect(admin.Get(ctx, client.ObjectKey{Name: name}, live)).To(Succeed())
			if dir != "" {
				g.Expect(versionsJSON(g, live)).To(MatchJSON(versionsJSON(g, bundleCRD(t, dir, name))),
					"CRD %s must serve the versions and schemas of the bundle %s", name, dir)
			}
			g.Expect(live.Status.StoredVersions).To(Equal(want), "CRD %s status.storedVersions", name)
		}).WithTimeout(deployTimeout).WithPolling(time.Second).Should(Succeed())
	}
	t.Logf("CRDs %v: stored versions %v", crdNames, storedVersions)
}

// versionsJSON is the JSON of a CRD's versions (name, served, storage, schema, subresources, printer
// columns, selectable fields, deprecation), for comparison.
func versionsJSON(g Gomega, crd *apiextensionsv1.CustomResourceDefinition) string {
	raw, err := json.Marshal(crd.Spec.Versions)
	g.Expect(err).NotTo(HaveOccurred())
	return string(raw)
}

// storedObject is an object as the old version stored it, read back as unstructured data.
type storedObject struct {
	obj  client.Object
	spec map[string]any
}

// recordStored reads obj's spec as the API server returns it now.
func recordStored(t *testing.T, obj client.Object) *storedObject {
	t.Helper()
	return &storedObject{obj: obj, spec: readSpec(t, obj)}
}

func readSpec(t *testing.T, obj client.Object) map[string]any {
	t.Helper()
	u := &unstructured.Unstructured{}
	gvk, err := admin.GroupVersionKindFor(obj)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	u.SetGroupVersionKind(gvk)
	NewWithT(t).Expect(admin.Get(ctx, client.ObjectKeyFromObject(obj), u)).To(Succeed())
	spec, _, _ := unstructured.NestedMap(u.Object, "spec")
	return spec
}

// writeBack reads an object the old version stored through the new CRD and the tree's API types, adds a
// label and writes the whole object back (an update, not a patch: every field goes through the new
// schema's validation), then checks that every field of its spec is still there with the same value
// (new fields may have been defaulted).
func writeBack(t *testing.T, stored *storedObject) {
	t.Helper()
	g := NewWithT(t)
	obj := stored.obj
	g.Eventually(func(g Gomega) {
		g.Expect(admin.Get(ctx, client.ObjectKeyFromObject(obj), obj)).To(Succeed())
		labels := obj.GetLabels()
		if labels == nil {
			labels = map[string]string{}
		}
		labels[writtenBackLabel] = "true"
		obj.SetLabels(labels)
		g.Expect(admin.Update(ctx, obj)).To(Succeed(), "writing back %T %s through the new CRD", obj, client.ObjectKeyFromObject(obj))
	}).WithTimeout(claimTimeout).WithPolling(time.Second).Should(Succeed())
	g.Expect(obj.GetLabels()).To(HaveKeyWithValue(writtenBackLabel, "true"))
	g.Expect(subset(stored.spec, readSpec(t, obj))).To(Succeed(), "the spec of %T %s after the write-back", obj, client.ObjectKeyFromObject(obj))
}

// subset returns an error unless every field of old is in current with the same value: maps may gain
// keys, strings that are the same duration in two spellings ("24h", "24h0m0s": the API types write
// durations back in Go's form) are equal, everything else must be equal.
func subset(old, current any) error { return subsetAt("spec", old, current) }

func subsetAt(path string, old, current any) error {
	om, ok := old.(map[string]any)
	if !ok {
		if reflect.DeepEqual(old, current) || sameDuration(old, current) {
			return nil
		}
		return fmt.Errorf("%s: was %v, is %v", path, old, current)
	}
	cm, ok := current.(map[string]any)
	if !ok {
		return fmt.Errorf("%s: was %v, is %v", path, old, current)
	}
	for k, v := range om {
		c, found := cm[k]
		if !found && isEmpty(v) {
			// An empty string, list or map the old version stored; the Go types send it absent
			// (omitempty), which the API treats the same (the creator rule compares them so).
			continue
		}
		if !found {
			return fmt.Errorf("%s.%s: was %v, is gone", path, k, v)
		}
		if err := subsetAt(path+"."+k, v, c); err != nil {
			return err
		}
	}
	return nil
}

// isEmpty reports whether v is "", an empty list or an empty map.
func isEmpty(v any) bool {
	switch x := v.(type) {
	case string:
		return x == ""
	case []any:
		return len(x) == 0
	case map[string]any:
		return len(x) == 0
	}
	return false
}

func sameDuration(a, b any) bool {
	as, ok1 := a.(string)
	bs, ok2 := b.(string)
	if !ok1 || !ok2 {
		return false
	}
	ad, err1 := time.ParseDuration(as)
	bd, err2 := time.ParseDuration(bs)
	return err1 == nil && err2 == nil && ad == bd
}

func TestSubset(t *testing.T) {
	for _, tc := range []struct {
		name         string
		old, current map[string]any
		ok           bool
	}{
		{"equal", map[string]any{"a": "x", "b": map[string]any{"c": int64(1)}}, map[string]any{"a": "x", "b": map[string]any{"c": int64(1)}}, true},
		{"a field added", map[string]any{"a": "x"}, map[string]any{"a": "x", "d": "default"}, true},
		{"a nested field added", map[string]any{"b": map[string]any{}}, map[string]any{"b": map[string]any{"mode": "Token"}}, true},
		{"a field lost", map[string]any{"a": "x", "b": "y"}, map[string]any{"a": "x"}, false},
		{"empty fields dropped by omitempty", map[string]any{"c": map[string]any{"u": "a", "uid": "", "groups": []any{}, "extra": map[string]any{}}}, map[string]any{"c": map[string]any{"u": "a"}}, true},
		{"a non-empty list lost", map[string]any{"c": map[string]any{"groups": []any{"dev"}}}, map[string]any{"c": map[string]any{}}, false},
		{"a zero number lost", map[string]any{"n": int64(0)}, map[string]any{}, false},
		{"a value changed", map[string]any{"b": map[string]any{"c": int64(1)}}, map[string]any{"b": map[string]any{"c": int64(2)}}, false},
		{"a list changed", map[string]any{"l": []any{"a", "b"}}, map[string]any{"l": []any{"a"}}, false},
		{"a map became a value", map[string]any{"b": map[string]any{"c": "d"}}, map[string]any{"b": "d"}, false},
		{"a duration spelt in Go's form", map[string]any{"ttl": "24h"}, map[string]any{"ttl": "24h0m0s"}, true},
		{"a duration changed", map[string]any{"ttl": "24h"}, map[string]any{"ttl": "23h0m0s"}, false},
		{"a string that is no duration changed", map[string]any{"prefix": "olm-"}, map[string]any{"prefix": "olm"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := subset(tc.old, tc.current)
			if (err == nil) != tc.ok {
				t.Fatalf("subset(%v, %v) = %v, want ok=%v", tc.old, tc.current, err, tc.ok)
			}
		})
	}
}

// createOldClass creates the test's NamespaceClass as a client of the old version would: as
// unstructured data with only fields that version knows, so that the tree's API types add nothing.
// The claim's identity gets `edit` in its namespace; a claim may label its namespace with team.
func createOldClass(t *testing.T) *tenancyv1alpha1.NamespaceClass {
	t.Helper()
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": tenancyv1alpha1.GroupVersion.String(), "kind": "NamespaceClass",
		"metadata": map[string]any{"name": className},
		"spec": map[string]any{
			"clusterRole": "edit", "naming": map[string]any{"prefix": "olm-"},
			"networkPolicy":      string(tenancyv1alpha1.NetworkPolicyDenyFromOtherNamespaces),
			"podSecurity":        string(tenancyv1alpha1.PodSecurityRestricted),
			"lifetime":           map[string]any{"defaultTTL": "1h", "maxTTL": "24h"},
			"allowedClaimLabels": []any{"team"},
		},
	}}
	NewWithT(t).Expect(admin.Create(ctx, u)).To(Succeed())
	return &tenancyv1alpha1.NamespaceClass{ObjectMeta: metav1.ObjectMeta{Name: className}}
}

// oldClaim creates a claim as a client of the old version would (unstructured, with spec), waits until
// it is Ready and records it like claimAndWait.
func oldClaim(t *testing.T, namespace, name string, spec map[string]any) *tenant {
	t.Helper()
	spec["className"] = className
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": tenancyv1alpha1.GroupVersion.String(), "kind": "NamespaceClaim",
		"metadata": map[string]any{"name": name, "namespace": namespace},
		"spec":     spec,
	}}
	NewWithT(t).Expect(admin.Create(ctx, u)).To(Succeed())
	claim := &tenancyv1alpha1.NamespaceClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace}}
	return waitReady(t, claim)
}

// checkNotReissued checks that the claim still has the token it had before (same Secret data, same
// recorded expiry) and the same namespace: nothing a tenant holds was replaced.
func checkNotReissued(t *testing.T, tn *tenant) {
	t.Helper()
	g := NewWithT(t)
	claim := &tenancyv1alpha1.NamespaceClaim{}
	g.Expect(admin.Get(ctx, client.ObjectKeyFromObject(tn.claim), claim)).To(Succeed())
	g.Expect(meta.IsStatusConditionTrue(claim.Status.Conditions, tenancyv1alpha1.ReadyCondition)).To(BeTrue(), "conditions: %+v", claim.Status.Conditions)
	g.Expect(claim.Status.Namespace).To(Equal(tn.namespace), "claim %s changed its namespace", client.ObjectKeyFromObject(claim))
	g.Expect(claim.Status.CredentialsSecretName).To(Equal(tn.claim.Status.CredentialsSecretName))
	g.Expect(claim.Status.TokenExpiresAt).NotTo(BeNil())
	g.Expect(claim.Status.TokenExpiresAt.Time).To(BeTemporally("==", tn.tokenExpiresAt), "claim %s: a token was re-issued (expiry %v, was %v)",
		client.ObjectKeyFromObject(claim), claim.Status.TokenExpiresAt, tn.tokenExpiresAt)
	g.Expect(tn.tokenExpiresAt).To(BeTemporally(">", time.Now()), "the recorded token of %s must still be valid for this check to mean anything", client.ObjectKeyFromObject(claim))
	g.Expect(secretToken(g, tn)).To(Equal(tn.token), "claim %s: the token in its Secret was re-issued", client.ObjectKeyFromObject(claim))
}

// readySince returns the lastTransitionTime of the claim's Ready condition now.
func readySince(t *testing.T, tn *tenant) time.Time {
	t.Helper()
	claim := &tenancyv1alpha1.NamespaceClaim{}
	NewWithT(t).Expect(admin.Get(ctx, client.ObjectKeyFromObject(tn.claim), claim)).To(Succeed())
	c := meta.FindStatusCondition(claim.Status.Conditions, tenancyv1alpha1.ReadyCondition)
	if c == nil {
		return time.Time{}
	}
	return c.LastTransitionTime.Time
}
