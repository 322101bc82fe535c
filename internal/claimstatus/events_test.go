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
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
)

// The Provisioned Event carries the newest token's credential ID and expiry, and nothing when the
// claim has no token (mode Requester).
func TestProvisionedNote(t *testing.T) {
	exp := metav1.NewTime(time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC))
	older := metav1.NewTime(exp.Add(-time.Hour))
	cases := []struct {
		name   string
		issued []tenancyv1alpha1.IssuedToken
		want   string
	}{
		{"no token", nil, "Namespace x is ready"},
		{"one token", []tenancyv1alpha1.IssuedToken{{CredentialID: "JTI=a", ExpiresAt: exp}},
			"Namespace x is ready: token credential ID JTI=a, expires 2026-11-23T12:00:00Z"},
		{"the newest of two", []tenancyv1alpha1.IssuedToken{{CredentialID: "JTI=b", ExpiresAt: exp}, {CredentialID: "JTI=a", ExpiresAt: older}},
			"Namespace x is ready: token credential ID JTI=b, expires 2026-11-23T12:00:00Z"},
	}
	for _, tc := range cases {
		if got := ProvisionedNote("Namespace x is ready", tc.issued); got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.name, got, tc.want)
		}
	}
}

// A Ready=False reason is a Warning refusal only when it is listed (the API's RefusalReasons, and
// OwnershipUnverified); a waiting reason, and any reason nobody listed, is not: a new waiting reason
// cannot turn into a Warning by being forgotten.
func TestRefusalEventsComeFromAList(t *testing.T) {
	refusals := append([]string{tenancyv1alpha1.OwnershipUnverifiedReason}, tenancyv1alpha1.RefusalReasons...)
	cases := map[string]bool{
		tenancyv1alpha1.ProvisioningReason:  false,
		tenancyv1alpha1.PendingReason:       false,
		tenancyv1alpha1.InternalErrorReason: false,
		"WaitingForSomethingNew":            false,
	}
	for _, r := range refusals {
		cases[r] = true
	}
	provisioning := []metav1.Condition{{Type: tenancyv1alpha1.ReadyCondition, Status: metav1.ConditionFalse, Reason: tenancyv1alpha1.ProvisioningReason}}
	for reason, refusal := range cases {
		t.Run(reason, func(t *testing.T) {
			before := provisioning
			if reason == tenancyv1alpha1.ProvisioningReason {
				before = nil
			}
			after := []metav1.Condition{{Type: tenancyv1alpha1.ReadyCondition, Status: metav1.ConditionFalse, Reason: reason, Message: "m"}}
			e := Transition(before, after)
			switch {
			case refusal && (e == nil || !e.Warning || e.Reason != reason || e.Action != "Refuse" || e.Note != "m"):
				t.Errorf("Transition(%s) = %+v, want a Warning Refuse %s", reason, e, reason)
			case !refusal && e != nil:
				t.Errorf("Transition(%s) = %+v, want no Event", reason, e)
			}
		})
	}
}
