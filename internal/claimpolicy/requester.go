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

package claimpolicy

import (
	"fmt"
	"regexp"
	"strings"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
	"github.com/nsclaim/nsclaim-operator/internal/fence/instruction"
)

// StampSettle is how long after the creator stamp was last created or written a claim must have been
// created for its spec.creator to be trusted: an admission policy reaches the API server's admission
// chain a moment after it is written (each API server watches the policies), and creation timestamps
// have second precision.
const StampSettle = 2 * time.Second

// stampRef names the creator stamp in messages.
const stampRef = "the MutatingAdmissionPolicy nsclaim-operator-stamp-creator and its binding (config/fence)"

// operatorUser matches the operator's own ServiceAccount in any install namespace, as the fence's match
// condition does.
var operatorUser = regexp.MustCompile(`^system:serviceaccount:[^:]+:nsclaim-operator-controller-manager$`)

// IsRequesterMode reports whether class binds the claim's creator (credentials mode Requester).
func IsRequesterMode(class *tenancyv1alpha1.NamespaceClass) bool {
	return class != nil && class.Spec.Credentials.Mode == tenancyv1alpha1.CredentialsModeRequester
}

// StampState is what the operator knows about the creator stamp when it decides on a claim.
type StampState struct {
	// Intact is set when the policy and its binding are installed as shipped.
	Intact bool
	// Problems say what is wrong with them when not Intact.
	Problems []string
	// InForceSince is the latest creation or write of the policy or its binding.
	InForceSince time.Time
}

// MatchUsername reports whether username matches pattern as a whole: `*` matches any run of characters
// (none included), every other character matches itself (no regular expression is built from either).
func MatchUsername(pattern, username string) bool {
	// Greedy matching with a single backtrack point: the last `*` seen and where its run ends.
	p, u := 0, 0
	star, mark := -1, 0
	for u < len(username) {
		switch {
		case p < len(pattern) && pattern[p] == '*':
			star, mark = p, u
			p++
		case p < len(pattern) && pattern[p] == username[u]:
			p++
			u++
		case star >= 0:
			mark++
			p, u = star+1, mark
		default:
			return false
		}
	}
	for p < len(pattern) && pattern[p] == '*' {
		p++
	}
	return p == len(pattern)
}

// CheckCreator decides whether the creator of claim may be bound in the namespace of a class of
// credentials mode Requester. bound says the creator was bound before (status.boundUser names it): the
// stamp was verified then, so only the class's admission is checked again. requestClaim says the claim
// stands for a ConfigMap protocol request, which the operator creates under its own identity. The
// refusal names what is missing: CreatorNotStamped when spec.creator cannot be trusted to come from the
// API server, CreatorNotAdmitted when the class does not admit it.
func CheckCreator(claim *tenancyv1alpha1.NamespaceClaim, class *tenancyv1alpha1.NamespaceClass, stamp StampState, bound, requestClaim bool) *Refusal {
	if !IsRequesterMode(class) {
		return nil
	}
	creator := claim.Spec.Creator
	if requestClaim || (creator != nil && operatorUser.MatchString(creator.Username)) {
		return &Refusal{Reason: tenancyv1alpha1.CreatorNotAdmittedReason, Message: fmt.Sprintf(
			"The claim was created by the operator (the ConfigMap protocol), whose identity is never bound: NamespaceClass %s binds the claim's creator (spec.credentials.mode Requester), and the ConfigMap protocol supports mode Token only", class.Name)}
	}
	if creator == nil {
		return &Refusal{Reason: tenancyv1alpha1.CreatorNotStampedReason, Message: fmt.Sprintf(
			"The claim has no spec.creator: NamespaceClass %s binds the claim's creator (spec.credentials.mode Requester), which the API server records at creation through %s. Install it as shipped and create the claim again", class.Name, stampRef)}
	}
	if !bound {
		if !stamp.Intact {
			problems := strings.Join(stamp.Problems, "; ")
			if problems == "" {
				problems = "not checked"
			}
			return &Refusal{Reason: tenancyv1alpha1.CreatorNotStampedReason, Message: fmt.Sprintf(
				"The claim's spec.creator cannot be verified: NamespaceClass %s binds the claim's creator (spec.credentials.mode Requester), and %s is not installed as shipped (%s). Cluster admin: %s", class.Name, stampRef, problems, instruction.Instruction(instruction.PartKeyless, ""))}
		}
		if !claim.CreationTimestamp.After(stamp.InForceSince.Add(StampSettle)) {
			return &Refusal{Reason: tenancyv1alpha1.CreatorNotStampedReason, Message: fmt.Sprintf(
				"The claim was created at %s, before %s was in force (last written at %s, plus %s to take effect): its spec.creator may not come from the API server. Create the claim again",
				claim.CreationTimestamp.UTC().Format(time.RFC3339), stampRef, stamp.InForceSince.UTC().Format(time.RFC3339), StampSettle)}
		}
	}
	var allowed []string
	if class.Spec.Credentials.Requester != nil {
		allowed = class.Spec.Credentials.Requester.AllowedUsernames
	}
	for _, p := range allowed {
		if MatchUsername(p, creator.Username) {
			return nil
		}
	}
	return &Refusal{Reason: tenancyv1alpha1.CreatorNotAdmittedReason, Message: fmt.Sprintf(
		"The claim's creator %q matches none of NamespaceClass %s's spec.credentials.requester.allowedUsernames", creator.Username, class.Name)}
}

