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

package budget

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
	"github.com/nsclaim/nsclaim-operator/internal/admission"
)

// burstReader is a cache that answers at once with what make bench's budget burst holds: one budget that
// never binds over the burst's requester namespaces, the claims of both bursts, one class.
type burstReader struct {
	budget  tenancyv1alpha1.NamespaceBudget
	claims  []tenancyv1alpha1.NamespaceClaim
	classes []tenancyv1alpha1.NamespaceClass
}

func (r *burstReader) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	ns := obj.(*corev1.Namespace)
	ns.Name, ns.Labels = key.Name, map[string]string{corev1.LabelMetadataName: key.Name}
	return nil
}

func (r *burstReader) List(_ context.Context, list client.ObjectList, _ ...client.ListOption) error {
	switch l := list.(type) {
	case *tenancyv1alpha1.NamespaceBudgetList:
		l.Items = []tenancyv1alpha1.NamespaceBudget{*r.budget.DeepCopy()}
	case *tenancyv1alpha1.NamespaceClaimList:
		l.Items = r.claims
	case *tenancyv1alpha1.NamespaceClassList:
		l.Items = append([]tenancyv1alpha1.NamespaceClass(nil), r.classes...)
	case *metav1.PartialObjectMetadataList:
		l.Items = nil
	default:
		return fmt.Errorf("unexpected list %T", list)
	}
	return nil
}

// BenchmarkPhaseNeverBinds is the budget phase's CPU per admission in make bench's budget burst
// (--budget-burst=200, 10 claims per requester namespace): a cache of 200 Ready claims of the first
// burst and 200 that wait, the youngest admitted (the longest line ahead of it, StrictFIFO), its
// reservation given back after each admission.
func BenchmarkPhaseNeverBinds(b *testing.B) {
	const burst, perNS = 200, 10
	r := &burstReader{classes: []tenancyv1alpha1.NamespaceClass{{ObjectMeta: metav1.ObjectMeta{Name: "ci"},
		Spec: tenancyv1alpha1.NamespaceClassSpec{ResourceQuota: &corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourceRequestsCPU: resource.MustParse("4")}}}}}}
	var names []string
	created := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	for _, series := range []string{"bnone", "bbudget"} {
		held := series == "bnone"
		for i := 0; i < burst; i++ {
			ns := fmt.Sprintf("%s-req-%d", series, i/perNS)
			c := tenancyv1alpha1.NamespaceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("%s-%d", series, i),
				UID: types.UID(fmt.Sprintf("%s-%d-uid", series, i)), CreationTimestamp: metav1.NewTime(created.Add(time.Duration(i) * time.Millisecond))},
				Spec: tenancyv1alpha1.NamespaceClaimSpec{ClassName: "ci"}}
			if held {
				c.Status.Namespace = "ns-" + c.Name
			} else if i%perNS == 0 {
				names = append(names, ns)
			}
			r.claims = append(r.claims, c)
		}
	}
	claims := int32(10 * burst)
	r.budget = tenancyv1alpha1.NamespaceBudget{ObjectMeta: metav1.ObjectMeta{Name: "bench-never-binds"}, Spec: tenancyv1alpha1.NamespaceBudgetSpec{
		Requesters: tenancyv1alpha1.BudgetRequesters{NamespaceSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
			Key: corev1.LabelMetadataName, Operator: metav1.LabelSelectorOpIn, Values: names}}}},
		Limits: tenancyv1alpha1.BudgetLimits{Claims: &claims, Resources: corev1.ResourceList{corev1.ResourceRequestsCPU: resource.MustParse(fmt.Sprint(10 * burst * 4))}}}}
	p := &Phase{Reader: r, APIReader: r, Ledger: &admission.Ledger{}}
	youngest := &r.claims[len(r.claims)-1]
	for i := range r.claims {
		if c := &r.claims[i]; c.Status.Namespace == "" && youngest.CreationTimestamp.Before(&c.CreationTimestamp) {
			youngest = c
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		c := &Claim{Claim: youngest, Class: &r.classes[0], RequesterLabels: map[string]string{corev1.LabelMetadataName: youngest.Namespace}, Now: created.Add(time.Second)}
		if err := p.Reconcile(context.Background(), c); err != nil {
			b.Fatal(err)
		}
		if c.Refusal != nil || len(c.Slots) != 1 {
			b.Fatalf("the youngest claim was not admitted to a budget that never binds: %+v, %d slots", c.Refusal, len(c.Slots))
		}
		c.Slots.Release()
	}
}
