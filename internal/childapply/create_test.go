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

package childapply

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/nsclaim/nsclaim-operator/internal/kube"
	"github.com/nsclaim/nsclaim-operator/internal/testenv"
)

func fields(s string) *metav1.FieldsV1 { return metav1.NewFieldsV1(s) }

func TestMergeCreatedIntoApplied(t *testing.T) {
	upd := func(m, f string) metav1.ManagedFieldsEntry {
		return metav1.ManagedFieldsEntry{Manager: m, Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1", FieldsType: "FieldsV1", FieldsV1: fields(f)}
	}
	app := func(m, f string) metav1.ManagedFieldsEntry {
		e := upd(m, f)
		e.Operation = metav1.ManagedFieldsOperationApply
		return e
	}
	status := upd("nsclaim", `{"f:status":{}}`)
	status.Subresource = "status"
	for _, tc := range []struct {
		name    string
		in      []metav1.ManagedFieldsEntry
		want    []metav1.ManagedFieldsEntry
		changed bool
	}{
		{name: "nothing of nsclaim", in: []metav1.ManagedFieldsEntry{upd("tenant", `{"f:a":{}}`)},
			want: []metav1.ManagedFieldsEntry{upd("tenant", `{"f:a":{}}`)}},
		{name: "applied from the start", in: []metav1.ManagedFieldsEntry{app("nsclaim", `{"f:a":{}}`)},
			want: []metav1.ManagedFieldsEntry{app("nsclaim", `{"f:a":{}}`)}},
		{name: "another manager's update is not taken", in: []metav1.ManagedFieldsEntry{upd("tenant", `{"f:a":{}}`), app("nsclaim", `{"f:b":{}}`)},
			want: []metav1.ManagedFieldsEntry{upd("tenant", `{"f:a":{}}`), app("nsclaim", `{"f:b":{}}`)}},
		{name: "a status write stays", in: []metav1.ManagedFieldsEntry{status},
			want: []metav1.ManagedFieldsEntry{status}},
		{name: "created: the entry becomes the apply's", changed: true,
			in:   []metav1.ManagedFieldsEntry{upd("nsclaim", `{"f:spec":{"f:hard":{"f:pods":{}}}}`), upd("tenant", `{"f:a":{}}`)},
			want: []metav1.ManagedFieldsEntry{app("nsclaim", `{"f:spec":{"f:hard":{"f:pods":{}}}}`), upd("tenant", `{"f:a":{}}`)}},
		{name: "created and applied: merged into the apply's", changed: true,
			in: []metav1.ManagedFieldsEntry{
				upd("nsclaim", `{"f:spec":{"f:hard":{"f:pods":{},"f:services":{}}}}`),
				app("nsclaim", `{"f:metadata":{"f:labels":{"f:x":{}}},"f:spec":{"f:hard":{"f:pods":{}}}}`),
			},
			want: []metav1.ManagedFieldsEntry{
				app("nsclaim", `{"f:metadata":{"f:labels":{"f:x":{}}},"f:spec":{"f:hard":{"f:pods":{},"f:services":{}}}}`),
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, changed, err := MergeCreatedIntoApplied(tc.in, "nsclaim")
			if err != nil {
				t.Fatal(err)
			}
			if changed != tc.changed {
				t.Errorf("changed = %v, want %v", changed, tc.changed)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %d entries, want %d: %+v", len(got), len(tc.want), got)
			}
			for i := range got {
				g, w := got[i], tc.want[i]
				if !sameFields(t, g.FieldsV1, w.FieldsV1) {
					t.Errorf("entry %d: fields %s, want %s", i, g.FieldsV1.GetRawString(), w.FieldsV1.GetRawString())
				}
				g.FieldsV1, w.FieldsV1 = nil, nil
				if !reflect.DeepEqual(g, w) {
					t.Errorf("entry %d: %+v, want %+v", i, g, w)
				}
			}
		})
	}
}

func sameFields(t *testing.T, a, b *metav1.FieldsV1) bool {
	t.Helper()
	var ma, mb any
	if err := json.Unmarshal(a.GetRawBytes(), &ma); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b.GetRawBytes(), &mb); err != nil {
		t.Fatal(err)
	}
	return reflect.DeepEqual(ma, mb)
}

// lagging reads nothing: a cache that has not seen a write yet.
type lagging struct{ client.Client }

func (l lagging) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	return apierrors.NewNotFound(corev1.Resource("resourcequotas"), key.Name)
}

func quota(ns string, hard corev1.ResourceList) *corev1.ResourceQuota {
	return &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "nsclaim-quota", Namespace: ns}, Spec: corev1.ResourceQuotaSpec{Hard: hard}}
}