// CreatorSubjects are the subjects that bind creator: its username, and each of its groups that
// bindGroups lists (never a system: group, whatever the list says).
func CreatorSubjects(creator *tenancyv1alpha1.ClaimCreator, bindGroups []string) []rbacv1.Subject {
	out := []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: creator.Username}}
	for _, g := range creator.Groups {
		if strings.HasPrefix(g, "system:") {
			continue
		}
		for _, b := range bindGroups {
			if g == b {
				out = append(out, rbacv1.Subject{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: g})
				break
			}
		}
	}
	return out
}

// BindCreator turns d into the desired state of a class of credentials mode Requester whose creator is
// admitted: no ServiceAccount, and the tenant's RoleBindings (the class's role and the release role)
// and its namespace watcher name the creator instead. The tenant identity the self-test checks is the
// creator as stamped (username and every group).
func BindCreator(d *Desired, creator *tenancyv1alpha1.ClaimCreator, class *tenancyv1alpha1.NamespaceClass) {
	var bindGroups []string
	if class.Spec.Credentials.Requester != nil {
		bindGroups = class.Spec.Credentials.Requester.BindGroups
	}
	setTenantSubjects(d, CreatorSubjects(creator, bindGroups))
	d.TenantUser = creator.Username
	d.TenantGroups = append([]string(nil), creator.Groups...)
}

// Unbind turns d into the desired state of a class of credentials mode Requester whose claim may not
// be bound (yet): no ServiceAccount, and the tenant's RoleBindings and namespace watcher name nobody.
func Unbind(d *Desired) {
	setTenantSubjects(d, nil)
	d.TenantUser, d.TenantGroups = "", nil
}

// setTenantSubjects replaces the subjects of the tenant's two RoleBindings (the first two of
// d.RoleBindings) and of its namespace watcher binding, and drops the ServiceAccount.
func setTenantSubjects(d *Desired, subjects []rbacv1.Subject) {
	d.ServiceAccount = nil
	for i, rb := range d.RoleBindings {
		if i < 2 && (rb.Name == TenantRoleBindingName || rb.Name == ReleaseRoleName) {
			rb.Subjects = append([]rbacv1.Subject(nil), subjects...)
		}
	}
	if d.NamespaceWatcherBinding != nil {
		d.NamespaceWatcherBinding.Subjects = append([]rbacv1.Subject(nil), subjects...)
	}
}

// CheckClassStamp is what a class of credentials mode Requester reports while the creator stamp its
// claims depend on is missing or altered: every new claim of it is refused with CreatorNotStamped.
func CheckClassStamp(class *tenancyv1alpha1.NamespaceClass, stamp StampState) *Refusal {
	if !IsRequesterMode(class) || stamp.Intact {
		return nil
	}
	problems := strings.Join(stamp.Problems, "; ")
	if problems == "" {
		problems = "not checked"
	}
	return &Refusal{Reason: tenancyv1alpha1.CreatorNotStampedReason, Message: fmt.Sprintf(
		"spec.credentials.mode is Requester, but %s is not installed as shipped (%s): new claims of this class are refused until a cluster admin acts: %s", stampRef, problems, instruction.Instruction(instruction.PartKeyless, ""))}
}
