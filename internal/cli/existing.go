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

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
)

// IfExists values: what "claim" does when a claim of the name exists.
const (
	// IfExistsUse waits for the existing claim (the default). An expired claim is recreated: it can never
	// be Ready again, and its name is the pipeline's to reuse.
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

// DecideExisting says what "claim" does given the existing claim (nil if none), the --if-exists policy
// and the class asked for (empty: any). It returns an *ExistsError for --if-exists=fail, and for a live
// claim of another class under "use" (spec.className is immutable: the caller must recreate).
func DecideExisting(existing *tenancyv1alpha1.NamespaceClaim, ifExists, class string) (Action, error) {
	if existing == nil {
		return ActionCreate, nil
	}
	st := Classify(existing)
	switch {
	case ifExists == IfExistsFail:
		return "", &ExistsError{Claim: existing.Name, Detail: fmt.Sprintf("it is %s and --if-exists=fail", st.Phase)}
	case st.Phase == PhaseDeleting:
		return ActionWaitGone, nil
	case ifExists == IfExistsRecreate || st.Phase == PhaseExpired:
		return ActionRecreate, nil
	case class != "" && existing.Spec.ClassName != class:
		return "", &ExistsError{Claim: existing.Name, Detail: fmt.Sprintf("it asks for class %q, not %q; use --if-exists=recreate", existing.Spec.ClassName, class)}
	}
	return ActionUse, nil
}

// ValidIfExists reports whether v is a value of --if-exists.
func ValidIfExists(v string) bool {
	return v == IfExistsUse || v == IfExistsRecreate || v == IfExistsFail
}
