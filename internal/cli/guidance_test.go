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

package cli

import (
	"strings"
	"testing"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
	"github.com/nsclaim/nsclaim-operator/internal/fence/instruction"
)

// Every refusal the operator can give has specific guidance, not the fallback for unknown reasons.
func TestEveryRefusalReasonHasGuidance(t *testing.T) {
	for _, r := range append(tenancyv1alpha1.RefusalReasons, tenancyv1alpha1.ExpiredReason) {
		if _, ok := guidance[r]; !ok {
			t.Errorf("no guidance for reason %s", r)
		}
	}
}

func TestGuidanceFor(t *testing.T) {
	for _, tc := range []struct {
		reason     string
		wantActor  string
		wantAction string
	}{
		{tenancyv1alpha1.NamespaceTakenReason, ActorPipeline, "leave --namespace-name unset"},
		{tenancyv1alpha1.TTLExceedsMaximumReason, ActorPipeline, "shorter --ttl"},
		{tenancyv1alpha1.CreatorNotAdmittedReason, ActorClassAdmin, "allowedUsernames"},
		{tenancyv1alpha1.ClassNotAllowedReason, ActorClassAdmin, "requesterNamespaceSelector"},
		{tenancyv1alpha1.FenceNotIntactReason, ActorClusterAdmin, "config/fence"},
		{tenancyv1alpha1.ExcessPermissionsReason, ActorClusterAdmin, "pipeline-keyless-role"},
		{tenancyv1alpha1.ExpiredReason, ActorPipeline, "recreates an expired claim"},
		{tenancyv1alpha1.PendingReason, ActorNobody, "wait"},
		{tenancyv1alpha1.NoEligibleClusterReason, ActorNobody, "member cluster"},
		{"SomethingNew", ActorClusterAdmin, "unknown to this plugin"},
	} {
		t.Run(tc.reason, func(t *testing.T) {
			g := GuidanceFor(tc.reason)
			if g.Actor != tc.wantActor || !strings.Contains(g.Action, tc.wantAction) {
				t.Errorf("GuidanceFor(%s) = %+v, want actor %q and an action containing %q", tc.reason, g, tc.wantActor, tc.wantAction)
			}
		})
	}
}

func TestRefusedErrorNamesReasonMessageAndActor(t *testing.T) {
	msg := (&RefusedError{Claim: "pr-1", Reason: tenancyv1alpha1.TTLExceedsMaximumReason, Message: "spec.ttl 9h exceeds the maximum 8h"}).Error()
	for _, want := range []string{"pr-1", "TTLExceedsMaximum", "spec.ttl 9h exceeds the maximum 8h", "who must act: " + ActorPipeline, "shorter --ttl"} {
		if !strings.Contains(msg, want) {
			t.Errorf("%q does not contain %q", msg, want)
		}
	}
}

// The fence reasons' guidance is the fence instruction for the cluster's version, the one the operator
// and the docs give.
func TestGuidanceOnGivesTheFenceInstruction(t *testing.T) {
	for _, tc := range []struct {
		reason  string
		part    instruction.Part
		version string
	}{
		{tenancyv1alpha1.FenceNotIntactReason, instruction.PartValidating, "v1.33.0"},
		{tenancyv1alpha1.FenceNotIntactReason, instruction.PartValidating, ""},
		{tenancyv1alpha1.CreatorNotStampedReason, instruction.PartKeyless, "v1.35.2"},
		{tenancyv1alpha1.CreatorNotStampedReason, instruction.PartKeyless, "v1.36.0"},
		{tenancyv1alpha1.CreatorNotStampedReason, instruction.PartKeyless, ""},
	} {
		g := GuidanceOn(tc.reason, tc.version)
		if want := instruction.Instruction(tc.part, tc.version); g.Action != want || g.Actor != ActorClusterAdmin {
			t.Errorf("GuidanceOn(%s, %q) = %+v, want the cluster admin and %q", tc.reason, tc.version, g, want)
		}
	}
	if !NeedsServerVersion(tenancyv1alpha1.FenceNotIntactReason) || NeedsServerVersion(tenancyv1alpha1.TTLExceedsMaximumReason) {
		t.Error("NeedsServerVersion is wrong")
	}
}
