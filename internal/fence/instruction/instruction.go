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

// Package instruction holds the one fence instruction per Kubernetes version that the plugin, the
// operator's OperatorCondition, the claims' conditions and the docs give (a test keeps the docs equal).
// It depends on nothing of nsclaim's, so the pure packages (internal/claimpolicy) may import it.
package instruction

import (
	"k8s.io/apimachinery/pkg/util/version"
)

// Part is a piece of the fence an instruction is for.
type Part string

const (
	// PartValidating is the fence proper (fence.yaml, config/fence/validating): the operator's
	// FenceIntact condition and the claims' FenceNotIntact refusal. Kubernetes 1.30 or newer.
	PartValidating Part = "validating"
	// PartKeyless is the creator stamp (fence-keyless.yaml, config/fence/keyless): the claims'
	// CreatorNotStamped refusal. Kubernetes 1.36 or newer (MutatingAdmissionPolicy v1).
	PartKeyless Part = "keyless"
)

// The commands of the instructions, as docs/troubleshooting.md and the README print them (a test keeps
// them equal).
const (
	ApplyValidating         = "kubectl apply --server-side -f fence.yaml"
	ApplyValidatingCheckout = "kubectl apply --server-side -k config/fence/validating"
	ApplyKeyless            = "kubectl apply --server-side -f fence-keyless.yaml"
	ApplyKeylessCheckout    = "kubectl apply --server-side -k config/fence/keyless"
)

var (
	minValidating = version.MajorMinor(1, 30)
	minKeyless    = version.MajorMinor(1, 36)
)

// Instruction is the one fence instruction for part on a cluster of serverVersion (its gitVersion,
// e.g. v1.35.2; empty or unreadable when unknown): what a cluster admin runs, the same wherever it is
// printed (the plugin, the OperatorCondition, the claims' conditions, the docs). config/fence as a
// whole holds MutatingAdmissionPolicies too, so it is never the instruction below Kubernetes 1.36.
func Instruction(part Part, serverVersion string) string {
	return InstructionFor(part, serverVersion, "")
}

// InstructionFor is Instruction naming the operator's release (empty: "the operator's release").
func InstructionFor(part Part, serverVersion, release string) string {
	of := "the operator's release"
	if release != "" {
		of = "release " + release
	}
	v, err := version.ParseGeneric(serverVersion)
	known := err == nil
	switch part {
	case PartValidating:
		if known && v.LessThan(minValidating) {
			return "this cluster is Kubernetes " + serverVersion + "; the fence (ValidatingAdmissionPolicy v1) needs 1.30 or newer: upgrade the cluster"
		}
		return "apply fence.yaml of " + of + " (" + ApplyValidating + "; from a checkout of that release: " + ApplyValidatingCheckout + ")"
	case PartKeyless:
		apply := "apply fence-keyless.yaml of " + of + " (" + ApplyKeyless + "; from a checkout of that release: " + ApplyKeylessCheckout + "), then create the claim again"
		older := "the creator stamp is a MutatingAdmissionPolicy (v1 in Kubernetes 1.36): below 1.36 keyless mode is not available; use a class of credentials mode Token"
		switch {
		case !known:
			return "on Kubernetes 1.36 or newer, " + apply + "; " + older
		case v.LessThan(minKeyless):
			return "this cluster is Kubernetes " + serverVersion + ": " + older
		}
		return apply
	}
	return "see docs/security.md"
}
