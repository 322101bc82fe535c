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

package seeds

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
)

const seedNS = "nsclaim-seeds"

type srcOpt func(client.Object)

func labelled(v string) srcOpt {
	return func(o client.Object) { o.SetLabels(map[string]string{tenancyv1alpha1.SeedClassLabel: v}) }
}
func uid(u string) srcOpt   { return func(o client.Object) { o.SetUID(types.UID(u)) } }
func inNS(ns string) srcOpt { return func(o client.Object) { o.SetNamespace(ns) } }
func replaces(u string) srcOpt {
	return func(o client.Object) { o.SetAnnotations(map[string]string{tenancyv1alpha1.SeedReplacesAnnotation: u}) }
}

func secret(name string, t corev1.SecretType, opts ...srcOpt) *corev1.Secret {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: seedNS, UID: "uid-1"}, Type: t,
		Data: map[string][]byte{".dockerconfigjson": []byte(`{"auths":{}}`)}}
	for _, o := range opts {
		o(s)
	}
	return s
}

func configMap(name string, opts ...srcOpt) *corev1.ConfigMap {
	c := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: seedNS, UID: "uid-1"}, Data: map[string]string{"ca.crt": "PEM"}}
	for _, o := range opts {
		o(c)
	}
	return c
}

// lookup serves objs by kind and name, as the seed namespace's cache would, whatever their namespace
// (so a lookup that returns an object of another namespace is tested too).
func lookup(objs ...client.Object) Lookup {
	return func(kind tenancyv1alpha1.SeedKind, name string) client.Object {
		for _, o := range objs {
			_, isSecret := o.(*corev1.Secret)
			_, isCM := o.(*corev1.ConfigMap)
			if o.GetName() == name && ((kind == tenancyv1alpha1.SeedKindSecret && isSecret) || (kind == tenancyv1alpha1.SeedKindConfigMap && isCM) || (!isSecret && !isCM)) {
				return o
			}
		}
		return nil
	}
}

func class(seeds ...tenancyv1alpha1.Seed) *tenancyv1alpha1.NamespaceClass {
	return &tenancyv1alpha1.NamespaceClass{ObjectMeta: metav1.ObjectMeta{Name: "ci"}, Spec: tenancyv1alpha1.NamespaceClassSpec{Seeds: seeds}}
}

func seedOf(kind tenancyv1alpha1.SeedKind, name string) tenancyv1alpha1.Seed {
	return tenancyv1alpha1.Seed{Kind: kind, Name: name}
}

