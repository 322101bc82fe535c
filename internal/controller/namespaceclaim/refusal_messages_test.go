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
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
	"github.com/nsclaim/nsclaim-operator/internal/claimpolicy"
)

// TestRefusalMessagesNameAnAction: a refusal about an immutable field tells the requester to make a new
// claim (it cannot change the field), and never to set the field on this one.
func TestRefusalMessagesNameAnAction(t *testing.T) {
	held := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ci-a", Labels: map[string]string{
		tenancyv1alpha1.ManagedByLabel: tenancyv1alpha1.ManagedByValue, tenancyv1alpha1.ClaimNamespaceLabel: "other", tenancyv1alpha1.ClaimUIDLabel: "u1",
	}, Annotations: map[string]string{tenancyv1alpha1.ClaimNameAnnotation: "theirs"}}}
	foreign := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ci-a"}}
	claim := &tenancyv1alpha1.NamespaceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ci", Name: "pr-1"}}
	cases := []struct {
		name       string
		refusal    *claimpolicy.Refusal
		wantReason string
		want       []string
		notWant    []string
	}{
		{"namespace held by another claim", foreignNamespaceRefusal(held), tenancyv1alpha1.NamespaceTakenReason,
			[]string{"Delete this claim and create a new one with another spec.namespaceName", "cannot be changed"}, []string{"theirs", "other/"}},
		{"namespace not made by nsclaim", foreignNamespaceRefusal(foreign), tenancyv1alpha1.NamespaceConflictReason,
			[]string{"Delete this claim and create a new one", "another spec.namespaceName", "cannot be changed", "cluster admin"}, nil},
		{"credentials Secret not ours", claimpolicy.SecretConflict(claim.Namespace, "pr-1-kubeconfig"), tenancyv1alpha1.SecretConflictReason,
			[]string{"Secret ci/pr-1-kubeconfig", "Delete that Secret", "create a new one with another spec.credentialsSecretName", "cannot be changed"}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.refusal.Reason != tc.wantReason {
				t.Errorf("reason %s, want %s", tc.refusal.Reason, tc.wantReason)
			}
			for _, w := range tc.want {
				if !strings.Contains(tc.refusal.Message, w) {
					t.Errorf("message %q does not say %q", tc.refusal.Message, w)
				}
			}
			for _, w := range append([]string{"choose another spec.", "or set spec."}, tc.notWant...) {
				if strings.Contains(tc.refusal.Message, w) {
					t.Errorf("message %q says %q", tc.refusal.Message, w)
				}
			}
		})
	}
}
