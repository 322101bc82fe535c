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
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// The embedded copies must be byte-for-byte the files config/fence ships, and config/fence/base must
// ship nothing the operator does not check, except what it does not depend on (unchecked).
func TestEmbeddedManifestsMatchConfig(t *testing.T) {
	embeddedFiles := map[string][]byte{
		"policy.yaml": policyYAML, "binding.yaml": bindingYAML,
		"label-guard.yaml": labelGuardYAML, "label-guard-binding.yaml": labelGuardBindingYAML,
		"stamp-creator.yaml": stampYAML, "stamp-creator-binding.yaml": stampBindingYAML,
	}
	// Shipped but deliberately not checked: the operator does not depend on them.
	unchecked := map[string]bool{
		// The finalizer at CREATE saves a request; the operator adds the finalizer itself when missing.
		"add-finalizer.yaml": true, "add-finalizer-binding.yaml": true,
		// The sleep rights ship with the fence so that they reach the cluster only with the rule that
		// confines them (TestUpgradeOpensNoRights); without them sleep is refused by RBAC, and the
		// operator sleeps nothing until this release's fence is intact anyway.
		"sleep-role.yaml": true, "sleep-role-binding.yaml": true,
	}
	kustomization, err := os.ReadFile(filepath.Join("..", "..", "config", "fence", "base", "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(kustomization), "\n") {
		if name, ok := strings.CutPrefix(line, "- "); ok && strings.HasSuffix(name, ".yaml") && name != "kustomizeconfig.yaml" {
			if _, checked := embeddedFiles[name]; !checked && !unchecked[name] {
				t.Errorf("config/fence/base ships %s, which internal/fence does not embed and check", name)
			}
		}
	}
	for name, embedded := range embeddedFiles {
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
	g.Expect(want.LabelGuard.Name).To(Equal("nsclaim-operator-label-guard"))
	g.Expect(want.LabelGuardBinding.Name).To(Equal("nsclaim-operator-label-guard"))
	g.Expect(want.LabelGuardBinding.Spec.PolicyName).To(Equal(want.LabelGuard.Name))
	g.Expect(want.LabelGuardBinding.Spec.ValidationActions).To(ConsistOf(admissionregistrationv1.Deny))
	g.Expect(want.LabelGuard.Spec.FailurePolicy).To(Equal(ptr.To(admissionregistrationv1.Fail)))
	// The label guard matches everyone but the operator: the fence's condition, negated.
	g.Expect(want.LabelGuard.Spec.MatchConditions).To(HaveLen(1))
	g.Expect(want.LabelGuard.Spec.MatchConditions[0].Expression).To(Equal("!" + want.Policy.Spec.MatchConditions[0].Expression))
}

func TestCompare(t *testing.T) {
	want, err := Shipped()
	if err != nil {
		t.Fatal(err)
	}
	// live returns the shipped fence as the API server would return it, changed by mutate.
	live := func(mutate ...func(*Expected)) Expected {
		e := Expected{Policy: want.Policy.DeepCopy(), Binding: want.Binding.DeepCopy(),
			LabelGuard: want.LabelGuard.DeepCopy(), LabelGuardBinding: want.LabelGuardBinding.DeepCopy()}
		e.Policy.ResourceVersion, e.Policy.UID = "7", "uid"
		e.Binding.ResourceVersion = "8"
		e.LabelGuard.ResourceVersion = "9"
		for _, m := range mutate {
			m(&e)
		}
		return e
	}
	tests := []struct {
		name     string
		have     Expected
		problems []string
	}{
		{name: "intact, with server-side metadata and status", have: live(func(e *Expected) {
			e.Policy.Status.ObservedGeneration = 3
			e.Policy.Labels = map[string]string{"extra": "label"}
		})},
		{name: "all missing", have: Expected{}, problems: []string{
			"ValidatingAdmissionPolicy nsclaim-operator-fence is missing",
			"ValidatingAdmissionPolicyBinding nsclaim-operator-fence is missing",
			"ValidatingAdmissionPolicy nsclaim-operator-label-guard is missing",
			"ValidatingAdmissionPolicyBinding nsclaim-operator-label-guard is missing",
		}},
		{name: "binding missing", have: live(func(e *Expected) { e.Binding = nil }), problems: []string{
			"ValidatingAdmissionPolicyBinding nsclaim-operator-fence is missing",
		}},
		{name: "label guard missing", have: live(func(e *Expected) { e.LabelGuard, e.LabelGuardBinding = nil, nil }), problems: []string{
			"ValidatingAdmissionPolicy nsclaim-operator-label-guard is missing",
			"ValidatingAdmissionPolicyBinding nsclaim-operator-label-guard is missing",
		}},
		{name: "a validation removed", have: live(func(e *Expected) {
			e.Policy.Spec.Validations = e.Policy.Spec.Validations[1:]
		}), problems: []string{
			"ValidatingAdmissionPolicy nsclaim-operator-fence: spec.validations differs from the shipped fence",
		}},
		{name: "a validation weakened", have: live(func(e *Expected) {
			e.Policy.Spec.Validations[0].Expression = "true"
		}), problems: []string{
			"ValidatingAdmissionPolicy nsclaim-operator-fence: spec.validations differs from the shipped fence",
		}},
		{name: "the label guard weakened", have: live(func(e *Expected) {
			e.LabelGuard.Spec.Validations[0].Expression = "true"
		}), problems: []string{
			"ValidatingAdmissionPolicy nsclaim-operator-label-guard: spec.validations differs from the shipped fence",
		}},
		{name: "the label guard exempts everyone", have: live(func(e *Expected) {
			e.LabelGuard.Spec.MatchConditions[0].Expression = "false"
		}), problems: []string{
			"ValidatingAdmissionPolicy nsclaim-operator-label-guard: spec.matchConditions differs from the shipped fence",
		}},
		{name: "a match condition added that matches nothing", have: live(func(e *Expected) {
			e.Policy.Spec.MatchConditions = append(e.Policy.Spec.MatchConditions, admissionregistrationv1.MatchCondition{Name: "never", Expression: "false"})
		}), problems: []string{
			"ValidatingAdmissionPolicy nsclaim-operator-fence: spec.matchConditions differs from the shipped fence",
		}},
		{name: "a resource dropped from the match", have: live(func(e *Expected) {
			e.Policy.Spec.MatchConstraints.ResourceRules = e.Policy.Spec.MatchConstraints.ResourceRules[:1]
		}), problems: []string{
			"ValidatingAdmissionPolicy nsclaim-operator-fence: spec.matchConstraints differs from the shipped fence",
		}},
		{name: "namespaces excluded by selector", have: live(func(e *Expected) {
			e.Policy.Spec.MatchConstraints.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"x": "y"}}
		}), problems: []string{
			"ValidatingAdmissionPolicy nsclaim-operator-fence: spec.matchConstraints differs from the shipped fence",
		}},
		{name: "failure policy Ignore and a variable changed", have: live(func(e *Expected) {
			e.Policy.Spec.FailurePolicy = ptr.To(admissionregistrationv1.Ignore)
			e.Policy.Spec.Variables[0].Expression = "'x'"
		}), problems: []string{
			"ValidatingAdmissionPolicy nsclaim-operator-fence: spec.variables differs from the shipped fence",
			"ValidatingAdmissionPolicy nsclaim-operator-fence: spec.failurePolicy differs from the shipped fence",
		}},
		{name: "policy being deleted", have: live(func(e *Expected) {
			e.Policy.DeletionTimestamp = &metav1.Time{Time: time.Unix(1, 0)}
		}), problems: []string{
			"ValidatingAdmissionPolicy nsclaim-operator-fence is being deleted",
		}},
		{name: "binding only warns", have: live(func(e *Expected) {
			e.Binding.Spec.ValidationActions = []admissionregistrationv1.ValidationAction{admissionregistrationv1.Warn}
		}), problems: []string{
			"ValidatingAdmissionPolicyBinding nsclaim-operator-fence: spec.validationActions differs from the shipped fence",
		}},
		{name: "label guard binding only audits", have: live(func(e *Expected) {
			e.LabelGuardBinding.Spec.ValidationActions = []admissionregistrationv1.ValidationAction{admissionregistrationv1.Audit}
		}), problems: []string{
			"ValidatingAdmissionPolicyBinding nsclaim-operator-label-guard: spec.validationActions differs from the shipped fence",
		}},
		{name: "binding points elsewhere and narrows its match", have: live(func(e *Expected) {
			e.Binding.Spec.PolicyName = "other"
			e.Binding.Spec.MatchResources = &admissionregistrationv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"x": "y"}}}
		}), problems: []string{
			"ValidatingAdmissionPolicyBinding nsclaim-operator-fence: spec.policyName differs from the shipped fence",
			"ValidatingAdmissionPolicyBinding nsclaim-operator-fence: spec.matchResources differs from the shipped fence",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			got := Compare(want, tt.have)
			g.Expect(got.Problems).To(Equal(tt.problems))
			g.Expect(got.Intact).To(Equal(len(tt.problems) == 0))
		})
	}
}