// TestResolve: each rule of Resolve, including the attacks modelled on the copy-controller CVEs: a
// source without the opt-in label, labelled for another class, of another namespace, of another kind,
// a service-account-token Secret, a kind off the allow-list, a source made again with a new UID.
func TestResolve(t *testing.T) {
	pull := seedOf(tenancyv1alpha1.SeedKindSecret, "registry")
	ca := seedOf(tenancyv1alpha1.SeedKindConfigMap, "corp-ca")
	pinned := []tenancyv1alpha1.SeedStatus{{Kind: tenancyv1alpha1.SeedKindSecret, Name: "registry", SourceUID: "uid-1"}}
	cases := []struct {
		name       string
		seedNS     string
		seed       tenancyv1alpha1.Seed
		objs       []client.Object
		pinned     []tenancyv1alpha1.SeedStatus
		wantReason string
		wantMsg    string
	}{
		{name: "labelled for the class", seed: pull, objs: []client.Object{secret("registry", corev1.SecretTypeDockerConfigJson, labelled("ci"))}, wantReason: tenancyv1alpha1.SeedsSyncedReason},
		{name: "labelled for every class", seed: ca, objs: []client.Object{configMap("corp-ca", labelled("All"))}, wantReason: tenancyv1alpha1.SeedsSyncedReason},
		{name: "seeds off", seedNS: "-", seed: pull, objs: []client.Object{secret("registry", corev1.SecretTypeOpaque, labelled("ci"))}, wantReason: tenancyv1alpha1.SeedsDisabledReason, wantMsg: "NSCLAIM_SEED_NAMESPACE is unset"},
		{name: "no source", seed: pull, wantReason: tenancyv1alpha1.SeedSourceNotFoundReason, wantMsg: "Secret nsclaim-seeds/registry: no such object"},
		{name: "attack: no opt-in label", seed: pull, objs: []client.Object{secret("registry", corev1.SecretTypeOpaque)}, wantReason: tenancyv1alpha1.SeedNotConsentedReason, wantMsg: "lacks the label seeds.nsclaim.dev/class=ci"},
		{name: "attack: labelled for another class", seed: pull, objs: []client.Object{secret("registry", corev1.SecretTypeOpaque, labelled("prod"))}, wantReason: tenancyv1alpha1.SeedNotConsentedReason},
		{name: "attack: a Secret outside the seed namespace", seed: pull, objs: []client.Object{secret("registry", corev1.SecretTypeOpaque, labelled("All"), inNS("kube-system"))}, wantReason: tenancyv1alpha1.SeedSourceNotFoundReason},
		{name: "attack: a service-account-token Secret", seed: pull, objs: []client.Object{secret("registry", corev1.SecretTypeServiceAccountToken, labelled("All"))}, wantReason: tenancyv1alpha1.SeedKindNotAllowedReason, wantMsg: "kubernetes.io/service-account-token are never copied"},
		{name: "attack: a kind off the allow-list", seed: seedOf("ClusterRole", "admin"), objs: []client.Object{&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "admin"}}}, wantReason: tenancyv1alpha1.SeedKindNotAllowedReason, wantMsg: `kind "ClusterRole" is not one a seed may copy`},
		{name: "attack: lookup returns another kind", seed: pull, objs: []client.Object{&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "registry", Namespace: seedNS, Labels: map[string]string{tenancyv1alpha1.SeedClassLabel: "*"}}}}, wantReason: tenancyv1alpha1.SeedKindNotAllowedReason, wantMsg: "not a Secret or a ConfigMap"},
		{name: "pinned UID kept", seed: pull, pinned: pinned, objs: []client.Object{secret("registry", corev1.SecretTypeOpaque, labelled("ci"))}, wantReason: tenancyv1alpha1.SeedsSyncedReason},
		{name: "attack: source made again under the same name", seed: pull, pinned: pinned, objs: []client.Object{secret("registry", corev1.SecretTypeOpaque, labelled("ci"), uid("uid-2"))}, wantReason: tenancyv1alpha1.SeedSourceReplacedReason, wantMsg: "seeds.nsclaim.dev/replaces=uid-1"},
		{name: "replacement acknowledged", seed: pull, pinned: pinned, objs: []client.Object{secret("registry", corev1.SecretTypeOpaque, labelled("ci"), uid("uid-2"), replaces("uid-1"))}, wantReason: tenancyv1alpha1.SeedsSyncedReason},
		{name: "replacement acknowledged, consent still needed", seed: pull, pinned: pinned, objs: []client.Object{secret("registry", corev1.SecretTypeOpaque, uid("uid-2"), replaces("uid-1"))}, wantReason: tenancyv1alpha1.SeedNotConsentedReason},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ns := seedNS
			if tc.seedNS == "-" {
				ns = ""
			}
			got := Resolve(class(tc.seed), ns, lookup(tc.objs...), tc.pinned)
			if len(got) != 1 {
				t.Fatalf("want one seed resolved, got %d", len(got))
			}
			if got[0].Reason != tc.wantReason || !strings.Contains(got[0].Message, tc.wantMsg) {
				t.Fatalf("got %s %q, want %s containing %q", got[0].Reason, got[0].Message, tc.wantReason, tc.wantMsg)
			}
			if (got[0].Source != nil) != (tc.wantReason == tenancyv1alpha1.SeedsSyncedReason) {
				t.Fatalf("a source is copyable only when synced: source %v, reason %s", got[0].Source, got[0].Reason)
			}
		})
	}
}

func owner() map[string]string {
	return map[string]string{tenancyv1alpha1.ManagedByLabel: tenancyv1alpha1.ManagedByValue, tenancyv1alpha1.ClaimUIDLabel: "claim-1", tenancyv1alpha1.ClaimNamespaceLabel: "team"}
}

