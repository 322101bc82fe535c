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

package configmaprequest

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
)

func TestJudge(t *testing.T) {
	p, err := New(DefaultNamespace, DefaultPatterns, DefaultIgnored, "", "")
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]Verdict{
		"ci-commit-0a1b2c":      Request,
		"ci-commit-0A1B":        NotAllowed, // upper case is not hex here, as in the shell operator
		"ci-branch-feature-x":   Request,
		"nsp-demo":              Request,
		"ci-branch-":            NotAllowed,
		"hello":                 NotAllowed,
		"default":               NotAllowed,
		"kube-root-ca.crt":      Ignored,
		"xci-commit-abc":        NotAllowed,
		"ci-commit-abc-suffix!": NotAllowed,
	} {
		if got := p.Judge(name); got != want {
			t.Errorf("Judge(%q) = %v, want %v", name, got, want)
		}
	}
}

func TestNewRejectsBadSettings(t *testing.T) {
	for _, tc := range []struct{ patterns, policy string }{
		{"^ci-[", ""},
		{"", ""},
		{DefaultPatterns, "twice"},
	} {
		if _, err := New(DefaultNamespace, tc.patterns, "", "", tc.policy); err == nil {
			t.Errorf("New(patterns %q, policy %q) accepted", tc.patterns, tc.policy)
		}
	}
	if _, err := New("", "", "", "", ""); err != nil {
		t.Errorf("an unset namespace turns the protocol off without patterns: %v", err)
	}
	p, err := New(DefaultNamespace, "^a-.*$, ^b-.*$", "x y", "", "")
	if err != nil || len(p.Patterns) != 2 || len(p.Ignored) != 2 {
		t.Errorf("comma and space separated settings: %+v, %v", p, err)
	}
}

func TestTokenPolicyAndClaim(t *testing.T) {
	p, _ := New(DefaultNamespace, DefaultPatterns, DefaultIgnored, "nsplease", tenancyv1alpha1.TokenPolicyOnlyOnce)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "nsp-a", Namespace: DefaultNamespace}}
	if got, err := p.TokenPolicy(cm); err != nil || got != tenancyv1alpha1.TokenPolicyOnlyOnce {
		t.Errorf("default policy: %q, %v", got, err)
	}
	cm.Annotations = map[string]string{tenancyv1alpha1.TokenPolicyAnnotation: tenancyv1alpha1.TokenPolicyMultipleTimes}
	if got, err := p.TokenPolicy(cm); err != nil || got != tenancyv1alpha1.TokenPolicyMultipleTimes {
		t.Errorf("annotated policy: %q, %v", got, err)
	}
	cm.Annotations[tenancyv1alpha1.TokenPolicyAnnotation] = "sometimes"
	if _, err := p.TokenPolicy(cm); err == nil {
		t.Error("an invalid policy is accepted")
	}
	c := p.Claim(cm, tenancyv1alpha1.TokenPolicyOnlyOnce)
	if c.Name != "nsp-a" || c.Namespace != DefaultNamespace || c.Spec.NamespaceName != "nsp-a" ||
		c.Spec.CredentialsSecretName != "nsp-a" || c.Spec.ClassName != "nsplease" ||
		c.Labels[tenancyv1alpha1.RequestLabel] != tenancyv1alpha1.RequestConfigMap ||
		c.Annotations[tenancyv1alpha1.TokenPolicyAnnotation] != tenancyv1alpha1.TokenPolicyOnlyOnce ||
		len(c.Finalizers) != 1 || c.Finalizers[0] != tenancyv1alpha1.ClaimFinalizer {
		t.Errorf("claim for request: %+v", c)
	}
}

func TestIsRequest(t *testing.T) {
	const requests = "nsclaim-requests"
	yes := true
	request := func(mut func(*tenancyv1alpha1.NamespaceClaim)) *tenancyv1alpha1.NamespaceClaim {
		c := &tenancyv1alpha1.NamespaceClaim{ObjectMeta: metav1.ObjectMeta{
			Name: "pr-1", Namespace: requests,
			Labels:          map[string]string{tenancyv1alpha1.RequestLabel: tenancyv1alpha1.RequestConfigMap},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "pr-1", UID: "cm", Controller: &yes}},
		}}
		if mut != nil {
			mut(c)
		}
		return c
	}
	tests := []struct {
		name              string
		claim             *tenancyv1alpha1.NamespaceClaim
		requestsNamespace string
		want              bool
	}{
		{"a request claim", request(nil), requests, true},
		{"the protocol is off", request(nil), "", false},
		{"another namespace", request(func(c *tenancyv1alpha1.NamespaceClaim) { c.Namespace = "team-a" }), requests, false},
		{"no label", request(func(c *tenancyv1alpha1.NamespaceClaim) { c.Labels = nil }), requests, false},
		{"other label value", request(func(c *tenancyv1alpha1.NamespaceClaim) { c.Labels[tenancyv1alpha1.RequestLabel] = "Secret" }), requests, false},
		{"no owner", request(func(c *tenancyv1alpha1.NamespaceClaim) { c.OwnerReferences = nil }), requests, false},
		{"owner not controller", request(func(c *tenancyv1alpha1.NamespaceClaim) { c.OwnerReferences[0].Controller = nil }), requests, false},
		{"controlled by a Secret", request(func(c *tenancyv1alpha1.NamespaceClaim) { c.OwnerReferences[0].Kind = "Secret" }), requests, false},
		{"controlled by a ConfigMap of another group", request(func(c *tenancyv1alpha1.NamespaceClaim) { c.OwnerReferences[0].APIVersion = "example.com/v1" }), requests, false},
		{"controlled by another ConfigMap", request(func(c *tenancyv1alpha1.NamespaceClaim) { c.OwnerReferences[0].Name = "pr-2" }), requests, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := (Protocol{Namespace: tt.requestsNamespace}).IsRequest(tt.claim); got != tt.want {
				t.Fatalf("IsRequest = %v, want %v", got, tt.want)
			}
		})
	}
}
