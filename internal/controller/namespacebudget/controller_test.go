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

package namespacebudget

import (
	"bytes"
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
	"github.com/nsclaim/nsclaim-operator/internal/ownership"
)

// world is two teams' requester namespaces (team-a, team-b), three budgets (a and b by namespace
// selector, alice by creator), and claims with namespaces nsclaim made for them (recorded with key).
type world struct {
	key     *ownership.Key
	objects []client.Object
}

func newWorld(t *testing.T) *world {
	t.Helper()
	key, err := ownership.NewKey(bytes.Repeat([]byte{7}, ownership.KeySize))
	if err != nil {
		t.Fatal(err)
	}
	w := &world{key: key}
	for _, team := range []string{"a", "b"} {
		w.objects = append(w.objects,
			&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-" + team, Labels: map[string]string{"team": team}}},
			&tenancyv1alpha1.NamespaceBudget{ObjectMeta: metav1.ObjectMeta{Name: team}, Spec: tenancyv1alpha1.NamespaceBudgetSpec{
				Requesters: tenancyv1alpha1.BudgetRequesters{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": team}}},
				Limits:     tenancyv1alpha1.BudgetLimits{Claims: ptr.To[int32](10)}}})
	}
	w.objects = append(w.objects, &tenancyv1alpha1.NamespaceBudget{ObjectMeta: metav1.ObjectMeta{Name: "alice"}, Spec: tenancyv1alpha1.NamespaceBudgetSpec{
		Requesters: tenancyv1alpha1.BudgetRequesters{Creators: []tenancyv1alpha1.BudgetCreator{{Username: "alice"}}},
		Limits:     tenancyv1alpha1.BudgetLimits{Claims: ptr.To[int32](10)}}})
	return w
}

// claim adds a claim of requester namespace requester (made by creator, when not empty), with a
// namespace nsclaim made for it when held.
func (w *world) claim(requester, name, creator string, held bool) *tenancyv1alpha1.NamespaceClaim {
	c := &tenancyv1alpha1.NamespaceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: requester, Name: name, UID: types.UID(name + "-uid")}}
	if creator != "" {
		c.Spec.Creator = &tenancyv1alpha1.ClaimCreator{Username: creator}
	}
	if held {
		c.Status.Namespace = "ns-" + name
		w.objects = append(w.objects, w.namespaceOf(c))
	} else {
		meta.SetStatusCondition(&c.Status.Conditions, metav1.Condition{Type: tenancyv1alpha1.ReadyCondition, Status: metav1.ConditionFalse,
			Reason: tenancyv1alpha1.QueuedReason, LastTransitionTime: metav1.Now()})
	}
	w.objects = append(w.objects, c)
	return c
}

// namespaceOf is the namespace nsclaim made for c: its marks and its ownership record.
func (w *world) namespaceOf(c *tenancyv1alpha1.NamespaceClaim) *corev1.Namespace {
	now := time.Now()
	name := "ns-" + c.Name
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID(name + "-uid"), CreationTimestamp: metav1.NewTime(now),
		Labels: map[string]string{tenancyv1alpha1.ManagedByLabel: tenancyv1alpha1.ManagedByValue,
			tenancyv1alpha1.ClaimNamespaceLabel: c.Namespace, tenancyv1alpha1.ClaimUIDLabel: string(c.UID)},
		Annotations: map[string]string{tenancyv1alpha1.ClaimNameAnnotation: c.Name,
			tenancyv1alpha1.OwnershipAnnotation: w.key.AtCreate(name, ownership.Claim(c.Namespace, c.Name, string(c.UID)), now)}}}
}

// reconciler is a BudgetReconciler over a fake client of the world's objects, with the field indexes
// the manager registers (IndexFields).
func (w *world) reconciler(t *testing.T) *BudgetReconciler {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := corev1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := tenancyv1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	b := fake.NewClientBuilder().WithScheme(scheme).WithObjects(w.objects...).WithStatusSubresource(&tenancyv1alpha1.NamespaceBudget{})
	if err := IndexFields(context.Background(), indexer{b}); err != nil {
		t.Fatal(err)
	}
	return &BudgetReconciler{Client: b.Build(), Ownership: &ownership.Verifier{Key: w.key}}
}

