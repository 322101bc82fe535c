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

package kube

import (
	"slices"

	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
)

// NotOwnWrites passes the events of an object that a reconciler acts on, when the reconciler's own writes
// to it are its status and its finalizer: its creation and deletion, a spec change (generation), a
// label or annotation change, the start of its deletion, and the loss of finalizer (so one removed by
// anyone else is put back at once). A status write and the adding of finalizer queue nothing: each would
// queue the object once more for a write the reconciler made itself.
func NotOwnWrites(finalizer string) predicate.Predicate {
	return predicate.Or(predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}, predicate.LabelChangedPredicate{},
		predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
			started := e.ObjectOld.GetDeletionTimestamp().IsZero() && !e.ObjectNew.GetDeletionTimestamp().IsZero()
			lost := slices.Contains(e.ObjectOld.GetFinalizers(), finalizer) && !slices.Contains(e.ObjectNew.GetFinalizers(), finalizer)
			return started || lost
		}})
}
