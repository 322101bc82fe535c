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

package v1alpha1_test

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
)

// TestPlacementValidation: a class's spec.placement and a claim's spec.preferredCluster are checked by
// the API server (issue 46), and the strategy defaults to LeastAllocated.
func TestPlacementValidation(t *testing.T) {
	requireEnvtest(t)
	ctx := context.Background()
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{"region": "eu"}}
	classes := []struct {
		name      string
		placement *tenancyv1alpha1.PlacementSpec
		wantErr   string
	}{
		{name: "selector, cap and Packed", placement: &tenancyv1alpha1.PlacementSpec{ClusterSelector: sel, MaxClaimsPerCluster: 100, Strategy: tenancyv1alpha1.PlacementPacked}},
		{name: "empty placement", placement: &tenancyv1alpha1.PlacementSpec{}},
		{name: "unknown strategy", placement: &tenancyv1alpha1.PlacementSpec{Strategy: "Random"}, wantErr: "spec.placement.strategy"},
		{name: "negative cap", placement: &tenancyv1alpha1.PlacementSpec{MaxClaimsPerCluster: -1}, wantErr: "spec.placement.maxClaimsPerCluster"},
		{name: "cap too large", placement: &tenancyv1alpha1.PlacementSpec{MaxClaimsPerCluster: 100001}, wantErr: "spec.placement.maxClaimsPerCluster"},
		{name: "bad selector operator", placement: &tenancyv1alpha1.PlacementSpec{ClusterSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "a", Operator: "Near"}}}}},
	}
	for _, tc := range classes {
		t.Run("class "+tc.name, func(t *testing.T) {
			c := &tenancyv1alpha1.NamespaceClass{ObjectMeta: metav1.ObjectMeta{Name: name("placed")}, Spec: tenancyv1alpha1.NamespaceClassSpec{Placement: tc.placement}}
			check(t, k8s.Create(ctx, c), tc.wantErr)
		})
	}
	t.Run("strategy defaults to LeastAllocated", func(t *testing.T) {
		c := &tenancyv1alpha1.NamespaceClass{ObjectMeta: metav1.ObjectMeta{Name: name("placed")}, Spec: tenancyv1alpha1.NamespaceClassSpec{Placement: &tenancyv1alpha1.PlacementSpec{}}}
		if err := k8s.Create(ctx, c); err != nil {
			t.Fatal(err)
		}
		if got := c.Spec.Placement.Strategy; got != tenancyv1alpha1.PlacementLeastAllocated {
			t.Fatalf("strategy = %q, want LeastAllocated", got)
		}
	})

	claims := []struct {
		name, preferred, wantErr string
	}{
		{name: "preferred cluster", preferred: "member-eu.1"},
		{name: "preferred cluster not a subdomain", preferred: "Member_1", wantErr: "preferredCluster must be a DNS-1123 subdomain"},
	}
	for _, tc := range claims {
		t.Run("claim "+tc.name, func(t *testing.T) {
			c := &tenancyv1alpha1.NamespaceClaim{ObjectMeta: metav1.ObjectMeta{Name: name("placed"), Namespace: "default"}, Spec: tenancyv1alpha1.NamespaceClaimSpec{PreferredCluster: tc.preferred}}
			check(t, k8s.Create(ctx, c), tc.wantErr)
		})
	}
	t.Run("preferredCluster is immutable", func(t *testing.T) {
		c := &tenancyv1alpha1.NamespaceClaim{ObjectMeta: metav1.ObjectMeta{Name: name("placed"), Namespace: "default"}, Spec: tenancyv1alpha1.NamespaceClaimSpec{PreferredCluster: "a"}}
		if err := k8s.Create(ctx, c); err != nil {
			t.Fatal(err)
		}
		c.Spec.PreferredCluster = "b"
		check(t, k8s.Update(ctx, c), "preferredCluster is immutable")
	})
}

// TestStatusClusterIsNeverMoved: status.cluster may be set once; changing or removing it is refused,
// other status writes keep it.
func TestStatusClusterIsNeverMoved(t *testing.T) {
	requireEnvtest(t)
	ctx := context.Background()
	c := &tenancyv1alpha1.NamespaceClaim{ObjectMeta: metav1.ObjectMeta{Name: name("assigned"), Namespace: "default"}}
	if err := k8s.Create(ctx, c); err != nil {
		t.Fatal(err)
	}
	c.Status.Cluster = "member-a"
	check(t, k8s.Status().Update(ctx, c), "")
	c.Status.Namespace = "ns-1"
	check(t, k8s.Status().Update(ctx, c), "")
	moved := c.DeepCopy()
	moved.Status.Cluster = "member-b"
	check(t, k8s.Status().Update(ctx, moved), "cluster is never changed or removed once set")
	removed := c.DeepCopy()
	removed.Status.Cluster = ""
	check(t, k8s.Status().Update(ctx, removed), "cluster is never changed or removed once set")
}
