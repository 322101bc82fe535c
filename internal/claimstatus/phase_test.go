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

package claimstatus

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
)

func TestPhaseOf(t *testing.T) {
	cond := func(typ string, st metav1.ConditionStatus, reason string) metav1.Condition {
		return metav1.Condition{Type: typ, Status: st, Reason: reason}
	}
	ready := cond(tenancyv1alpha1.ReadyCondition, metav1.ConditionTrue, tenancyv1alpha1.ProvisionedReason)
	now := metav1.Now()
	for _, tc := range []struct {
		name     string
		conds    []metav1.Condition
		active   bool
		asleep   bool
		deleting bool
		want     tenancyv1alpha1.ClaimPhase
	}{
		{name: "no condition yet", want: tenancyv1alpha1.ClaimPhasePending},
		{name: "provisioning", conds: []metav1.Condition{cond(tenancyv1alpha1.ReadyCondition, metav1.ConditionFalse, tenancyv1alpha1.PendingReason)}, want: tenancyv1alpha1.ClaimPhasePending},
		{name: "internal error", conds: []metav1.Condition{cond(tenancyv1alpha1.ReadyCondition, metav1.ConditionFalse, tenancyv1alpha1.InternalErrorReason)}, want: tenancyv1alpha1.ClaimPhasePending},
		{name: "ready, nothing running", conds: []metav1.Condition{ready}, want: tenancyv1alpha1.ClaimPhaseIdle},
		{name: "ready, a Pod active", conds: []metav1.Condition{ready}, active: true, want: tenancyv1alpha1.ClaimPhaseActive},
		{name: "ready, asleep", conds: []metav1.Condition{ready}, asleep: true, want: tenancyv1alpha1.ClaimPhaseSleeping},
		{name: "expired while asleep", conds: []metav1.Condition{cond(tenancyv1alpha1.ExpiredCondition, metav1.ConditionTrue, tenancyv1alpha1.IdleExpiredReason),
			cond(tenancyv1alpha1.ReadyCondition, metav1.ConditionFalse, tenancyv1alpha1.ExpiredReason)}, asleep: true, want: tenancyv1alpha1.ClaimPhaseExpired},
		{name: "deleting while asleep", conds: []metav1.Condition{ready}, asleep: true, deleting: true, want: tenancyv1alpha1.ClaimPhaseTerminating},
		{name: "refused", conds: []metav1.Condition{cond(tenancyv1alpha1.ReadyCondition, metav1.ConditionFalse, tenancyv1alpha1.KeepExceedsMaximumReason)}, want: tenancyv1alpha1.ClaimPhaseRefused},
		{name: "expired by idleness", conds: []metav1.Condition{cond(tenancyv1alpha1.ExpiredCondition, metav1.ConditionTrue, tenancyv1alpha1.IdleExpiredReason),
			cond(tenancyv1alpha1.ReadyCondition, metav1.ConditionFalse, tenancyv1alpha1.ExpiredReason)}, want: tenancyv1alpha1.ClaimPhaseExpired},
		{name: "released", conds: []metav1.Condition{cond(tenancyv1alpha1.ReadyCondition, metav1.ConditionFalse, tenancyv1alpha1.ReleasedReason)}, want: tenancyv1alpha1.ClaimPhaseTerminating},
		{name: "namespace terminating", conds: []metav1.Condition{cond(tenancyv1alpha1.ReadyCondition, metav1.ConditionFalse, tenancyv1alpha1.NamespaceTerminatingReason)}, want: tenancyv1alpha1.ClaimPhaseTerminating},
		{name: "deleting wins over ready", conds: []metav1.Condition{ready}, active: true, deleting: true, want: tenancyv1alpha1.ClaimPhaseTerminating},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &tenancyv1alpha1.NamespaceClaim{Status: tenancyv1alpha1.NamespaceClaimStatus{Conditions: tc.conds, PodsActive: tc.active}}
			if tc.deleting {
				c.DeletionTimestamp = &now
			}
			if tc.asleep {
				c.Status.Sleep = &tenancyv1alpha1.SleepStatus{Since: now}
			}
			if got := PhaseOf(c); got != tc.want {
				t.Errorf("PhaseOf = %s, want %s", got, tc.want)
			}
		})
	}
}
