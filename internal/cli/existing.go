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
	"fmt"

	"k8s.io/apimachinery/pkg/types"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
)

// IfExists values: what "claim" does when a claim of the name exists.
const (
	// IfExistsOwn waits for the existing claim only if it is the caller's own (the default): its
	// spec.creator, stamped by the API server (the fence's creator stamp, Kubernetes 1.36+), is the
	// caller, or this machine's claim record holds its UID. Any other claim is refused (ExitExists):
	// pipelines sharing a requester namespace cannot hand each other a claim to reuse.
	IfExistsOwn = ""
	// IfExistsUse waits for the existing claim whoever made it; given explicitly. An expired claim is
	// recreated: it can never be Ready again, and its name is the pipeline's to reuse.
	IfExistsUse = "use"
	// IfExistsRecreate deletes the existing claim (its namespace goes with it) and claims again.
	IfExistsRecreate = "recreate"
	// IfExistsFail exits with ExitExists.
	IfExistsFail = "fail"
)

// Action is what "claim" does about an existing claim.
type Action string

const (
	// ActionCreate: there is no claim: create it.
	ActionCreate Action = "create"
	// ActionUse: wait for the existing claim.
	ActionUse Action = "use"
	// ActionRecreate: delete the existing claim, wait until it is gone, create it.
	ActionRecreate Action = "recreate"
	// ActionWaitGone: the claim is being deleted: wait until it is gone, create it.
	ActionWaitGone Action = "wait-gone"
)

// DecideExisting says what "claim" does given the existing claim (nil if none), the --if-exists policy,
// the class asked for (empty: any) and whether the caller owns the claim (Owned). It returns an
// *ExistsError for --if-exists=fail, for another's claim under the default policy, and for a live claim
// of another class under "use" (spec.className is immutable: the caller must recreate).
func DecideExisting(existing *tenancyv1alpha1.NamespaceClaim, ifExists, class string, owned bool) (Action, error) {
	if existing == nil {
		return ActionCreate, nil
	}
	st := Classify(existing)
	switch {
	case ifExists == IfExistsFail:
		return "", &ExistsError{Claim: existing.Name, Detail: fmt.Sprintf("it is %s and --if-exists=fail", st.Phase)}
	case st.Phase == PhaseDeleting:
		return ActionWaitGone, nil
	case ifExists == IfExistsOwn && !owned:
		return "", &ExistsError{Claim: existing.Name, Detail: "it is not this caller's: its spec.creator is " + creatorOf(existing) +
			" and this machine has no record of making it; another pipeline's claim is never reused (pass --if-exists=use to reuse it anyway, or claim another name)"}
	case ifExists == IfExistsRecreate || st.Phase == PhaseExpired:
		return ActionRecreate, nil
	case class != "" && existing.Spec.ClassName != class:
		return "", &ExistsError{Claim: existing.Name, Detail: fmt.Sprintf("it asks for class %q, not %q; use --if-exists=recreate", existing.Spec.ClassName, class)}
	}
	return ActionUse, nil
}

// Owned reports whether existing is the caller's own claim: the API server stamped the caller
// (username) as its creator, or the caller's claim record (recordUID, empty if none) holds its UID.
// Both are out of another pipeline's reach: the stamp is written by admission, the record is a file
// on the caller's machine.
func Owned(existing *tenancyv1alpha1.NamespaceClaim, username string, recordUID types.UID) bool {
	if recordUID != "" && existing.UID == recordUID {
		return true
	}
	return username != "" && existing.Spec.Creator != nil && existing.Spec.Creator.Username == username
}

func creatorOf(claim *tenancyv1alpha1.NamespaceClaim) string {
	if claim.Spec.Creator == nil {
		return "not stamped (the fence's creator stamp needs Kubernetes 1.36+)"
	}
	return quoteShort(claim.Spec.Creator.Username)
}

// ValidIfExists reports whether v is a value of --if-exists.
func ValidIfExists(v string) bool {
	return v == IfExistsOwn || v == IfExistsUse || v == IfExistsRecreate || v == IfExistsFail
}

// SecretOfClaim checks that a credentials Secret (its labels) belongs to the claim: the operator
// labels the Secrets it writes with the claim's UID. A Secret of the name made by anyone else (another
// pipeline sharing the requester namespace) is refused with ExitExists, and its kubeconfig never used.
// The label can be trusted because the fence's label guard lets nobody but the operator put it on a
// Secret, nor change the data of a Secret that carries it (TestSecretWriterCannotSwapAClaimsCredentials).
func SecretOfClaim(labels map[string]string, claim *tenancyv1alpha1.NamespaceClaim) error {
	if got := labels[tenancyv1alpha1.ClaimUIDLabel]; got == "" || got != string(claim.UID) {
		return &ExistsError{Claim: claim.Namespace + "/" + claim.Name, Detail: fmt.Sprintf(
			"its credentials Secret %s is not the claim's (label %s is %q, not the claim's UID %s): it was not written by the operator for this claim, and is not used",
			claim.Status.CredentialsSecretName, tenancyv1alpha1.ClaimUIDLabel, got, claim.UID)}
	}
	return nil
}
