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

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
	"github.com/nsclaim/nsclaim-operator/internal/claimpolicy"
	"github.com/nsclaim/nsclaim-operator/internal/controller/namespaceclaim/children"
	"github.com/nsclaim/nsclaim-operator/internal/controller/namespaceclaim/fencegate"
)

func TestFenceDecision(t *testing.T) {
	tests := []struct {
		name    string
		checked bool
		problem string
		want    string
	}{
		{"not checked yet", false, "", tenancyv1alpha1.PendingReason},
		{"missing", true, "policy nsclaim-operator-fence not found", tenancyv1alpha1.FenceNotIntactReason},
		{"intact", true, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := fencegate.Decision(tt.checked, tt.problem)
			switch {
			case tt.want == "" && got != nil:
				t.Fatalf("got %v, want none", got)
			case tt.want != "" && (got == nil || got.Reason != tt.want):
				t.Fatalf("got %v, want %s", got, tt.want)
			}
		})
	}
}

func TestWaitForFence(t *testing.T) {
	readyClaim := func(gen, verifiedGen int64, ready bool) *tenancyv1alpha1.NamespaceClaim {
		st := metav1.ConditionFalse
		if ready {
			st = metav1.ConditionTrue
		}
		c := &tenancyv1alpha1.NamespaceClaim{ObjectMeta: metav1.ObjectMeta{Generation: gen}}
		c.Status.Conditions = []metav1.Condition{
			{Type: tenancyv1alpha1.ReadyCondition, Status: st, Reason: tenancyv1alpha1.ProvisionedReason},
			{Type: tenancyv1alpha1.PermissionsVerifiedCondition, Status: metav1.ConditionTrue, Reason: tenancyv1alpha1.VerifiedReason, ObservedGeneration: verifiedGen},
		}
		return c
	}
	pending := fencegate.Decision(false, "")
	broken := fencegate.Decision(true, "policy x not found")
	for _, tc := range []struct {
		name  string
		ref   *claimpolicy.Refusal
		claim *tenancyv1alpha1.NamespaceClaim
		want  bool
	}{
		{"Ready claim before the first check keeps its status", pending, readyClaim(2, 2, true), true},
		{"new claim before the first check is Pending", pending, &tenancyv1alpha1.NamespaceClaim{}, false},
		{"not Ready claim is Pending", pending, readyClaim(2, 2, false), false},
		{"Ready for an older generation is Pending", pending, readyClaim(3, 2, true), false},
		{"a fence found broken refuses even a Ready claim", broken, readyClaim(2, 2, true), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := fencegate.WaitFor(tc.ref, tc.claim); got != tc.want {
				t.Fatalf("fencegate.WaitFor = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestBlocksRepair(t *testing.T) {
	for reason, want := range map[string]bool{
		tenancyv1alpha1.ClassNotFoundReason:          true,
		tenancyv1alpha1.ClusterRoleNotBindableReason: true,
		tenancyv1alpha1.FenceNotIntactReason:         true,
		tenancyv1alpha1.PendingReason:                true,
		tenancyv1alpha1.TTLExceedsMaximumReason:      false,
		tenancyv1alpha1.LabelNotAllowedReason:        false,
		tenancyv1alpha1.InvalidTokenPolicyReason:     false,
		tenancyv1alpha1.ClassNotAllowedReason:        false,
	} {
		if got := blocksRepair(reason); got != want {
			t.Errorf("blocksRepair(%s) = %v, want %v", reason, got, want)
		}
	}
}

func TestBoundRoleField(t *testing.T) {
	class := &tenancyv1alpha1.NamespaceClass{Spec: tenancyv1alpha1.NamespaceClassSpec{ClusterRole: "edit",
		ExtraRoleBindings: []tenancyv1alpha1.ExtraRoleBinding{{Name: "a", ClusterRole: "view"}, {Name: "b", ClusterRole: "cluster-admin"}}}}
	d := claimpolicy.Build("ns", claimpolicy.Owner{Namespace: "r", Name: "c", UID: "u"}, class, nil)
	fields := claimpolicy.ClusterRoleFields(class)
	for name, want := range map[string]string{
		claimpolicy.TenantRoleBindingName:        "spec.clusterRole",
		claimpolicy.ExtraRoleBindingPrefix + "a": "spec.extraRoleBindings[0].clusterRole",
		claimpolicy.ExtraRoleBindingPrefix + "b": "spec.extraRoleBindings[1].clusterRole",
		claimpolicy.ReleaseRoleName:              "",
	} {
		var rb *rbacv1.RoleBinding
		for _, b := range d.RoleBindings {
			if b.Name == name {
				rb = b
			}
		}
		if rb == nil {
			t.Fatalf("no RoleBinding %s", name)
		}
		f, ok := children.BoundRoleField(rb, d.RoleBindings, fields)
		if want == "" {
			if ok {
				t.Errorf("%s: got field %s, want none (it binds a Role)", name, f.Field)
			}
			continue
		}
		if !ok || f.Field != want {
			t.Errorf("%s: got %q, want %q", name, f.Field, want)
		}
	}
}

func TestClassRefusal(t *testing.T) {
	class := &tenancyv1alpha1.NamespaceClass{ObjectMeta: metav1.ObjectMeta{Generation: 2}}
	set := func(gen int64, status metav1.ConditionStatus, reason string) {
		class.Status.ObservedGeneration = gen
		class.Status.Conditions = []metav1.Condition{{Type: tenancyv1alpha1.ReadyCondition, Status: status, Reason: reason, Message: "m"}}
	}
	set(2, metav1.ConditionFalse, tenancyv1alpha1.ClusterRoleNotBindableReason)
	if r := classRefusal(class); r == nil || r.Reason != tenancyv1alpha1.ClusterRoleNotBindableReason {
		t.Errorf("current False status: got %v", r)
	}
	set(1, metav1.ConditionFalse, tenancyv1alpha1.ClusterRoleNotBindableReason)
	if r := classRefusal(class); r != nil {
		t.Errorf("stale status refuses: %v", r)
	}
	set(2, metav1.ConditionTrue, tenancyv1alpha1.ValidReason)
	if r := classRefusal(class); r != nil {
		t.Errorf("True status refuses: %v", r)
	}
}