// makeVar returns the value of `NAME ?= value` in the Makefile.
func makeVar(t *testing.T, name string) string {
	t.Helper()
	mk, err := os.ReadFile(filepath.Join("..", "..", "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(mk), "\n") {
		if v, ok := strings.CutPrefix(line, name+" ?= "); ok {
			return strings.TrimSpace(v)
		}
	}
	t.Fatalf("Makefile sets no %s", name)
	return ""
}

// TestShippedFenceIsThisRelease: every object of config/fence/base carries the VersionLabel of the
// Makefile's VERSION, so the fence.yaml of a release says which release it is.
func TestShippedFenceIsThisRelease(t *testing.T) {
	version := makeVar(t, "VERSION")
	want, err := Shipped()
	if err != nil {
		t.Fatal(err)
	}
	if want.Release != version {
		t.Errorf("the shipped fence is labelled %s=%s, the Makefile's VERSION is %s: relabel config/fence/base and copy it to internal/fence/manifests", VersionLabel, want.Release, version)
	}
	files, err := filepath.Glob(filepath.Join("..", "..", "config", "fence", "base", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	label := "    " + VersionLabel + `: "` + version + `"`
	for _, f := range files {
		if filepath.Base(f) == "kustomization.yaml" || filepath.Base(f) == "kustomizeconfig.yaml" {
			continue
		}
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(data), "\n"+label+"\n") {
			t.Errorf("%s does not carry the label %s", f, strings.TrimSpace(label))
		}
	}
}

// TestPreviousFenceIsThePreviousRelease: internal/fence/previous holds the Makefile's PREVIOUS_VERSION
// and, byte for byte, the checked files of config/fence/base at that release's commit
// (hack/releases.sh commit). Needs the repository's history (git).
func TestPreviousFenceIsThePreviousRelease(t *testing.T) {
	prev := makeVar(t, "PREVIOUS_VERSION")
	if got := strings.TrimSpace(previousVersion); got != prev {
		t.Fatalf("internal/fence/previous/VERSION is %s, the Makefile's PREVIOUS_VERSION is %s: copy that release's config/fence/base there", got, prev)
	}
	out, err := exec.Command(filepath.Join("..", "..", "hack", "releases.sh"), "commit", prev).Output()
	if err != nil {
		t.Fatalf("hack/releases.sh commit %s: %v (the test needs git and the repository's history)", prev, err)
	}
	commit := strings.TrimSpace(string(out))
	for name, embedded := range map[string][]byte{
		"policy.yaml": previousPolicyYAML, "binding.yaml": previousBindingYAML,
		"label-guard.yaml": previousLabelGuardYAML, "label-guard-binding.yaml": previousLabelGuardBindingYAML,
	} {
		shipped, err := exec.Command("git", "show", commit+":config/fence/base/"+name).Output()
		if err != nil {
			t.Fatalf("git show %s:config/fence/base/%s: %v", commit, name, err)
		}
		if string(shipped) != string(embedded) {
			t.Errorf("internal/fence/previous/%s differs from config/fence/base/%s of %s (%s)", name, name, prev, commit)
		}
	}
}
