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
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
)

// TestBudgetValidation: every field of a NamespaceBudget is checked by the API server, with a message
// that names the field; the defaults are StrictFIFO and Queue.
func TestBudgetValidation(t *testing.T) {
	requireEnvtest(t)
	ctx := context.Background()
	eight, minus := int32(8), int32(-1)
	team := tenancyv1alpha1.BudgetRequesters{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}}}
	claims := tenancyv1alpha1.BudgetLimits{Claims: &eight}
	cpu := func(q string) tenancyv1alpha1.BudgetLimits {
		return tenancyv1alpha1.BudgetLimits{Resources: corev1.ResourceList{"requests.cpu": resource.MustParse(q)}}
	}
	cases := []struct {
		name    string
		spec    tenancyv1alpha1.NamespaceBudgetSpec
		wantErr string
	}{
		{name: "claims and selector", spec: tenancyv1alpha1.NamespaceBudgetSpec{Requesters: team, Limits: claims}},
		{name: "cpu only", spec: tenancyv1alpha1.NamespaceBudgetSpec{Requesters: team, Limits: cpu("40")}},
		{name: "no requesters", spec: tenancyv1alpha1.NamespaceBudgetSpec{Limits: claims}, wantErr: "requesters needs a namespaceSelector or at least one creators entry"},
		{name: "no limits", spec: tenancyv1alpha1.NamespaceBudgetSpec{Requesters: team}, wantErr: "limits needs claims or at least one resources entry"},
		{name: "negative claims", spec: tenancyv1alpha1.NamespaceBudgetSpec{Requesters: team, Limits: tenancyv1alpha1.BudgetLimits{Claims: &minus}}, wantErr: "spec.limits.claims"},
		{name: "bad resource name", spec: tenancyv1alpha1.NamespaceBudgetSpec{Requesters: team, Limits: tenancyv1alpha1.BudgetLimits{Resources: corev1.ResourceList{"Requests CPU": resource.MustParse("1")}}}, wantErr: "limits.resources keys must be ResourceQuota resource names"},
		{name: "creator by repository", spec: tenancyv1alpha1.NamespaceBudgetSpec{Requesters: tenancyv1alpha1.BudgetRequesters{Creators: []tenancyv1alpha1.BudgetCreator{{ExtraKey: "repository", ExtraValue: "org/payments"}}}, Limits: claims}},
		{name: "creator by username", spec: tenancyv1alpha1.NamespaceBudgetSpec{Requesters: tenancyv1alpha1.BudgetRequesters{Creators: []tenancyv1alpha1.BudgetCreator{{Username: "github:repo:org/payments"}}}, Limits: claims}},
		{name: "creator both", spec: tenancyv1alpha1.NamespaceBudgetSpec{Requesters: tenancyv1alpha1.BudgetRequesters{Creators: []tenancyv1alpha1.BudgetCreator{{Username: "u", ExtraKey: "repository", ExtraValue: "o/p"}}}, Limits: claims}, wantErr: "a creators entry sets either username, or both extraKey and extraValue"},
		{name: "creator key without value", spec: tenancyv1alpha1.NamespaceBudgetSpec{Requesters: tenancyv1alpha1.BudgetRequesters{Creators: []tenancyv1alpha1.BudgetCreator{{ExtraKey: "repository"}}}, Limits: claims}, wantErr: "creators extraKey and extraValue go together"},
		{name: "empty creators", spec: tenancyv1alpha1.NamespaceBudgetSpec{Requesters: tenancyv1alpha1.BudgetRequesters{Creators: []tenancyv1alpha1.BudgetCreator{}}, Limits: claims}, wantErr: "requesters needs a namespaceSelector or at least one creators entry"},
		{name: "per requester empty", spec: tenancyv1alpha1.NamespaceBudgetSpec{Requesters: team, Limits: claims, PerRequester: &tenancyv1alpha1.BudgetLimits{}}, wantErr: "limits needs claims or at least one resources entry"},
		{name: "per requester", spec: tenancyv1alpha1.NamespaceBudgetSpec{Requesters: team, Limits: claims, PerRequester: &claims}},
		{name: "bad queueing", spec: tenancyv1alpha1.NamespaceBudgetSpec{Requesters: team, Limits: claims, Queueing: "LIFO"}, wantErr: "spec.queueing"},
		{name: "bad onExhausted", spec: tenancyv1alpha1.NamespaceBudgetSpec{Requesters: team, Limits: claims, OnExhausted: "Panic"}, wantErr: "spec.onExhausted"},
		{name: "evict idle", spec: tenancyv1alpha1.NamespaceBudgetSpec{Requesters: team, Limits: claims, OnExhausted: tenancyv1alpha1.BudgetExhaustedEvictIdle, Queueing: tenancyv1alpha1.BudgetQueueingBestEffortFIFO}},
		{name: "queue wait too short", spec: tenancyv1alpha1.NamespaceBudgetSpec{Requesters: team, Limits: claims, MaxQueueWait: dur(500 * time.Millisecond)}, wantErr: "maxQueueWait must be between 1s and 168h"},
		{name: "queue wait too long", spec: tenancyv1alpha1.NamespaceBudgetSpec{Requesters: team, Limits: claims, MaxQueueWait: dur(200 * time.Hour)}, wantErr: "maxQueueWait must be between 1s and 168h"},
		{name: "queue wait", spec: tenancyv1alpha1.NamespaceBudgetSpec{Requesters: team, Limits: claims, MaxQueueWait: dur(30 * time.Minute)}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := &tenancyv1alpha1.NamespaceBudget{ObjectMeta: metav1.ObjectMeta{Name: name("budget")}, Spec: tc.spec}
			check(t, k8s.Create(ctx, b), tc.wantErr)
			if tc.wantErr != "" {
				return
			}
			if b.Spec.Queueing != tenancyv1alpha1.BudgetQueueingStrictFIFO && tc.spec.Queueing == "" {
				t.Fatalf("queueing defaulted to %q, want StrictFIFO", b.Spec.Queueing)
			}
			if b.Spec.OnExhausted != tenancyv1alpha1.BudgetExhaustedQueue && tc.spec.OnExhausted == "" {
				t.Fatalf("onExhausted defaulted to %q, want Queue", b.Spec.OnExhausted)
			}
		})
	}
}
