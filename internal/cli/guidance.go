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
	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
	"github.com/nsclaim/nsclaim-operator/internal/fence/instruction"
)

// Actors: who can change what a refusal depends on.
const (
	// ActorPipeline is the pipeline's author: the claim's own spec is at fault.
	ActorPipeline = "the pipeline (change the claim)"
	// ActorClassAdmin is whoever owns the NamespaceClass.
	ActorClassAdmin = "the class's admin (change the NamespaceClass)"
	// ActorClusterAdmin is the cluster's admin (RBAC, the admission fence, existing namespaces).
	ActorClusterAdmin = "the cluster admin"
	// ActorNobody: nothing to do but wait, or claim again.
	ActorNobody = "nobody: wait"
)

// Guidance is what a pipeline prints next to a claim's reason: who must act and what to do.
type Guidance struct {
	Actor  string
	Action string
}

// guidance maps each Ready reason a pipeline may see to its guidance. Every refusal reason of
// api/v1alpha1.RefusalReasons has an entry (a table test checks it).
var guidance = map[string]Guidance{
	tenancyv1alpha1.ClassNotFoundReason:          {ActorPipeline, "name an existing class with --class (kubectl get namespaceclasses), or ask the cluster admin to mark one as default"},
	tenancyv1alpha1.AmbiguousDefaultClassReason:  {ActorClusterAdmin, "mark only one NamespaceClass as default, or name a class with --class"},
	tenancyv1alpha1.ClassNotAllowedReason:        {ActorClassAdmin, "let the class's access.requesterNamespaceSelector select this namespace, or use another class"},
	tenancyv1alpha1.ClaimLimitExceededReason:     {ActorPipeline, "release claims you no longer need (kubectl nsclaim list; kubectl nsclaim release NAME), or ask for a higher access.maxClaimsPerNamespace"},
	tenancyv1alpha1.TTLExceedsMaximumReason:      {ActorPipeline, "ask for a shorter --ttl (at most the class's lifetime.maxTTL)"},
	tenancyv1alpha1.KeepExceedsMaximumReason:     {ActorPipeline, "ask for a shorter --keep (at most the class's lifetime.maxKeep, or its idleTTL when it sets none)"},
	tenancyv1alpha1.LabelNotAllowedReason:        {ActorPipeline, "drop the label, or ask the class's admin to add it to allowedClaimLabels"},
	tenancyv1alpha1.NamespaceConflictReason:      {ActorPipeline, "claim another namespace name; the existing namespace is not nsclaim's and is left alone"},
	tenancyv1alpha1.NamespaceTakenReason:         {ActorPipeline, "another claim holds that namespace name: leave --namespace-name unset (names derived per requester namespace never collide)"},
	tenancyv1alpha1.SecretConflictReason:         {ActorPipeline, "delete or rename the Secret that is in the way, or claim another name"},
	tenancyv1alpha1.MissingPermissionsReason:     {ActorClusterAdmin, "check the class's ClusterRoles (an aggregated one may have changed) and the cluster's authorizers; the claim is re-tested by itself (docs/troubleshooting.md)"},
	tenancyv1alpha1.ExcessPermissionsReason:      {ActorClusterAdmin, "remove the bindings named in the message: the identity must hold nothing outside its namespace (keyless: bind only nsclaim-operator-pipeline-keyless-role)"},
	tenancyv1alpha1.InvalidTokenPolicyReason:     {ActorPipeline, "set the token policy annotation to only-once or multiple-times"},
	tenancyv1alpha1.ClusterRoleNotBindableReason: {ActorClusterAdmin, "grant the operator bind on the class's ClusterRole, or change the class's clusterRole"},
	tenancyv1alpha1.PodSecurityNotAllowedReason:  {ActorClassAdmin, "raise the class's podSecurity to the operator's minimum"},
	tenancyv1alpha1.FenceNotIntactReason:         {ActorClusterAdmin, instruction.Instruction(instruction.PartValidating, "")},
	tenancyv1alpha1.TokenRevokedReason:           {ActorPipeline, "claim again: an only-once token is never re-issued"},
	tenancyv1alpha1.CreatorNotStampedReason:      {ActorClusterAdmin, instruction.Instruction(instruction.PartKeyless, "")},
	tenancyv1alpha1.CreatorNotAdmittedReason:     {ActorClassAdmin, "add your username to the class's credentials.requester.allowedUsernames, or use a class that admits it"},
	tenancyv1alpha1.ExpiredReason:                {ActorPipeline, "claim again: kubectl nsclaim claim recreates an expired claim of the same name"},
	tenancyv1alpha1.ReleasedReason:               {ActorNobody, "the namespace was released; the claim is deleted next, then the name may be claimed again"},
	tenancyv1alpha1.NamespaceTerminatingReason:   {ActorNobody, "the namespace is being deleted; the message says what it waits for (a finalizer blocking it is its owner's to remove)"},
	tenancyv1alpha1.PendingReason:                {ActorNobody, "the operator is working; wait"},
	tenancyv1alpha1.QueuedReason:                 {ActorNobody, "wait: the claim is admitted when a namespace of its NamespaceBudget is gone; release a claim the team no longer needs to make room (docs/budgets.md)"},
	tenancyv1alpha1.NoEligibleClusterReason:      {ActorNobody, "wait: a fleet hub places the claim once a member cluster may take it; the message says why each member may not now (docs/fleet.md)"},
	tenancyv1alpha1.BudgetExhaustedReason:        {ActorPipeline, "release claims the team no longer needs, or ask the cluster admin for a larger NamespaceBudget (docs/budgets.md)"},
	tenancyv1alpha1.QueueWaitExceededReason:      {ActorPipeline, "claim again later, release claims the team no longer needs, or ask for a larger NamespaceBudget (docs/budgets.md)"},
	tenancyv1alpha1.ProvisioningReason:           {ActorNobody, "the operator is working; wait"},
	tenancyv1alpha1.InternalErrorReason:          {ActorClusterAdmin, "the operator retries; if it persists, read the operator's log"},
}

// fenceParts are the reasons whose guidance is a fence instruction, which depends on the cluster's
// Kubernetes version (internal/fence/instruction.Instruction).
var fenceParts = map[string]instruction.Part{
	tenancyv1alpha1.FenceNotIntactReason:    instruction.PartValidating,
	tenancyv1alpha1.CreatorNotStampedReason: instruction.PartKeyless,
}

// NeedsServerVersion reports whether the guidance for reason depends on the cluster's version.
func NeedsServerVersion(reason string) bool {
	_, ok := fenceParts[reason]
	return ok
}

// GuidanceFor returns who must act on a claim whose Ready condition has reason, and what to do. An
// unknown reason (a newer operator's) is the cluster admin's to read up on.
func GuidanceFor(reason string) Guidance {
	return GuidanceOn(reason, "")
}

// GuidanceOn is GuidanceFor on a cluster of serverVersion (empty: unknown): a fence instruction is
// the one for that version.
func GuidanceOn(reason, serverVersion string) Guidance {
	if part, ok := fenceParts[reason]; ok {
		return Guidance{ActorClusterAdmin, instruction.Instruction(part, serverVersion)}
	}
	if g, ok := guidance[reason]; ok {
		return g
	}
	return Guidance{ActorClusterAdmin, "reason " + reason + " is unknown to this plugin: see the claim's conditions and the operator's documentation"}
}
