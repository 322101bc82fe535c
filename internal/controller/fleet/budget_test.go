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
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
	policy "github.com/nsclaim/nsclaim-operator/internal/budget"
)

func TestBudgetVerdict(t *testing.T) {
	created := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	claim := &tenancyv1alpha1.NamespaceClaim{ObjectMeta: metav1.ObjectMeta{Name: "pr-1", Namespace: "ci", CreationTimestamp: metav1.NewTime(created)}}
	two := int32(2)
	budget := func(mut func(*tenancyv1alpha1.NamespaceBudget)) *tenancyv1alpha1.NamespaceBudget {
		b := &tenancyv1alpha1.NamespaceBudget{ObjectMeta: metav1.ObjectMeta{Name: "team"},
			Spec: tenancyv1alpha1.NamespaceBudgetSpec{Limits: tenancyv1alpha1.BudgetLimits{Claims: &two}}}
		if mut != nil {
			mut(b)
		}
		return b
	}
	one := policy.Charge{Requester: "namespace:ci"}
	cases := []struct {
		name   string
		b      *tenancyv1alpha1.NamespaceBudget
		line   budgetLine
		waited time.Duration
		reason string
		msg    string
	}{
		{"room, first in line: admitted", budget(nil), budgetLine{counted: []policy.Charge{one}, position: 1}, 0, "", ""},
		{"two placed on any members: queued", budget(nil), budgetLine{counted: []policy.Charge{one, one}, position: 1}, 0,
			tenancyv1alpha1.QueuedReason, "Waiting in NamespaceBudget team at position 1: requested: claims=1, available: 0"},
		{"room for it and the one line ahead: admitted before its turn", budget(nil), budgetLine{ahead: []policy.Charge{one}, position: 2}, 0, "", ""},
		{"room for it but not for the line ahead (StrictFIFO): queued", budget(nil), budgetLine{counted: []policy.Charge{one}, ahead: []policy.Charge{one}, position: 2}, 0,
			tenancyv1alpha1.QueuedReason, "position 2: claims created before it"},
		{"BestEffortFIFO: the room goes to who fits", budget(func(b *tenancyv1alpha1.NamespaceBudget) {
			b.Spec.Queueing = tenancyv1alpha1.BudgetQueueingBestEffortFIFO
		}),
			budgetLine{counted: []policy.Charge{one}, ahead: []policy.Charge{one}, position: 2}, 0, "", ""},
		{"onExhausted Reject: refused", budget(func(b *tenancyv1alpha1.NamespaceBudget) { b.Spec.OnExhausted = tenancyv1alpha1.BudgetExhaustedReject }),
			budgetLine{counted: []policy.Charge{one, one}, position: 1}, 0, tenancyv1alpha1.BudgetExhaustedReason, "onExhausted: Reject"},
		{"EvictIdle waits on a hub", budget(func(b *tenancyv1alpha1.NamespaceBudget) {
			b.Spec.OnExhausted = tenancyv1alpha1.BudgetExhaustedEvictIdle
		}),
			budgetLine{counted: []policy.Charge{one, one}, position: 1}, 0, tenancyv1alpha1.QueuedReason, "available: 0"},
		{"waited past maxQueueWait: refused", budget(func(b *tenancyv1alpha1.NamespaceBudget) {
			b.Spec.MaxQueueWait = &metav1.Duration{Duration: time.Minute}
		}),
			budgetLine{counted: []policy.Charge{one, one}, position: 1}, 2 * time.Minute, tenancyv1alpha1.QueueWaitExceededReason, "longer than its maxQueueWait (1m0s)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			reason, msg := budgetVerdict(tc.b, claim, one, tc.line, created.Add(tc.waited))
			if reason != tc.reason || !strings.Contains(msg, tc.msg) {
				t.Errorf("budgetVerdict = %q, %q; want %q and a message with %q", reason, msg, tc.reason, tc.msg)
			}
		})
	}
}

func TestWaitsForPlacement(t *testing.T) {
	now := metav1.Now()
	c := func(mut func(*tenancyv1alpha1.NamespaceClaim)) *tenancyv1alpha1.NamespaceClaim {
		x := &tenancyv1alpha1.NamespaceClaim{ObjectMeta: metav1.ObjectMeta{Name: "pr-1", Namespace: "ci", UID: "u-1"}}
		if mut != nil {
			mut(x)
		}
		return x
	}
	ready := func(reason string) func(*tenancyv1alpha1.NamespaceClaim) {
		return func(x *tenancyv1alpha1.NamespaceClaim) {
			x.Status.Conditions = []metav1.Condition{{Type: tenancyv1alpha1.ReadyCondition, Status: metav1.ConditionFalse, Reason: reason}}
		}
	}
	cases := []struct {
		name   string
		claim  *tenancyv1alpha1.NamespaceClaim
		placed map[string]string
		want   bool
	}{
		{"new", c(nil), nil, true},
		{"queued", c(ready(tenancyv1alpha1.QueuedReason)), nil, true},
		{"waiting for a cluster", c(ready(tenancyv1alpha1.NoEligibleClusterReason)), nil, true},
		{"placed (status)", c(func(x *tenancyv1alpha1.NamespaceClaim) { x.Status.Cluster = "m1" }), nil, false},
		{"placed (this process's ledger)", c(nil), map[string]string{"u-1": "m1"}, false},
		{"refused by its budget", c(ready(tenancyv1alpha1.BudgetExhaustedReason)), nil, false},
		{"being deleted", c(func(x *tenancyv1alpha1.NamespaceClaim) { x.DeletionTimestamp = &now }), nil, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			placed := map[types.UID]assignment{}
			for uid, m := range tc.placed {
				placed[types.UID(uid)] = assignment{cluster: m}
			}
			if got := waitsForPlacement(tc.claim, placed); got != tc.want {
				t.Errorf("waitsForPlacement = %v, want %v", got, tc.want)
			}
		})
	}
}