// TestCreatedChildIsAppliedLater proves, on a real API server, that a child made with a create (the
// cheap write on a fresh namespace) is afterwards owned as if it had been applied: a field the class no
// longer sets goes at the next apply, a field another manager set stays, and a child the cache misses
// but that exists is applied over.
func TestCreatedChildIsAppliedLater(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	cfg := testenv.Start(t, &envtest.Environment{})
	scheme := k8sruntime.NewScheme()
	g.Expect(clientgoscheme.AddToScheme(scheme)).To(Succeed())
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	g.Expect(err).NotTo(HaveOccurred())
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "created-child"}}
	g.Expect(c.Create(ctx, ns)).To(Succeed())
	a := Applier{Client: c, APIReader: c}
	opts := Options{ReadOnMiss: true}
	get := func() *corev1.ResourceQuota {
		q := &corev1.ResourceQuota{}
		g.Expect(c.Get(ctx, client.ObjectKey{Namespace: ns.Name, Name: "nsclaim-quota"}, q)).To(Succeed())
		return q
	}
	entries := func() map[string]metav1.ManagedFieldsOperationType {
		out := map[string]metav1.ManagedFieldsOperationType{}
		for _, e := range get().ManagedFields {
			out[e.Manager+"/"+string(e.Operation)] = e.Operation
		}
		return out
	}

	// Missing: created, by nsclaim's create (an Update entry).
	repaired, _, err := a.Apply(ctx, quota(ns.Name, corev1.ResourceList{"pods": resource.MustParse("10"), "services": resource.MustParse("5")}), opts)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(repaired).To(BeTrue())
	g.Expect(entries()).To(HaveKey(kube.FieldOwner + "/Update"))

	// Another manager (an admin) adds a label; the class then drops services.
	g.Expect(c.Patch(ctx, get(), client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"team":"payments"}}}`)), client.FieldOwner("admin"))).To(Succeed())
	_, _, err = a.Apply(ctx, quota(ns.Name, corev1.ResourceList{"pods": resource.MustParse("10")}), opts)
	g.Expect(err).NotTo(HaveOccurred())
	q := get()
	g.Expect(q.Spec.Hard).To(HaveKey(corev1.ResourceName("pods")))
	g.Expect(q.Spec.Hard).NotTo(HaveKey(corev1.ResourceName("services")), "the field the class dropped stays: the create's entry still owns it")
	g.Expect(q.Labels).To(HaveKeyWithValue("team", "payments"))
	g.Expect(entries()).To(And(HaveKey(kube.FieldOwner+"/Apply"), Not(HaveKey(kube.FieldOwner+"/Update"))))

	// Nothing changed: nothing is written.
	rv := q.ResourceVersion
	repaired, _, err = a.Apply(ctx, quota(ns.Name, corev1.ResourceList{"pods": resource.MustParse("10")}), opts)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(repaired).To(BeFalse())
	g.Expect(get().ResourceVersion).To(Equal(rv))

	// A cache that misses an object that exists, and was changed by someone else: the create finds it,
	// and the apply puts nsclaim's value back.
	q = get()
	q.Spec.Hard["pods"] = resource.MustParse("99")
	g.Expect(c.Update(ctx, q, client.FieldOwner("tenant"))).To(Succeed())
	lag := Applier{Client: lagging{c}, APIReader: c}
	_, _, err = lag.Apply(ctx, quota(ns.Name, corev1.ResourceList{"pods": resource.MustParse("10")}), Options{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(get().Spec.Hard.Pods().String()).To(Equal("10"))
}

func TestCreatedLeftovers(t *testing.T) {
	entry := func(op metav1.ManagedFieldsOperationType, f string) metav1.ManagedFieldsEntry {
		return metav1.ManagedFieldsEntry{Manager: "nsclaim", Operation: op, FieldsType: "FieldsV1", FieldsV1: fields(f)}
	}
	const u, a = metav1.ManagedFieldsOperationUpdate, metav1.ManagedFieldsOperationApply
	for _, tc := range []struct {
		name    string
		entries []metav1.ManagedFieldsEntry
		want    bool
	}{
		{name: "applied only", entries: []metav1.ManagedFieldsEntry{entry(a, `{"f:spec":{"f:hard":{"f:pods":{}}}}`)}},
		{name: "created, applied again with the same fields (shared)", entries: []metav1.ManagedFieldsEntry{
			entry(u, `{"f:metadata":{"f:annotations":{".":{},"f:d":{}}},"f:spec":{".":{},"f:hard":{".":{},"f:pods":{}}}}`),
			entry(a, `{"f:metadata":{"f:annotations":{"f:d":{}}},"f:spec":{"f:hard":{"f:pods":{}}}}`)}},
		{name: "created, the class dropped a key", want: true, entries: []metav1.ManagedFieldsEntry{
			entry(u, `{"f:spec":{"f:hard":{"f:pods":{},"f:services":{}}}}`),
			entry(a, `{"f:spec":{"f:hard":{"f:pods":{}}}}`)}},
		{name: "created, the class dropped a whole map", want: true, entries: []metav1.ManagedFieldsEntry{
			entry(u, `{"f:metadata":{"f:labels":{".":{},"f:x":{}}},"f:spec":{}}`),
			entry(a, `{"f:spec":{}}`)}},
		{name: "created, never applied", want: true, entries: []metav1.ManagedFieldsEntry{entry(u, `{"f:spec":{}}`)}},
		{name: "another manager's fields do not count", entries: []metav1.ManagedFieldsEntry{
			{Manager: "tenant", Operation: u, FieldsType: "FieldsV1", FieldsV1: fields(`{"f:metadata":{"f:labels":{"f:y":{}}}}`)},
			entry(a, `{"f:spec":{}}`)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := createdLeftovers(tc.entries, "nsclaim")
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("createdLeftovers = %v, want %v", got, tc.want)
			}
		})
	}
}