// TestDesired: a copy holds the source's content, its origin and digest, the claim's marks, and
// nothing else of the source.
func TestDesired(t *testing.T) {
	src := secret("registry", corev1.SecretTypeDockerConfigJson, labelled("ci"))
	src.Annotations = map[string]string{"secret-owner": "platform"}
	src.Finalizers = []string{"x"}
	immutable := true
	src.Immutable = &immutable
	r := Resolved{Seed: tenancyv1alpha1.Seed{Kind: tenancyv1alpha1.SeedKindSecret, Name: "registry", As: "pull"}, Source: src}
	got := Desired(r, "ci-1", owner()).(*corev1.Secret)
	if got.Name != "pull" || got.Namespace != "ci-1" || got.Type != corev1.SecretTypeDockerConfigJson || string(got.Data[".dockerconfigjson"]) != `{"auths":{}}` {
		t.Fatalf("copy %s/%s type %s data %v", got.Namespace, got.Name, got.Type, got.Data)
	}
	if got.Immutable != nil || len(got.Finalizers) != 0 || got.Labels[tenancyv1alpha1.SeedClassLabel] != "" || got.Annotations["secret-owner"] != "" {
		t.Fatalf("copied more than the content: %+v", got.ObjectMeta)
	}
	if got.Labels[tenancyv1alpha1.SeedLabel] != "Secret" || got.Labels[tenancyv1alpha1.ClaimUIDLabel] != "claim-1" {
		t.Fatalf("labels %v", got.Labels)
	}
	a := got.Annotations
	if a[tenancyv1alpha1.SeedSourceNamespaceAnnotation] != seedNS || a[tenancyv1alpha1.SeedSourceNameAnnotation] != "registry" || a[tenancyv1alpha1.SeedSourceUIDAnnotation] != "uid-1" || a[tenancyv1alpha1.SeedDigestAnnotation] != Digest(src) {
		t.Fatalf("origin %v", a)
	}
	src.Data[".dockerconfigjson"] = []byte("changed")
	if string(got.Data[".dockerconfigjson"]) == "changed" {
		t.Fatal("the copy shares the source's data map")
	}
}

// TestCompare: what is done with the object found under a copy's name: a tenant's edit, delete,
// kind or type swap, a foreign object, a rotated source, a source made again.
func TestCompare(t *testing.T) {
	src := secret("registry", corev1.SecretTypeDockerConfigJson, labelled("ci"))
	want := Desired(Resolved{Seed: seedOf(tenancyv1alpha1.SeedKindSecret, "registry"), Source: src}, "ci-1", owner())
	copyOf := func(edit func(*corev1.Secret)) client.Object {
		c := want.DeepCopyObject().(*corev1.Secret)
		edit(c)
		return c
	}
	rotated := src.DeepCopy()
	rotated.Data[".dockerconfigjson"] = []byte(`{"auths":{"new":{}}}`)
	wantRotated := Desired(Resolved{Seed: seedOf(tenancyv1alpha1.SeedKindSecret, "registry"), Source: rotated}, "ci-1", owner())
	remade := src.DeepCopy()
	remade.UID = "uid-2"
	wantRemade := Desired(Resolved{Seed: seedOf(tenancyv1alpha1.SeedKindSecret, "registry"), Source: remade}, "ci-1", owner())
	yes := true
	cases := []struct {
		name       string
		have, want client.Object
		wantAction Action
	}{
		{name: "in sync", have: copyOf(func(*corev1.Secret) {}), want: want, wantAction: ActionNone},
		{name: "deleted by the tenant", have: nil, want: want, wantAction: ActionCreate},
		{name: "tenant replaced the content", have: copyOf(func(c *corev1.Secret) { c.Data = map[string][]byte{".dockerconfigjson": []byte("mine")} }), want: want, wantAction: ActionUpdate},
		{name: "tenant replaced the content and the digest", have: copyOf(func(c *corev1.Secret) {
			c.Data = map[string][]byte{".dockerconfigjson": []byte("mine")}
			c.Annotations[tenancyv1alpha1.SeedDigestAnnotation] = Digest(c)
		}), want: want, wantAction: ActionUpdate},
		{name: "tenant changed the origin annotation", have: copyOf(func(c *corev1.Secret) { c.Annotations[tenancyv1alpha1.SeedSourceNameAnnotation] = "other" }), want: want, wantAction: ActionUpdate},
		{name: "tenant turned it into another type", have: copyOf(func(c *corev1.Secret) { c.Type = corev1.SecretTypeServiceAccountToken }), want: want, wantAction: ActionReplace},
		{name: "tenant made it immutable", have: copyOf(func(c *corev1.Secret) { c.Immutable = &yes }), want: want, wantAction: ActionReplace},
		{name: "a foreign Secret of that name", have: secret("registry", corev1.SecretTypeOpaque), want: want, wantAction: ActionReplace},
		{name: "another claim's copy", have: copyOf(func(c *corev1.Secret) { c.Labels[tenancyv1alpha1.ClaimUIDLabel] = "claim-2" }), want: want, wantAction: ActionReplace},
		{name: "the tenant took the marks off, then changed nothing", have: copyOf(func(c *corev1.Secret) { c.Labels = nil }), want: want, wantAction: ActionReplace},
		{name: "ours but not a seed", have: copyOf(func(c *corev1.Secret) { delete(c.Labels, tenancyv1alpha1.SeedLabel) }), want: want, wantAction: ActionReplace},
		{name: "source rotated", have: copyOf(func(*corev1.Secret) {}), want: wantRotated, wantAction: ActionUpdate},
		{name: "source made again with the same content", have: copyOf(func(*corev1.Secret) {}), want: wantRemade, wantAction: ActionUpdate},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := Compare(tc.have, tc.want, owner()); got != tc.wantAction {
				t.Fatalf("got %s, want %s", got, tc.wantAction)
			}
		})
	}
}

