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
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
)

func TestOrphan(t *testing.T) {
	live := hubClaim()
	mirror := func(mut func(*tenancyv1alpha1.NamespaceClaim)) *tenancyv1alpha1.NamespaceClaim {
		m := desiredMirror(live, "nsclaim-fleet")
		if mut != nil {
			mut(m)
		}
		return m
	}
	replaced := hubClaim()
	replaced.UID = "u-2"
	now := metav1.Now()
	cases := []struct {
		name   string
		mirror *tenancyv1alpha1.NamespaceClaim
		member string
		hub    *tenancyv1alpha1.NamespaceClaim
		want   bool
	}{
		{"its hub claim is there", mirror(nil), "m2", live, false},
		{"its hub claim is gone", mirror(nil), "m2", nil, true},
		{"its hub claim was replaced by another of that name", mirror(nil), "m2", replaced, true},
		{"the record names another member", mirror(nil), "m1", nil, false},
		{"no cluster in the record (not the hub's, or older)", mirror(func(m *tenancyv1alpha1.NamespaceClaim) { delete(m.Annotations, ClusterAnnotation) }), "m2", nil, false},
		{"no hub claim UID", mirror(func(m *tenancyv1alpha1.NamespaceClaim) { m.Labels = nil }), "m2", nil, false},
		{"no hub claim name", mirror(func(m *tenancyv1alpha1.NamespaceClaim) { m.Annotations[HubClaimAnnotation] = "pr-1" }), "m2", nil, false},
		{"a hub claim name with no name", mirror(func(m *tenancyv1alpha1.NamespaceClaim) { m.Annotations[HubClaimAnnotation] = "ci/" }), "m2", nil, false},
		{"a hub claim name of three parts", mirror(func(m *tenancyv1alpha1.NamespaceClaim) { m.Annotations[HubClaimAnnotation] = "ci/pr-1/x" }), "m2", nil, false},
		{"already being deleted", mirror(func(m *tenancyv1alpha1.NamespaceClaim) { m.DeletionTimestamp = &now }), "m2", nil, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := orphan(tc.mirror, tc.member, tc.hub); got != tc.want {
				t.Errorf("orphan = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestMirrorRecordsItsCluster(t *testing.T) {
	m := desiredMirror(hubClaim(), "nsclaim-fleet")
	if m.Annotations[ClusterAnnotation] != "m2" || m.Annotations[HubClaimAnnotation] != "ci/pr-1" || m.Labels[HubClaimUIDLabel] != "u-1" {
		t.Errorf("the mirror's ownership record is %v %v, want cluster m2, hub claim ci/pr-1, uid u-1", m.Annotations, m.Labels)
	}
	older := m.DeepCopy()
	delete(older.Annotations, ClusterAnnotation)
	if !mirrorDrift(older, m) {
		t.Errorf("a mirror without the cluster in its record is not brought up to date")
	}
}
