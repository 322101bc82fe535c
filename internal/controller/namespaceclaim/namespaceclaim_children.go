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
	"context"

	"github.com/nsclaim/nsclaim-operator/internal/controller/namespaceclaim/children"
)

// reconcileChildren makes the objects in the namespace match the class and deletes the ones it no longer
// asks for (children.Phase): it hands the phase the part of the scope it reads and takes back what it
// recorded.
func (r *NamespaceClaimReconciler) reconcileChildren(ctx context.Context, s *claimScope) error {
	c := &children.Claim{Claim: s.claim, Now: s.now, Class: s.class, Owner: s.owner, Desired: &s.desired, Namespace: s.namespace,
		HandedOut: s.handedOut, DeferMarks: marksDeferrable(s), Repaired: s.repaired, Refusal: s.refusal,
		GrantsAt: s.grantsAt, MarksDeferred: s.marksDeferred, ChildrenReady: s.childrenReady}
	p := &children.Phase{Client: r.Client, APIReader: r.APIReader, NameReuse: r.NameReuse}
	err := p.Reconcile(ctx, c)
	s.repaired, s.refusal, s.grantsAt, s.marksDeferred, s.childrenReady = c.Repaired, c.Refusal, c.GrantsAt, c.MarksDeferred, c.ChildrenReady
	return err
}

// marksDeferrable reports whether the children of the claim's namespace that lack only the claim's
// marks are left so for now (childapply.Options.DeferMarks): within pooledMarksDelay of a handout. What a
// child grants or limits is the same with and without the marks (the pool made it from the class as it
// is now); they tell the claim's cache and the operator's maps whose it is, which its namespace, marked
// at handout, tells as well. So a handout writes only what a tenant's use needs, the bindings, and the
// marks follow in a later reconcile, no repair (claimMarksOnly).
func marksDeferrable(s *claimScope) bool {
	at := handedOutAt(s)
	return !at.IsZero() && s.now.Before(at.Add(pooledMarksDelay))
}
