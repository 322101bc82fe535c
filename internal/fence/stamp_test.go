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

package fence

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
)

func TestShippedStamp(t *testing.T) {
	g := NewWithT(t)
	want, err := ShippedStamp()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(want.Policy.Name).To(Equal(StampName))
	g.Expect(want.Binding.Name).To(Equal(StampName))
	g.Expect(want.Binding.Spec.PolicyName).To(Equal(StampName))
	g.Expect(want.Policy.Spec.FailurePolicy).To(Equal(ptr.To(admissionregistrationv1.Fail)))
	g.Expect(want.Policy.Spec.Mutations).To(HaveLen(1))
	// A JSON patch replaces spec.creator whole; an apply configuration would merge a forged extra in.
	g.Expect(want.Policy.Spec.Mutations[0].PatchType).To(Equal(admissionregistrationv1.PatchTypeJSONPatch))
}

func TestCompareStamp(t *testing.T) {
	want, err := ShippedStamp()
	if err != nil {
		t.Fatal(err)
	}
	created := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	written := metav1.NewTime(created.Add(time.Hour))
	live := func(mut func(*Stamp)) Stamp {
		s := Stamp{Policy: want.Policy.DeepCopy(), Binding: want.Binding.DeepCopy()}
		s.Policy.CreationTimestamp, s.Binding.CreationTimestamp = created, created
		if mut != nil {
			mut(&s)
		}
		return s
	}
	cases := []struct {
		name string
		have Stamp
		want StampStatus
	}{
		{"as shipped", live(nil), StampStatus{Intact: true, InForceSince: created.Time}},
		{"binding written later", live(func(s *Stamp) {
			s.Binding.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubectl", Time: &written}}
		}), StampStatus{Intact: true, InForceSince: written.Time}},
		{"policy missing", live(func(s *Stamp) { s.Policy = nil }), StampStatus{Problems: []string{"MutatingAdmissionPolicy nsclaim-operator-stamp-creator is missing"}}},
		{"binding missing", live(func(s *Stamp) { s.Binding = nil }), StampStatus{Problems: []string{"MutatingAdmissionPolicyBinding nsclaim-operator-stamp-creator is missing"}}},
		{"mutation altered", live(func(s *Stamp) {
			s.Policy.Spec.Mutations[0].JSONPatch.Expression = "[]"
		}), StampStatus{Problems: []string{"MutatingAdmissionPolicy nsclaim-operator-stamp-creator: spec.mutations differs from the shipped fence"}}},
		{"match narrowed", live(func(s *Stamp) {
			s.Policy.Spec.MatchConditions = []admissionregistrationv1.MatchCondition{{Name: "x", Expression: "false"}}
		}), StampStatus{Problems: []string{"MutatingAdmissionPolicy nsclaim-operator-stamp-creator: spec.matchConditions differs from the shipped fence"}}},
		{"binding scoped", live(func(s *Stamp) {
			s.Binding.Spec.MatchResources = &admissionregistrationv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"a": "b"}}}
		}), StampStatus{Problems: []string{"MutatingAdmissionPolicyBinding nsclaim-operator-stamp-creator: spec.matchResources differs from the shipped fence"}}},
		{"policy being deleted", live(func(s *Stamp) { s.Policy.DeletionTimestamp = &written }),
			StampStatus{Problems: []string{"MutatingAdmissionPolicy nsclaim-operator-stamp-creator is being deleted"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			NewWithT(t).Expect(CompareStamp(want, tc.have)).To(Equal(tc.want))
		})
	}
}

