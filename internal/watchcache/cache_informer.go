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

package watchcache

import (
	"maps"
	"reflect"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// newInformerFunc is the type of cache.Options.NewInformer.
type newInformerFunc func(toolscache.ListerWatcher, runtime.Object, time.Duration, toolscache.Indexers) toolscache.SharedIndexInformer

// withoutNamespaceIndex returns an informer constructor that leaves out controller-runtime's namespace
// index for the kinds of unlisted (every kind when unlisted is empty). That index keeps, per kind and
// namespace, a set of the keys of the objects there: with one namespace per claim, a set per claim and
// kind, about 250 bytes each. Only a List in one namespace (client.InNamespace) reads it; such a List
// of a kind without it fails ("Index with name namespace does not exist"), so a kind is listed here
// only if nothing lists it by namespace. Gets, label and field-index Lists, and watches do not use it.
func withoutNamespaceIndex(unlisted ...client.Object) newInformerFunc {
	skip := map[reflect.Type]bool{}
	for _, o := range unlisted {
		skip[reflect.TypeOf(o)] = true
	}
	return func(lw toolscache.ListerWatcher, obj runtime.Object, resync time.Duration, indexers toolscache.Indexers) toolscache.SharedIndexInformer {
		if len(skip) == 0 || skip[reflect.TypeOf(obj)] {
			indexers = maps.Clone(indexers)
			delete(indexers, toolscache.NamespaceIndex)
		}
		return toolscache.NewSharedIndexInformer(lw, obj, resync, indexers)
	}
}
