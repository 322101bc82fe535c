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

package namespaceclass

import (
	"k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
)

// NotOnlyPoolCounts passes every class event but an update that changed only status.pool (and the
// object's resourceVersion and managedFields): the pool's counts, written after handouts and refills,
// change nothing a claim or the pool reconciler decides on, and would otherwise reconcile every claim
// of the class and its pool again at each write.
func NotOnlyPoolCounts() predicate.Predicate {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		oldClass, ok1 := e.ObjectOld.(*tenancyv1alpha1.NamespaceClass)
		newClass, ok2 := e.ObjectNew.(*tenancyv1alpha1.NamespaceClass)
		return !ok1 || !ok2 || !onlyPoolCountsChanged(oldClass, newClass)
	}}
}

// onlyPoolCountsChanged reports whether old and cur differ in nothing but status.pool, the
// resourceVersion and the managedFields.
func onlyPoolCountsChanged(old, cur *tenancyv1alpha1.NamespaceClass) bool {
	a, b := old.DeepCopy(), cur.DeepCopy()
	for _, c := range []*tenancyv1alpha1.NamespaceClass{a, b} {
		c.Status.Pool = nil
		c.ResourceVersion = ""
		c.ManagedFields = nil
	}
	return equality.Semantic.DeepEqual(a, b)
}