// TestDigest: equal content, equal digest whatever the map order; any change of type, key or value
// changes it; a key moved from data to binaryData changes it.
func TestDigest(t *testing.T) {
	a := &corev1.ConfigMap{Data: map[string]string{"a": "1", "b": "2"}}
	b := &corev1.ConfigMap{Data: map[string]string{"b": "2", "a": "1"}}
	if Digest(a) != Digest(b) {
		t.Fatal("equal content, different digests")
	}
	for name, o := range map[string]client.Object{
		"value":      &corev1.ConfigMap{Data: map[string]string{"a": "1", "b": "3"}},
		"key":        &corev1.ConfigMap{Data: map[string]string{"a": "1", "c": "2"}},
		"binaryData": &corev1.ConfigMap{Data: map[string]string{"a": "1"}, BinaryData: map[string][]byte{"b": []byte("2")}},
		"split":      &corev1.ConfigMap{Data: map[string]string{"a": "1b", "": "2"}},
	} {
		if Digest(o) == Digest(a) {
			t.Errorf("%s: a different content has the same digest", name)
		}
	}
	s1 := &corev1.Secret{Type: corev1.SecretTypeOpaque, Data: map[string][]byte{"a": []byte("1")}}
	s2 := &corev1.Secret{Type: corev1.SecretTypeBasicAuth, Data: map[string][]byte{"a": []byte("1")}}
	if Digest(s1) == Digest(s2) {
		t.Fatal("the Secret type is not in the digest")
	}
}

// TestStale: a copy the class no longer names is stale; one it names, or one of another kind, is not.
func TestStale(t *testing.T) {
	c := class(seedOf(tenancyv1alpha1.SeedKindSecret, "registry"), tenancyv1alpha1.Seed{Kind: tenancyv1alpha1.SeedKindConfigMap, Name: "corp-ca.v2", As: "corp-ca"})
	mk := func(kind tenancyv1alpha1.SeedKind, name string) client.Object {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{tenancyv1alpha1.SeedLabel: string(kind)}}}
	}
	cases := []struct {
		obj  client.Object
		kind tenancyv1alpha1.SeedKind
		want bool
	}{
		{mk(tenancyv1alpha1.SeedKindSecret, "registry"), tenancyv1alpha1.SeedKindSecret, false},
		{mk(tenancyv1alpha1.SeedKindConfigMap, "corp-ca"), tenancyv1alpha1.SeedKindConfigMap, false},
		{mk(tenancyv1alpha1.SeedKindConfigMap, "corp-ca.v2"), tenancyv1alpha1.SeedKindConfigMap, true},
		{mk(tenancyv1alpha1.SeedKindSecret, "old"), tenancyv1alpha1.SeedKindSecret, true},
		{mk(tenancyv1alpha1.SeedKindConfigMap, "registry"), tenancyv1alpha1.SeedKindConfigMap, true},
		{mk(tenancyv1alpha1.SeedKindSecret, "old"), tenancyv1alpha1.SeedKindConfigMap, false},
	}
	for i, tc := range cases {
		if got := Stale(tc.obj, tc.kind, c); got != tc.want {
			t.Errorf("case %d (%s %s): got %v, want %v", i, tc.kind, tc.obj.GetName(), got, tc.want)
		}
	}
}