// TestStampOnAPIServer installs the shipped stamp on a real kube-apiserver (envtest) with the
// NamespaceClaim CRD and creates claims as other users (impersonated): the API server records the
// creator, replacing a forged one whole (extra keys and groups included); an update of spec.creator is
// rejected; and CheckStamp, reading with only the marker's RBAC, finds the stamp intact, in force since
// it was created, and then missing once its binding is deleted.
func TestStampOnAPIServer(t *testing.T) {
	env, cfg := startEnvtestWithCRDs(t)
	g := NewWithT(t)
	ctx := context.Background()
	sch := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(sch))
	utilruntime.Must(tenancyv1alpha1.AddToScheme(sch))
	admin, err := client.New(cfg, client.Options{Scheme: sch})
	g.Expect(err).NotTo(HaveOccurred())

	want, err := ShippedStamp()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(admin.Create(ctx, want.Policy.DeepCopy())).To(Succeed())
	g.Expect(admin.Create(ctx, want.Binding.DeepCopy())).To(Succeed())

	// The requester may create claims, nothing else.
	g.Expect(admin.Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "claimer"}, Rules: []rbacv1.PolicyRule{{
		APIGroups: []string{tenancyv1alpha1.GroupVersion.Group}, Resources: []string{"namespaceclaims"}, Verbs: []string{"create", "get", "update", "patch"}}}})).To(Succeed())
	g.Expect(admin.Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "claimer"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "claimer"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "ci:org/app"}}})).To(Succeed())
	imp := rest.CopyConfig(cfg)
	imp.Impersonate = rest.ImpersonationConfig{UserName: "ci:org/app", UID: "u-1", Groups: []string{"ci:org", "system:authenticated"},
		Extra: map[string][]string{"ci.example/run": {"42"}}}
	requester, err := client.New(imp, client.Options{Scheme: sch})
	g.Expect(err).NotTo(HaveOccurred())

	forged := &tenancyv1alpha1.NamespaceClaim{ObjectMeta: metav1.ObjectMeta{Name: "forged", Namespace: "default"},
		Spec: tenancyv1alpha1.NamespaceClaimSpec{Creator: &tenancyv1alpha1.ClaimCreator{Username: "admin", UID: "x",
			Groups: []string{"system:masters"}, Extra: map[string][]string{"forged.example/key": {"v"}, "ci.example/run": {"1"}}}}}
	// The policy takes a moment to reach the admission plugin after it is created.
	probes := 0
	g.Eventually(func(g Gomega) {
		probes++
		c := forged.DeepCopy()
		c.Name = fmt.Sprintf("probe-%d", probes)
		g.Expect(requester.Create(ctx, c)).To(Succeed())
		g.Expect(c.Spec.Creator).NotTo(BeNil())
		g.Expect(c.Spec.Creator.Username).To(Equal("ci:org/app"))
	}).WithTimeout(20 * time.Second).Should(Succeed())

	g.Expect(requester.Create(ctx, forged)).To(Succeed())
	got := &tenancyv1alpha1.NamespaceClaim{}
	g.Expect(admin.Get(ctx, client.ObjectKeyFromObject(forged), got)).To(Succeed())
	g.Expect(got.Spec.Creator).To(Equal(&tenancyv1alpha1.ClaimCreator{Username: "ci:org/app", UID: "u-1",
		Groups: []string{"ci:org", "system:authenticated"}, Extra: map[string][]string{"ci.example/run": {"42"}}}))

	// A claim sent without spec is stamped too.
	bare := &tenancyv1alpha1.NamespaceClaim{ObjectMeta: metav1.ObjectMeta{Name: "bare", Namespace: "default"}}
	g.Expect(requester.Create(ctx, bare)).To(Succeed())
	g.Expect(bare.Spec.Creator).NotTo(BeNil())
	g.Expect(bare.Spec.Creator.Username).To(Equal("ci:org/app"))

	// Editing the stamp afterwards is rejected by the CRD's rule.
	got.Spec.Creator.Username = "admin"
	err = requester.Update(ctx, got)
	g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "%v", err)
	g.Expect(err.Error()).To(ContainSubstring("creator is recorded by the API server"))

	// CheckStamp with the marker's RBAC only.
	g.Expect(admin.Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "stamp-reader"}, Rules: []rbacv1.PolicyRule{{
		APIGroups: []string{admissionregistrationv1.GroupName}, Resources: []string{"mutatingadmissionpolicies", "mutatingadmissionpolicybindings"},
		ResourceNames: []string{StampName}, Verbs: []string{"get"}}}})).To(Succeed())
	g.Expect(admin.Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "stamp-reader"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "stamp-reader"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "stamp-reader"}}})).To(Succeed())
	user, err := env.AddUser(envtest.User{Name: "stamp-reader"}, cfg)
	g.Expect(err).NotTo(HaveOccurred())
	reader, err := client.New(user.Config(), client.Options{Scheme: sch})
	g.Expect(err).NotTo(HaveOccurred())
	policy := &admissionregistrationv1.MutatingAdmissionPolicy{}
	g.Expect(admin.Get(ctx, client.ObjectKey{Name: StampName}, policy)).To(Succeed())
	var st StampStatus
	g.Eventually(func(g Gomega) {
		st = CheckStamp(ctx, reader, want)
		g.Expect(st.Problems).To(BeEmpty())
	}).Should(Succeed())
	g.Expect(st.Intact).To(BeTrue())
	g.Expect(st.InForceSince).NotTo(BeTemporally("<", policy.CreationTimestamp.Time))
	g.Expect(forged.CreationTimestamp.Time).NotTo(BeTemporally("<", st.InForceSince))

	g.Expect(admin.Delete(ctx, want.Binding.DeepCopy())).To(Succeed())
	g.Expect(CheckStamp(ctx, reader, want)).To(Equal(StampStatus{Problems: []string{"MutatingAdmissionPolicyBinding nsclaim-operator-stamp-creator is missing"}}))
}

// startEnvtestWithCRDs is startEnvtest with nsclaim's CRDs installed.
func startEnvtestWithCRDs(t *testing.T) (*envtest.Environment, *rest.Config) {
	t.Helper()
	return startEnvtestWith(t, &envtest.Environment{CRDDirectoryPaths: []string{filepath.Join("..", "..", "config", "crd", "bases")}, ErrorIfCRDPathMissing: true})
}
