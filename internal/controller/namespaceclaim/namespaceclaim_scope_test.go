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

package namespaceclaim

import (
	"testing"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
	"github.com/nsclaim/nsclaim-operator/internal/claimpolicy"
)

// TestStopped is reconcileNormal's stop rule as a table: what stops every phase, and when a refused
// claim's namespace is still repaired.
func TestStopped(t *testing.T) {
	refused := &claimpolicy.Refusal{Reason: tenancyv1alpha1.TTLExceedsMaximumReason, Message: "x"}
	blocking := &claimpolicy.Refusal{Reason: tenancyv1alpha1.FenceNotIntactReason, Message: "x"}
	tests := []struct {
		name           string
		facts          func(s *claimScope)
		repair, access bool // stopped before a repair phase, before an access phase
	}{
		{name: "nothing recorded", facts: func(*claimScope) {}},
		{name: "expired", facts: func(s *claimScope) { s.expired = true }, repair: true, access: true},
		{name: "no class", facts: func(s *claimScope) { s.class = nil }, repair: true, access: true},
		{name: "released", facts: func(s *claimScope) { s.released = true }, repair: true, access: true},
		{name: "terminating", facts: func(s *claimScope) { s.terminating = "x" }, repair: true, access: true},
		{name: "waits for the fence check", facts: func(s *claimScope) { s.fencePending = true }, repair: true, access: true},
		{name: "namespace not usable yet", facts: func(s *claimScope) { s.unusable = "x" }, repair: true, access: true},
		{name: "refused, holds no namespace", facts: func(s *claimScope) { s.refusal, s.repairRefusal = refused, refused },
			repair: true, access: true},
		{name: "refused, holds its namespace: repaired, no access",
			facts: func(s *claimScope) {
				s.refusal, s.repairRefusal = refused, refused
				s.found.namespace.set("ci-pr-1")
			},
			access: true},
		{name: "refused for a reason that blocks repair",
			facts: func(s *claimScope) {
				s.refusal, s.repairRefusal = blocking, blocking
				s.claim.Status.Namespace = "ci-pr-1"
			},
			repair: true, access: true},
		{name: "refused by a phase after the lifecycle phases",
			facts: func(s *claimScope) {
				s.repairRefusal, s.refusal = refused, &claimpolicy.Refusal{Reason: tenancyv1alpha1.SecretConflictReason}
				s.claim.Status.Namespace = "ci-pr-1"
			},
			repair: true, access: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &claimScope{claim: &tenancyv1alpha1.NamespaceClaim{}, class: &tenancyv1alpha1.NamespaceClass{}}
			tt.facts(s)
			if got := s.stopped(true); got != tt.repair {
				t.Errorf("before a repair phase: stopped = %v, want %v", got, tt.repair)
			}
			if got := s.stopped(false); got != tt.access {
				t.Errorf("before an access phase: stopped = %v, want %v", got, tt.access)
			}
		})
	}
}