// TestPullSecrets: only Secrets attached by the class, copyable or already copied, and the default
// ServiceAccount only for TenantAndDefault.
func TestPullSecrets(t *testing.T) {
	src := secret("a", corev1.SecretTypeDockerConfigJson)
	rs := []Resolved{
		{Seed: tenancyv1alpha1.Seed{Kind: tenancyv1alpha1.SeedKindSecret, Name: "a", ImagePullSecret: tenancyv1alpha1.ImagePullTenant}, Source: src},
		{Seed: tenancyv1alpha1.Seed{Kind: tenancyv1alpha1.SeedKindSecret, Name: "b", As: "bb", ImagePullSecret: tenancyv1alpha1.ImagePullTenantAndDefault}, Source: src},
		{Seed: tenancyv1alpha1.Seed{Kind: tenancyv1alpha1.SeedKindSecret, Name: "c", ImagePullSecret: tenancyv1alpha1.ImagePullTenant}},
		{Seed: tenancyv1alpha1.Seed{Kind: tenancyv1alpha1.SeedKindSecret, Name: "d", ImagePullSecret: tenancyv1alpha1.ImagePullTenantAndDefault}},
		{Seed: tenancyv1alpha1.Seed{Kind: tenancyv1alpha1.SeedKindSecret, Name: "e"}, Source: src},
		{Seed: tenancyv1alpha1.Seed{Kind: tenancyv1alpha1.SeedKindConfigMap, Name: "f", ImagePullSecret: tenancyv1alpha1.ImagePullTenant}, Source: configMap("f")},
	}
	kept := map[string]bool{"d": true}
	if got := strings.Join(PullSecrets(rs, kept, false), ","); got != "a,bb,d" {
		t.Fatalf("tenant: got %s", got)
	}
	if got := strings.Join(PullSecrets(rs, kept, true), ","); got != "bb,d" {
		t.Fatalf("default: got %s", got)
	}
	// The record of where each copy is listed reads back as what PullSecrets gave the `default` one.
	status := make([]tenancyv1alpha1.SeedStatus, 0, len(rs))
	for _, r := range rs {
		o := tenancyv1alpha1.SeedStatus{Kind: r.Seed.Kind, Name: r.Target()}
		if r.Source != nil || kept[r.Target()] {
			o.SourceUID = "uid-" + r.Target()
		}
		o.ImagePullSecret = ListedOn(r, o)
		status = append(status, o)
	}
	listed := make([]string, 0, len(status))
	for _, o := range status {
		listed = append(listed, o.Name+"="+string(o.ImagePullSecret))
	}
	if got := strings.Join(listed, ","); got != "a=Tenant,bb=TenantAndDefault,c=,d=TenantAndDefault,e=,f=" {
		t.Fatalf("ListedOn: got %s", got)
	}
	if got := strings.Join(ListedOnDefault(status), ","); got != strings.Join(PullSecrets(rs, kept, true), ",") {
		t.Fatalf("ListedOnDefault: got %s", got)
	}
}

// TestCondition: SeedsSynced and whether it holds Ready back: only a required seed, only before the
// claim was first Ready.
func TestCondition(t *testing.T) {
	ok := tenancyv1alpha1.SeedStatus{Kind: tenancyv1alpha1.SeedKindSecret, Name: "a", Reason: tenancyv1alpha1.SeedsSyncedReason}
	missing := tenancyv1alpha1.SeedStatus{Kind: tenancyv1alpha1.SeedKindSecret, Name: "b", Reason: tenancyv1alpha1.SeedSourceNotFoundReason}
	cases := []struct {
		name       string
		outcomes   []tenancyv1alpha1.SeedStatus
		required   []bool
		wasReady   bool
		wantStatus metav1.ConditionStatus
		wantReason string
		wantBlocks bool
	}{
		{name: "all synced", outcomes: []tenancyv1alpha1.SeedStatus{ok}, required: []bool{true}, wantStatus: metav1.ConditionTrue, wantReason: tenancyv1alpha1.SeedsSyncedReason},
		{name: "missing, optional", outcomes: []tenancyv1alpha1.SeedStatus{ok, missing}, required: []bool{true, false}, wantStatus: metav1.ConditionFalse, wantReason: tenancyv1alpha1.SeedSourceNotFoundReason},
		{name: "missing, required, new claim", outcomes: []tenancyv1alpha1.SeedStatus{missing}, required: []bool{true}, wantStatus: metav1.ConditionFalse, wantReason: tenancyv1alpha1.SeedSourceNotFoundReason, wantBlocks: true},
		{name: "missing, required, claim was Ready", outcomes: []tenancyv1alpha1.SeedStatus{missing}, required: []bool{true}, wasReady: true, wantStatus: metav1.ConditionFalse, wantReason: tenancyv1alpha1.SeedSourceNotFoundReason},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			msgs := make([]string, len(tc.outcomes))
			for i, o := range tc.outcomes {
				msgs[i] = "seed " + o.Name
			}
			c, blocks := Condition(tc.outcomes, msgs, tc.required, tc.wasReady, 3)
			if c.Status != tc.wantStatus || c.Reason != tc.wantReason || blocks != tc.wantBlocks || c.ObservedGeneration != 3 {
				t.Fatalf("got %s %s blocks=%v gen=%d, want %s %s blocks=%v", c.Status, c.Reason, blocks, c.ObservedGeneration, tc.wantStatus, tc.wantReason, tc.wantBlocks)
			}
			if tc.wantStatus == metav1.ConditionFalse && !strings.Contains(c.Message, tc.wantReason+": seed b") {
				t.Fatalf("message %q does not name the seed and its reason", c.Message)
			}
		})
	}
}
