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

package ownership

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
)

// TestCreatedBindsTheRecordToTheUIDUnderClockSkew: a namespace whose API server clock is ten minutes
// from the operator's gets its record bound to its UID by Created; one within the window is left as it is.
func TestCreatedBindsTheRecordToTheUIDUnderClockSkew(t *testing.T) {
	key := mustKey(t, 3)
	claim := Claim("team-a", "pr-1", "claim-uid")
	now := time.Now()
	for _, tc := range []struct {
		name    string
		created time.Time
		patched bool
	}{
		{"clocks in step", now, false},
		{"the API server ten minutes ahead", now.Add(10 * time.Minute), true},
	} {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ci-a", UID: "ns-uid", CreationTimestamp: metav1.NewTime(tc.created),
			Annotations: map[string]string{tenancyv1alpha1.OwnershipAnnotation: key.AtCreate("ci-a", claim, now)}}}
		c := fake.NewClientBuilder().WithObjects(ns.DeepCopy()).Build()
		got := &corev1.Namespace{}
		if err := c.Get(context.Background(), client.ObjectKey{Name: "ci-a"}, got); err != nil {
			t.Fatal(err)
		}
		v := &Verifier{Key: key, Client: c}
		if err := v.Created(context.Background(), got, claim); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if err := c.Get(context.Background(), client.ObjectKey{Name: "ci-a"}, got); err != nil {
			t.Fatal(err)
		}
		rec := got.Annotations[tenancyv1alpha1.OwnershipAnnotation]
		if patched := rec == key.ForUID("ci-a", "ns-uid", claim); patched != tc.patched {
			t.Errorf("%s: record %q, bound to the UID: %v, want %v", tc.name, rec, patched, tc.patched)
		}
		if !key.Verify(got, claim) {
			t.Errorf("%s: the record does not verify after Created", tc.name)
		}
	}
}

// TestClaimOf: a namespace is a claim's only with the claim's whole marks and a record of the key
// that proves them; the answer is the UID its marks name.
func TestClaimOf(t *testing.T) {
	key := mustKey(t, 4)
	now := time.Now()
	claim := Claim("team-a", "pr-1", "claim-uid")
	marks := map[string]string{tenancyv1alpha1.ManagedByLabel: tenancyv1alpha1.ManagedByValue,
		tenancyv1alpha1.ClaimNamespaceLabel: "team-a", tenancyv1alpha1.ClaimUIDLabel: "claim-uid"}
	without := func(k string) map[string]string {
		out := map[string]string{}
		for lk, lv := range marks {
			if lk != k {
				out[lk] = lv
			}
		}
		return out
	}
	record := key.AtCreate("ci-a", claim, now)
	for _, tc := range []struct {
		name     string
		labels   map[string]string
		claimAnn string
		record   string
		want     bool
	}{
		{"marked and recorded", marks, "pr-1", record, true},
		{"marked, no record", marks, "pr-1", "", false},
		{"marked, the record of another claim", marks, "pr-1", key.AtCreate("ci-a", Claim("team-a", "pr-2", "other-uid"), now), false},
		{"marked, the record of another key", marks, "pr-1", mustKey(t, 5).AtCreate("ci-a", claim, now), false},
		{"no claim name annotation", marks, "", record, false},
		{"no claim UID label", without(tenancyv1alpha1.ClaimUIDLabel), "pr-1", record, false},
		{"no requester namespace label", without(tenancyv1alpha1.ClaimNamespaceLabel), "pr-1", record, false},
		{"not managed by nsclaim", without(tenancyv1alpha1.ManagedByLabel), "pr-1", record, false},
	} {
		ann := map[string]string{}
		if tc.claimAnn != "" {
			ann[tenancyv1alpha1.ClaimNameAnnotation] = tc.claimAnn
		}
		if tc.record != "" {
			ann[tenancyv1alpha1.OwnershipAnnotation] = tc.record
		}
		ns := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "ci-a", UID: "ns-uid",
			CreationTimestamp: metav1.NewTime(now), Labels: tc.labels, Annotations: ann}}
		// KeyCreated is zero: no namespace predates the key, so nothing is proven by an earlier release's RBAC.
		uid, owned, err := (&Verifier{Key: key}).ClaimOf(context.Background(), ns)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if owned != tc.want || (owned && uid != "claim-uid") || (!owned && uid != "") {
			t.Errorf("%s: ClaimOf = %q, %v; want owned %v (claim-uid)", tc.name, uid, owned, tc.want)
		}
	}
	proven := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "ci-a", UID: "ns-uid", CreationTimestamp: metav1.NewTime(now),
		Labels: marks, Annotations: map[string]string{tenancyv1alpha1.ClaimNameAnnotation: "pr-1", tenancyv1alpha1.OwnershipAnnotation: record}}}
	if _, owned, _ := (*Verifier)(nil).ClaimOf(context.Background(), proven); owned {
		t.Error("a nil Verifier proved a namespace")
	}
}
