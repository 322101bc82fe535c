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

// Package configmaprequest is the ConfigMap protocol (the shell operator nsplease's), whole: which
// ConfigMap names are requests, which token policy a request asks for, the NamespaceClaim that serves
// a request, the reconciler that makes it and reports back on the ConfigMap, the requests namespace,
// and the rules the claim reconciler applies to a request's claim, through one hook (Protocol's
// IsRequest, MayServe and OwnRequest).
package configmaprequest

import (
	"fmt"
	"regexp"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
	"github.com/nsclaim/nsclaim-operator/internal/claimpolicy"
)

// Defaults of the protocol, the shell operator's.
const (
	DefaultNamespace = "nsplease-requests"
	DefaultPatterns  = `^ci-commit-[0-9a-f]+$ ^ci-branch-[a-z0-9-]+$ ^nsp-[a-z0-9-]+$`
	DefaultIgnored   = "kube-root-ca.crt"
)

// Protocol is the configuration of the ConfigMap protocol.
type Protocol struct {
	// Namespace is where requests (ConfigMaps) and responses (Secrets) live; empty turns the protocol off.
	Namespace string
	// Patterns: a ConfigMap whose name matches one of them is a request.
	Patterns []*regexp.Regexp
	// Ignored names are skipped without a warning.
	Ignored []string
	// ClassName is the NamespaceClass of request claims; empty means the default class.
	ClassName string
	// DefaultTokenPolicy applies to requests without the token policy annotation.
	DefaultTokenPolicy string
}

// New parses the protocol's settings: patterns and ignored names are separated by spaces or commas.
func New(namespace, patterns, ignored, className, defaultTokenPolicy string) (Protocol, error) {
	p := Protocol{Namespace: namespace, Ignored: fields(ignored), ClassName: className, DefaultTokenPolicy: defaultTokenPolicy}
	if p.DefaultTokenPolicy == "" {
		p.DefaultTokenPolicy = tenancyv1alpha1.TokenPolicyMultipleTimes
	}
	if !claimpolicy.ValidTokenPolicy(p.DefaultTokenPolicy) {
		return Protocol{}, fmt.Errorf("default token policy %q: use %q or %q", defaultTokenPolicy, tenancyv1alpha1.TokenPolicyOnlyOnce, tenancyv1alpha1.TokenPolicyMultipleTimes)
	}
	for _, f := range fields(patterns) {
		re, err := regexp.Compile(f)
		if err != nil {
			return Protocol{}, fmt.Errorf("request name pattern %q: %w", f, err)
		}
		p.Patterns = append(p.Patterns, re)
	}
	if namespace != "" && len(p.Patterns) == 0 {
		return Protocol{}, fmt.Errorf("the ConfigMap protocol needs at least one request name pattern")
	}
	return p, nil
}

func fields(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return r == ' ' || r == ',' || r == '\n' || r == '\t' })
}

// Verdict is what a ConfigMap's name makes of it.
type Verdict int

const (
	// Request: the name matches a pattern.
	Request Verdict = iota
	// Ignored: the name is one to skip silently.
	Ignored
	// NotAllowed: the name matches no pattern; the ConfigMap gets a Warning Event and nothing else.
	NotAllowed
)

// Judge decides about a ConfigMap name.
func (p Protocol) Judge(name string) Verdict {
	for _, n := range p.Ignored {
		if n == name {
			return Ignored
		}
	}
	for _, re := range p.Patterns {
		if re.MatchString(name) {
			return Request
		}
	}
	return NotAllowed
}

// PatternList renders the patterns for messages.
func (p Protocol) PatternList() string {
	s := make([]string, len(p.Patterns))
	for i, re := range p.Patterns {
		s[i] = re.String()
	}
	return strings.Join(s, " ")
}

// TokenPolicy is the token policy a request asks for: its annotation, or the default.
func (p Protocol) TokenPolicy(cm *corev1.ConfigMap) (string, error) {
	v, err := claimpolicy.ParseTokenPolicy(cm.Annotations, p.DefaultTokenPolicy)
	if err != nil {
		return "", fmt.Errorf("%w; no namespace is created", err)
	}
	return v, nil
}

// Claim is the NamespaceClaim that serves request cm: named like it, next to it, asking for the
// namespace of the same name and for the credentials in the Secret of the same name. The caller makes
// cm its controller. It carries the claim finalizer from its creation, so the claim's reconciler has
// no finalizer to add.
func (p Protocol) Claim(cm *corev1.ConfigMap, policy string) *tenancyv1alpha1.NamespaceClaim {
	return &tenancyv1alpha1.NamespaceClaim{
		ObjectMeta: metav1.ObjectMeta{
			Name: cm.Name, Namespace: cm.Namespace,
			Finalizers:  []string{tenancyv1alpha1.ClaimFinalizer},
			Labels:      map[string]string{tenancyv1alpha1.RequestLabel: tenancyv1alpha1.RequestConfigMap},
			Annotations: map[string]string{tenancyv1alpha1.TokenPolicyAnnotation: policy},
		},
		Spec: tenancyv1alpha1.NamespaceClaimSpec{
			ClassName:             p.ClassName,
			NamespaceName:         cm.Name,
			CredentialsSecretName: cm.Name,
		},
	}
}

// IsRequest reports whether claim was made by the operator for a request ConfigMap in the requests
// namespace: it lives there, carries the request label and is controlled by a ConfigMap.
// Such a claim's namespace is named exactly after the request (the configured name patterns, not the
// class's prefix, govern the name), as the ConfigMap protocol requires.
func (p Protocol) IsRequest(claim *tenancyv1alpha1.NamespaceClaim) bool {
	if p.Namespace == "" || claim.Namespace != p.Namespace ||
		claim.Labels[tenancyv1alpha1.RequestLabel] != tenancyv1alpha1.RequestConfigMap {
		return false
	}
	ref := metav1.GetControllerOf(claim)
	return ref != nil && ref.Kind == "ConfigMap" && ref.APIVersion == "v1" && ref.Name == claim.Name
}
