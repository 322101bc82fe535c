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

package fleet

import (
	"regexp"
	"strings"
	"testing"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
)

var dnsLabel = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

func TestMirrorName(t *testing.T) {
	cases := []struct{ ns, name string }{
		{"ci", "pr-1"}, {"ci-pr", "1"}, {"ci", strings.Repeat("a", 63)}, {"team-" + strings.Repeat("b", 58), "x"},
	}
	seen := map[string]bool{}
	for _, tc := range cases {
		got := MirrorName(tc.ns, tc.name)
		if len(got) > 63 || !dnsLabel.MatchString(got) {
			t.Errorf("MirrorName(%q, %q) = %q: not a DNS-1123 label of at most 63", tc.ns, tc.name, got)
		}
		if seen[got] {
			t.Errorf("MirrorName(%q, %q) = %q collides", tc.ns, tc.name, got)
		}
		seen[got] = true
	}
	// The claim's name and the first 4 bytes of sha256("ci/pr-1"): stable across hub restarts.
	if got := MirrorName("ci", "pr-1"); got != "pr-1-ec50ab1c" {
		t.Errorf("MirrorName(ci, pr-1) = %q, want pr-1-ec50ab1c", got)
	}
}

func hubClaim() *tenancyv1alpha1.NamespaceClaim {
	return &tenancyv1alpha1.NamespaceClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "pr-1", Namespace: "ci", UID: "u-1", Generation: 3},
		Spec: tenancyv1alpha1.NamespaceClaimSpec{ClassName: "ci", NamespaceName: "pr-1", TTL: &metav1.Duration{Duration: time.Hour},
			Labels: map[string]string{"branch": "x"}, CredentialsSecretName: "mine", PreferredCluster: "m1"},
		Status: tenancyv1alpha1.NamespaceClaimStatus{Cluster: "m2", ClassName: "ci"},
	}
}

func TestDesiredMirror(t *testing.T) {
	c := hubClaim()
	m := desiredMirror(c, "nsclaim-fleet")
	if m.Namespace != "nsclaim-fleet" || m.Name != MirrorName("ci", "pr-1") || m.Labels[HubClaimUIDLabel] != "u-1" || m.Annotations[HubClaimAnnotation] != "ci/pr-1" {
		t.Errorf("mirror metadata = %+v", m.ObjectMeta)
	}
	if m.Spec.ClassName != "ci" || m.Spec.NamespaceName != "pr-1" || m.Spec.TTL.Duration != time.Hour || m.Spec.Labels["branch"] != "x" {
		t.Errorf("mirror spec = %+v", m.Spec)
	}
	if m.Spec.CredentialsSecretName != "" || m.Spec.PreferredCluster != "" || m.Spec.Creator != nil {
		t.Errorf("mirror carries hub-only fields: %+v", m.Spec)
	}
	c.Spec.Labels["branch"] = "changed"
	if m.Spec.Labels["branch"] != "x" {
		t.Error("mirror shares the hub claim's label map")
	}
	drifted := desiredMirror(c, "nsclaim-fleet")
	if !mirrorDrift(m, drifted) || mirrorDrift(m, m.DeepCopy()) {
		t.Error("mirrorDrift does not see a label change, or sees one where there is none")
	}
}

func TestStatusFromMirror(t *testing.T) {
	hub := hubClaim()
	setCondition(&hub.Status, 3, tenancyv1alpha1.ClusterReachableCondition, metav1.ConditionFalse, tenancyv1alpha1.ClusterUnreachableReason, "away")
	mirror := &tenancyv1alpha1.NamespaceClaim{ObjectMeta: metav1.ObjectMeta{Generation: 1}, Status: tenancyv1alpha1.NamespaceClaimStatus{
		ObservedGeneration: 1, Namespace: "pr-1", CredentialsSecretName: "pr-1-abc-kubeconfig", Phase: tenancyv1alpha1.ClaimPhaseIdle,
		Conditions: []metav1.Condition{{Type: tenancyv1alpha1.ReadyCondition, Status: metav1.ConditionTrue, Reason: tenancyv1alpha1.ProvisionedReason, ObservedGeneration: 1}},
	}}
	st := statusFromMirror(hub, mirror, "mine")
	if st.Cluster != "m2" || st.Namespace != "pr-1" || st.CredentialsSecretName != "mine" || st.Phase != tenancyv1alpha1.ClaimPhaseIdle || st.ObservedGeneration != 3 {
		t.Errorf("status = %+v", st)
	}
	if r := apimeta.FindStatusCondition(st.Conditions, tenancyv1alpha1.ReadyCondition); r == nil || r.ObservedGeneration != 3 || r.Status != metav1.ConditionTrue {
		t.Errorf("Ready = %+v", r)
	}
	if r := apimeta.FindStatusCondition(st.Conditions, tenancyv1alpha1.ClusterReachableCondition); r == nil || r.Status != metav1.ConditionTrue || r.Reason != tenancyv1alpha1.ReachableReason {
		t.Errorf("ClusterReachable = %+v", r)
	}
	mirror.Generation = 2
	if st := statusFromMirror(hub, mirror, ""); st.ObservedGeneration != 0 || st.CredentialsSecretName != "" {
		t.Errorf("a mirror not done with its generation: observedGeneration %d, secret %q", st.ObservedGeneration, st.CredentialsSecretName)
	}
}
