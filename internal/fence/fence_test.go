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
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// The embedded copies must be byte-for-byte the files config/fence ships.
func TestEmbeddedManifestsMatchConfig(t *testing.T) {
	for name, embedded := range map[string][]byte{"policy.yaml": policyYAML, "binding.yaml": bindingYAML} {
		shipped, err := os.ReadFile(filepath.Join("..", "..", "config", "fence", "base", name))
		if err != nil {
			t.Fatal(err)
		}
		if string(shipped) != string(embedded) {
			t.Errorf("internal/fence/manifests/%s differs from config/fence/base/%s: copy it over", name, name)
		}
	}
}

func TestShipped(t *testing.T) {
	g := NewWithT(t)
	want, err := Shipped()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(want.Policy.Name).To(Equal("nsclaim-operator-fence"))
	g.Expect(want.Binding.Name).To(Equal("nsclaim-operator-fence"))
	g.Expect(want.Binding.Spec.PolicyName).To(Equal(want.Policy.Name))
	g.Expect(want.Binding.Spec.ValidationActions).To(ConsistOf(admissionregistrationv1.Deny))
	g.Expect(want.Policy.Spec.FailurePolicy).To(Equal(ptr.To(admissionregistrationv1.Fail)))
	g.Expect(want.Policy.Spec.MatchConditions).To(HaveLen(1))
	g.Expect(want.Policy.Spec.Validations).NotTo(BeEmpty())
}

func TestCompare(t *testing.T) {
	want, err := Shipped()
	if err != nil {
		t.Fatal(err)
	}
	policy := func(mutate ...func(*admissionregistrationv1.ValidatingAdmissionPolicy)) *admissionregistrationv1.ValidatingAdmissionPolicy {
		p := want.Policy.DeepCopy()
		p.ResourceVersion, p.UID = "7", "uid"
		for _, m := range mutate {
			m(p)
		}
		return p
	}
	binding := func(mutate ...func(*admissionregistrationv1.ValidatingAdmissionPolicyBinding)) *admissionregistrationv1.ValidatingAdmissionPolicyBinding {
		b := want.Binding.DeepCopy()
		b.ResourceVersion = "8"
		for _, m := range mutate {
			m(b)
		}
		return b
	}
	tests := []struct {
		name     string
		policy   *admissionregistrationv1.ValidatingAdmissionPolicy
		binding  *admissionregistrationv1.ValidatingAdmissionPolicyBinding
		problems []string
	}{
		{name: "intact, with server-side metadata and status", policy: policy(func(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
			p.Status.ObservedGeneration = 3
			p.Labels = map[string]string{"extra": "label"}
		}), binding: binding()},
		{name: "both missing", problems: []string{
			"ValidatingAdmissionPolicy nsclaim-operator-fence is missing",
			"ValidatingAdmissionPolicyBinding nsclaim-operator-fence is missing",
		}},
		{name: "binding missing", policy: policy(), problems: []string{
			"ValidatingAdmissionPolicyBinding nsclaim-operator-fence is missing",
		}},
		{name: "a validation removed", policy: policy(func(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
			p.Spec.Validations = p.Spec.Validations[1:]
		}), binding: binding(), problems: []string{
			"ValidatingAdmissionPolicy nsclaim-operator-fence: spec.validations differs from the shipped fence",
		}},
		{name: "a validation weakened", policy: policy(func(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
			p.Spec.Validations[0].Expression = "true"
		}), binding: binding(), problems: []string{
			"ValidatingAdmissionPolicy nsclaim-operator-fence: spec.validations differs from the shipped fence",
		}},
		{name: "a match condition added that matches nothing", policy: policy(func(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
			p.Spec.MatchConditions = append(p.Spec.MatchConditions, admissionregistrationv1.MatchCondition{Name: "never", Expression: "false"})
		}), binding: binding(), problems: []string{
			"ValidatingAdmissionPolicy nsclaim-operator-fence: spec.matchConditions differs from the shipped fence",
		}},
		{name: "a resource dropped from the match", policy: policy(func(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
			p.Spec.MatchConstraints.ResourceRules = p.Spec.MatchConstraints.ResourceRules[:1]
		}), binding: binding(), problems: []string{
			"ValidatingAdmissionPolicy nsclaim-operator-fence: spec.matchConstraints differs from the shipped fence",
		}},
		{name: "namespaces excluded by selector", policy: policy(func(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
			p.Spec.MatchConstraints.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"x": "y"}}
		}), binding: binding(), problems: []string{
			"ValidatingAdmissionPolicy nsclaim-operator-fence: spec.matchConstraints differs from the shipped fence",
		}},
		{name: "failure policy Ignore and a variable changed", policy: policy(func(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
			p.Spec.FailurePolicy = ptr.To(admissionregistrationv1.Ignore)
			p.Spec.Variables[0].Expression = "'x'"
		}), binding: binding(), problems: []string{
			"ValidatingAdmissionPolicy nsclaim-operator-fence: spec.variables differs from the shipped fence",
			"ValidatingAdmissionPolicy nsclaim-operator-fence: spec.failurePolicy differs from the shipped fence",
		}},
		{name: "policy being deleted", policy: policy(func(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
			p.DeletionTimestamp = &metav1.Time{Time: time.Unix(1, 0)}
		}), binding: binding(), problems: []string{
			"ValidatingAdmissionPolicy nsclaim-operator-fence is being deleted",
		}},
		{name: "binding only warns", policy: policy(), binding: binding(func(b *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
			b.Spec.ValidationActions = []admissionregistrationv1.ValidationAction{admissionregistrationv1.Warn}
		}), problems: []string{
			"ValidatingAdmissionPolicyBinding nsclaim-operator-fence: spec.validationActions differs from the shipped fence",
		}},
		{name: "binding points elsewhere and narrows its match", policy: policy(), binding: binding(func(b *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
			b.Spec.PolicyName = "other"
			b.Spec.MatchResources = &admissionregistrationv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"x": "y"}}}
		}), problems: []string{
			"ValidatingAdmissionPolicyBinding nsclaim-operator-fence: spec.policyName differs from the shipped fence",
			"ValidatingAdmissionPolicyBinding nsclaim-operator-fence: spec.matchResources differs from the shipped fence",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			got := Compare(want, tt.policy, tt.binding)
			g.Expect(got.Problems).To(Equal(tt.problems))
			g.Expect(got.Intact).To(Equal(len(tt.problems) == 0))
		})
	}
}
