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

package invariants

import (
	"path/filepath"
	"strings"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
	"github.com/nsclaim/nsclaim-operator/internal/claimpolicy"
	"github.com/nsclaim/nsclaim-operator/internal/credentials"
	"github.com/nsclaim/nsclaim-operator/internal/testenv"
)

// startEnvtest starts envtest's kube-apiserver and etcd from KUBEBUILDER_ASSETS with nsclaim's CRDs
// and returns an admin client. Without KUBEBUILDER_ASSETS, or if the control plane does not start, the
// test is skipped with the reason, or fails if NSCLAIM_REQUIRE_ENVTEST is set (make test-unit sets it).
func startEnvtest(t *testing.T) client.Client {
	t.Helper()
	cfg := testenv.Start(t, &envtest.Environment{
		CRDDirectoryPaths:     []string{filepath.Join("..", "..", "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
	})
	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(tenancyv1alpha1.AddToScheme(scheme))
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// fixture writes, as the operator would, a class, a requester namespace and one Ready claim with its
// namespace, children and credentials Secret (holding a real token of the tenant ServiceAccount).
type fixture struct {
	t     *testing.T
	c     client.Client
	claim *tenancyv1alpha1.NamespaceClaim
	ns    string
}

func newFixture(t *testing.T, c client.Client) *fixture {
	t.Helper()
	ctx := t.Context()
	f := &fixture{t: t, c: c}
	class := &tenancyv1alpha1.NamespaceClass{ObjectMeta: metav1.ObjectMeta{Name: "ci"}, Spec: tenancyv1alpha1.NamespaceClassSpec{
		ClusterRole:   "edit",
		Naming:        tenancyv1alpha1.NamingSpec{Prefix: "ci-"},
		NetworkPolicy: tenancyv1alpha1.NetworkPolicyDenyFromOtherNamespaces,
		ResourceQuota: &corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("10")}},
	}}
	f.create(class)
	f.create(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "pipelines"}})
	f.claim = &tenancyv1alpha1.NamespaceClaim{ObjectMeta: metav1.ObjectMeta{Name: "build", Namespace: "pipelines"},
		Spec: tenancyv1alpha1.NamespaceClaimSpec{ClassName: class.Name}}
	f.create(f.claim)
	f.ns = "ci-build"
	d := claimpolicy.Build(f.ns, claimpolicy.OwnerOf(f.claim), class, nil)
	f.create(d.Namespace)
	f.create(d.ServiceAccount)
	for _, rb := range d.RoleBindings {
		f.create(rb)
	}
	f.create(d.ResourceQuota)
	f.create(d.NetworkPolicy)

	tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}
	if err := c.SubResource("token").Create(ctx, d.ServiceAccount, tr); err != nil {
		t.Fatalf("requesting a token: %v", err)
	}
	f.create(f.secret(credentials.SecretName(f.claim.Name), string(f.claim.UID), tr.Status.Token))

	f.claim.Status = tenancyv1alpha1.NamespaceClaimStatus{
		ClassName: class.Name, Namespace: f.ns, CredentialsSecretName: credentials.SecretName(f.claim.Name),
		TokenServiceAccountUID: string(d.ServiceAccount.UID),
		ObservedGeneration:     f.claim.Generation, Phase: tenancyv1alpha1.ClaimPhaseIdle,
	}
	for _, t := range []string{tenancyv1alpha1.ReadyCondition, tenancyv1alpha1.NamespaceReadyCondition, tenancyv1alpha1.PermissionsVerifiedCondition,
		tenancyv1alpha1.CredentialsReadyCondition} {
		meta.SetStatusCondition(&f.claim.Status.Conditions, metav1.Condition{Type: t, Status: metav1.ConditionTrue,
			Reason: tenancyv1alpha1.ProvisionedReason, Message: "provisioned", ObservedGeneration: f.claim.Generation})
	}
	if err := c.Status().Update(ctx, f.claim); err != nil {
		t.Fatalf("writing the claim's status: %v", err)
	}
	return f
}

// writeStatus writes the fixture claim's status as it is in f.claim.
func (f *fixture) writeStatus() {
	f.t.Helper()
	if err := f.c.Status().Update(f.t.Context(), f.claim); err != nil {
		f.t.Fatalf("writing the claim's status: %v", err)
	}
}

// with returns the fixture for subtest t.
func (f *fixture) with(t *testing.T) *fixture {
	g := *f
	g.t = t
	return &g
}

func (f *fixture) create(obj client.Object) {
	f.t.Helper()
	if err := f.c.Create(f.t.Context(), obj); err != nil {
		f.t.Fatalf("creating %T %s: %v", obj, obj.GetName(), err)
	}
}

func (f *fixture) delete(obj client.Object) {
	f.t.Helper()
	if err := f.c.Delete(f.t.Context(), obj); err != nil {
		f.t.Fatalf("deleting %T %s: %v", obj, obj.GetName(), err)
	}
}

// secret is a credentials Secret in the claim's namespace marked for claim-uid uid.
func (f *fixture) secret(name, uid, token string) *corev1.Secret {
	o := claimpolicy.OwnerOf(f.claim)
	o.UID = uid
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: f.claim.Namespace,
		Labels: claimpolicy.OwnershipLabels(o), Annotations: claimpolicy.OwnershipAnnotations(o)},
		Data: map[string][]byte{"token": []byte(token)}}
}