// indexer registers field indexes on a fake client builder, as the manager's cache does.
type indexer struct{ b *fake.ClientBuilder }

func (i indexer) IndexField(_ context.Context, obj client.Object, field string, extract client.IndexerFunc) error {
	i.b.WithIndex(obj, field, extract)
	return nil
}

// TestBudgetsOfMapsAnEventToTheBudgetsThatCoverIt: a claim's or namespace's event reaches the budgets
// that cover its requester (by namespace selector or creator), and no other team's.
func TestBudgetsOfMapsAnEventToTheBudgetsThatCoverIt(t *testing.T) {
	w := newWorld(t)
	a1 := w.claim("team-a", "a1", "", true)
	b1 := w.claim("team-b", "b1", "alice", true)
	gone := w.namespaceOf(&tenancyv1alpha1.NamespaceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "team-b", Name: "gone", UID: "gone-uid"}})
	r := w.reconciler(t)
	for _, tc := range []struct {
		name string
		obj  client.Object
		want []string
	}{
		{"a claim of team-a", a1, []string{"a"}},
		{"alice's claim in team-b", b1, []string{"alice", "b"}},
		{"the namespace of a claim of team-a", w.namespaceOf(a1), []string{"a"}},
		{"the namespace of alice's claim in team-b", w.namespaceOf(b1), []string{"alice", "b"}},
		{"the namespace of a deleted claim of team-b", gone, []string{"b"}},
		{"a namespace of no requester", &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "other"}}, nil},
		{"a claim of a namespace no budget selects", &tenancyv1alpha1.NamespaceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "team-c", Name: "c1"}}, nil},
	} {
		reqs := r.budgetsOf(context.Background(), tc.obj)
		got := make([]string, 0, len(reqs))
		for _, req := range reqs {
			got = append(got, req.Name)
		}
		if !equalStrings(got, tc.want) {
			t.Errorf("%s: budgets %v, want %v", tc.name, got, tc.want)
		}
	}
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestReconcileCountsWhatEachBudgetCovers: each budget's status counts the namespaces held and the
// claims queued of the requesters it covers, read by requester namespace and creator, and nothing
// of the others; a namespace that carries a claim's marks without nsclaim's record is not counted.
func TestReconcileCountsWhatEachBudgetCovers(t *testing.T) {
	w := newWorld(t)
	w.claim("team-a", "a1", "", true)
	w.claim("team-a", "a2", "", true)
	w.claim("team-a", "a3", "", false)
	w.claim("team-b", "b1", "alice", true)
	w.claim("team-b", "b2", "", false)
	w.claim("team-b", "b3", "alice", false)
	forged := w.claim("team-b", "b4", "", false)
	ns := w.namespaceOf(forged)
	delete(ns.Annotations, tenancyv1alpha1.OwnershipAnnotation)
	w.objects = append(w.objects, ns)
	r := w.reconciler(t)
	for _, tc := range []struct {
		budget            string
		allocated, queued int32
	}{
		{"a", 2, 1},
		{"b", 1, 3},
		{"alice", 1, 1},
	} {
		if _, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: types.NamespacedName{Name: tc.budget}}); err != nil {
			t.Fatalf("budget %s: %v", tc.budget, err)
		}
		b := &tenancyv1alpha1.NamespaceBudget{}
		if err := r.Get(context.Background(), client.ObjectKey{Name: tc.budget}, b); err != nil {
			t.Fatal(err)
		}
		if b.Status.Allocated.Claims != tc.allocated || b.Status.Queued != tc.queued {
			t.Errorf("budget %s: allocated %d claims, %d queued; want %d, %d", tc.budget, b.Status.Allocated.Claims, b.Status.Queued, tc.allocated, tc.queued)
		}
	}
}
