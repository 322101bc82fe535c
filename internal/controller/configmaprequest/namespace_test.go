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

package configmaprequest

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
)

func TestServeNamespace(t *testing.T) {
	now := metav1.Now()
	ns := func(labels map[string]string) *corev1.Namespace {
		return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: DefaultNamespace, Labels: labels}}
	}
	terminating := RequestsNamespace(DefaultNamespace)
	terminating.DeletionTimestamp = &now
	for _, tc := range []struct {
		name string
		ns   *corev1.Namespace
		want bool
		why  string
	}{
		{"created by the operator", RequestsNamespace(DefaultNamespace), true, ""},
		{"labelled by an admin", ns(map[string]string{tenancyv1alpha1.RequestsNamespaceLabel: "true", "team": "ci"}), true, ""},
		{"missing", nil, false, "does not exist"},
		{"existing, unlabelled", ns(nil), false, "not labelled"},
		{"existing, other labels", ns(map[string]string{"owner": "someone"}), false, "not labelled"},
		{"label not true", ns(map[string]string{tenancyv1alpha1.RequestsNamespaceLabel: "yes"}), false, "not labelled"},
		{"label empty", ns(map[string]string{tenancyv1alpha1.RequestsNamespaceLabel: ""}), false, "not labelled"},
		{"squatted: provisioned for a claim", ns(map[string]string{
			tenancyv1alpha1.ManagedByLabel: tenancyv1alpha1.ManagedByValue, tenancyv1alpha1.ClaimUIDLabel: "u"}), false, "provisioned for a NamespaceClaim"},
		{"squatted and labelled (a tenant may label its own namespace)", ns(map[string]string{
			tenancyv1alpha1.ManagedByLabel: tenancyv1alpha1.ManagedByValue, tenancyv1alpha1.RequestsNamespaceLabel: "true"}), false, "provisioned for a NamespaceClaim"},
		{"managed-by with another value", ns(map[string]string{
			tenancyv1alpha1.ManagedByLabel: "x", tenancyv1alpha1.RequestsNamespaceLabel: "true"}), false, "provisioned for a NamespaceClaim"},
		{"terminating", terminating, false, "being deleted"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, why := ServeNamespace(tc.ns)
			if got != tc.want || !strings.Contains(why, tc.why) {
				t.Errorf("ServeNamespace = %v, %q; want %v, containing %q", got, why, tc.want, tc.why)
			}
		})
	}
}

func TestRequestsNamespaceLabels(t *testing.T) {
	ns := RequestsNamespace("rq")
	if ns.Name != "rq" {
		t.Errorf("name %q", ns.Name)
	}
	for _, k := range []string{"pod-security.kubernetes.io/enforce", "pod-security.kubernetes.io/warn", "pod-security.kubernetes.io/audit"} {
		if ns.Labels[k] != "baseline" {
			t.Errorf("%s = %q, want baseline", k, ns.Labels[k])
		}
	}
	if _, ok := ns.Labels[tenancyv1alpha1.ManagedByLabel]; ok {
		t.Errorf("the requests namespace belongs to no claim: %v", ns.Labels)
	}
	if ok, why := ServeNamespace(ns); !ok {
		t.Errorf("the namespace the operator creates is not served: %s", why)
	}
}

func TestClaimReport(t *testing.T) {
	claim := func(gen, observed int64, status metav1.ConditionStatus, reason string) *tenancyv1alpha1.NamespaceClaim {
		c := &tenancyv1alpha1.NamespaceClaim{ObjectMeta: metav1.ObjectMeta{Generation: gen}}
		if status != "" {
			c.Status.Conditions = []metav1.Condition{{Type: tenancyv1alpha1.ReadyCondition, Status: status, Reason: reason,
				Message: "why", ObservedGeneration: observed}}
		}
		return c
	}
	for _, tc := range []struct {
		name   string
		claim  *tenancyv1alpha1.NamespaceClaim
		want   Report
		annote string
	}{
		{"no status yet", claim(1, 0, "", ""), Keep, ""},
		{"ready", claim(1, 1, metav1.ConditionTrue, tenancyv1alpha1.ProvisionedReason), Cleared, ""},
		{"refused", claim(1, 1, metav1.ConditionFalse, tenancyv1alpha1.NamespaceConflictReason), Refused, "NamespaceConflict: why"},
		{"refused by the self-test", claim(2, 2, metav1.ConditionFalse, tenancyv1alpha1.ExcessPermissionsReason), Refused, "ExcessPermissions: why"},
		{"refusal of an older generation", claim(2, 1, metav1.ConditionFalse, tenancyv1alpha1.NamespaceConflictReason), Keep, ""},
		{"ready for an older generation", claim(2, 1, metav1.ConditionTrue, tenancyv1alpha1.ProvisionedReason), Keep, ""},
		{"provisioning", claim(1, 1, metav1.ConditionFalse, tenancyv1alpha1.ProvisioningReason), Keep, ""},
		{"internal error", claim(1, 1, metav1.ConditionFalse, tenancyv1alpha1.InternalErrorReason), Keep, ""},
		{"unknown", claim(1, 1, metav1.ConditionUnknown, tenancyv1alpha1.PendingReason), Keep, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, v := ClaimReport(tc.claim)
			if got != tc.want || v != tc.annote {
				t.Errorf("ClaimReport = %v, %q; want %v, %q", got, v, tc.want, tc.annote)
			}
		})
	}
	if got := Refusal(tenancyv1alpha1.NameNotAllowedReason, "no pattern"); got != "NameNotAllowed: no pattern" {
		t.Errorf("Refusal = %q", got)
	}
}