// expect runs Check and requires exactly one violation per fragment, each containing its fragment.
func (f *fixture) expect(o Options, fragments ...string) {
	f.t.Helper()
	got, err := Check(f.t.Context(), f.c, o)
	if err != nil {
		f.t.Fatalf("Check: %v", err)
	}
	if len(got) != len(fragments) {
		f.t.Fatalf("Check(%+v): got %d violations %q, want %d containing %q", o, len(got), got, len(fragments), fragments)
	}
	for _, frag := range fragments {
		found := false
		for _, v := range got {
			found = found || strings.Contains(v, frag)
		}
		if !found {
			f.t.Errorf("Check(%+v): no violation contains %q: %q", o, frag, got)
		}
	}
}

// TestCheck writes a cluster as the operator leaves it (no operator runs), checks that every invariant
// holds, then breaks one at a time and checks that exactly that violation is reported and goes away
// with the repair. envtest has no kube-controller-manager: a deleted namespace stays terminating.
func TestCheck(t *testing.T) {
	c := startEnvtest(t)
	f := newFixture(t, c)
	all := Options{Settled: true, Tokens: true}
	f.expect(all)

	t.Run("a namespace without its claim, until it terminates", func(t *testing.T) {
		f := f.with(t)
		o := claimpolicy.OwnerOf(f.claim)
		o.UID = "0000-gone"
		orphan := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ci-orphan", Labels: claimpolicy.OwnershipLabels(o), Annotations: claimpolicy.OwnershipAnnotations(o)}}
		f.create(orphan)
		f.expect(Options{}, "namespace ci-orphan (claim-uid \"0000-gone\") belongs to no claim")
		f.delete(orphan)
		f.expect(all)
	})
	t.Run("a claim with two namespaces", func(t *testing.T) {
		f := f.with(t)
		o := claimpolicy.OwnerOf(f.claim)
		second := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ci-build-2", Labels: claimpolicy.OwnershipLabels(o), Annotations: claimpolicy.OwnershipAnnotations(o)}}
		f.create(second)
		f.expect(Options{}, "claim pipelines/build has 2 namespaces: [ci-build ci-build-2]")
		f.delete(second)
		f.expect(all)
	})
	t.Run("a credentials Secret without its claim", func(t *testing.T) {
		f := f.with(t)
		s := f.secret("stale-kubeconfig", "0000-gone", "x")
		f.create(s)
		f.expect(Options{}, "Secret pipelines/stale-kubeconfig (claim-uid \"0000-gone\") belongs to no claim")
		f.delete(s)
		f.expect(all)
	})
	t.Run("a child outside its claim's namespace", func(t *testing.T) {
		f := f.with(t)
		o := claimpolicy.OwnerOf(f.claim)
		rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "nsclaim-tenant", Namespace: "pipelines",
			Labels: claimpolicy.OwnershipLabels(o), Annotations: claimpolicy.OwnershipAnnotations(o)},
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"}}
		f.create(rb)
		f.expect(Options{}, "RoleBinding pipelines/nsclaim-tenant is in namespace pipelines, which belongs to no claim")
		f.delete(rb)
		f.expect(all)
	})
	t.Run("settled: a missing child", func(t *testing.T) {
		f := f.with(t)
		q := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: claimpolicy.ResourceQuotaName, Namespace: f.ns}}
		f.delete(q)
		f.expect(Options{})
		f.expect(Options{Settled: true}, "claim pipelines/build: namespace ci-build holds ResourceQuotas [], want [nsclaim-quota]")
		class := &tenancyv1alpha1.NamespaceClass{}
		if err := c.Get(t.Context(), client.ObjectKey{Name: "ci"}, class); err != nil {
			t.Fatal(err)
		}
		f.create(claimpolicy.Build(f.ns, claimpolicy.OwnerOf(f.claim), class, nil).ResourceQuota)
		f.expect(all)
	})
	t.Run("settled: a token that does not authenticate", func(t *testing.T) {
		f := f.with(t)
		s := &corev1.Secret{}
		if err := c.Get(t.Context(), client.ObjectKey{Namespace: f.claim.Namespace, Name: f.claim.Status.CredentialsSecretName}, s); err != nil {
			t.Fatal(err)
		}
		good := s.Data["token"]
		s.Data["token"] = []byte("not-a-token")
		if err := c.Update(t.Context(), s); err != nil {
			t.Fatal(err)
		}
		f.expect(Options{Settled: true})
		f.expect(all, "claim pipelines/build: the token in its Secret authenticates as \"\"")
		s.Data["token"] = good
		if err := c.Update(t.Context(), s); err != nil {
			t.Fatal(err)
		}
		f.expect(all)
	})
	t.Run("settled: a Ready claim that does not keep Ready's promises", func(t *testing.T) {
		f := f.with(t)
		good := f.claim.Status.DeepCopy()
		meta.SetStatusCondition(&f.claim.Status.Conditions, metav1.Condition{Type: tenancyv1alpha1.PermissionsVerifiedCondition,
			Status: metav1.ConditionFalse, Reason: tenancyv1alpha1.MissingPermissionsReason, Message: "lacks", ObservedGeneration: f.claim.Generation})
		f.claim.Status.ObservedGeneration = f.claim.Generation - 1
		f.claim.Status.Phase = tenancyv1alpha1.ClaimPhaseSleeping
		f.writeStatus()
		f.expect(Options{})
		f.expect(Options{Settled: true},
			"claim pipelines/build is Ready but PermissionsVerified is not True",
			"claim pipelines/build is Ready for generation 1 (status.observedGeneration 0), its generation is 1",
			`claim pipelines/build is Ready in phase "Sleeping" (asleep: false)`)
		f.claim.Status = *good
		f.writeStatus()
		f.expect(all)
	})
	t.Run("settled: the claim's namespace terminates", func(t *testing.T) {
		f := f.with(t)
		f.delete(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: f.ns}})
		f.expect(Options{})
		f.expect(Options{Settled: true}, "claim pipelines/build has no live namespace (status.namespace \"ci-build\")")
	})
}
