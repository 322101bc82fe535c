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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
	"github.com/nsclaim/nsclaim-operator/internal/claimpolicy"
)

// compactForCache is the transform of the manager's informer caches. Nothing reads managedFields, so
// they are dropped. A ResourceQuota's status.used (it changes with every Pod) is dropped too: only
// status.hard is read (the usable check). Every cached child of a claim repeats the same label and
// annotation keys, the claim's name, namespace and UID as values, its namespace's name and its owner
// references; protobuf decoding gives each object its own copies, so those are interned (one copy
// shared by every object; a value equal to the object's name shares the name). The children of one
// claim carry the same labels, so equal label maps are shared whole, except a map that holds the
// object's own name (a namespace's kubernetes.io/metadata.name), which no other object has. The same
// child of every claim of a class carries the same annotations (its claimpolicy.AppliedAnnotation digest), so
// those maps are shared whole too (compactAnnotations). The specs every claim of a class
// repeats (quota, limit range, network policy) are shared whole, and the strings of
// role references, subjects and rules are interned (compactSpec). Values are equal before and after,
// so no read sees a difference.
//
// The transform never writes a map it did not make: a label map may already be shared (client-go may
// hand the transform an object it has transformed before), and the caches read shared maps
// concurrently. It builds new maps and sets them instead.
func compactForCache() toolscache.TransformFunc {
	strip := cache.TransformStripManagedFields()
	return func(in any) (any, error) {
		obj, err := strip(in)
		if err != nil {
			return obj, err
		}
		compactSpec(obj)
		if o, ok := obj.(metav1.Object); ok {
			name := o.GetName()
			if ns := o.GetNamespace(); ns != "" {
				o.SetNamespace(intern(ns))
			}
			if l := internValues(o.GetLabels(), name, false); l != nil {
				if !holdsValue(l, name) {
					l = shareLabels(l)
				}
				o.SetLabels(l)
			}
			if a := o.GetAnnotations(); len(a) > 0 {
				o.SetAnnotations(compactAnnotations(a, name))
			}
			if f := o.GetFinalizers(); len(f) > 0 {
				o.SetFinalizers(internAll(f))
			}
			refs := o.GetOwnerReferences()
			for i := range refs {
				ref := &refs[i]
				ref.APIVersion, ref.Kind = intern(ref.APIVersion), intern(ref.Kind)
				ref.Name, ref.UID = intern(ref.Name), types.UID(intern(string(ref.UID)))
			}
		}
		return obj, nil
	}
}

// compactAnnotations returns a map equal to the annotations a of the object called name. A child's
// annotations (its claimpolicy.AppliedAnnotation digest, the same for that child of every claim of a class) are
// shared whole, like labels. A map that names a claim (a namespace's, or a child's made before children
// lost the claim-name annotation), holds an ownership record (a namespace's) or holds the object's name
// is no other object's: it is not shared,
// and its digest, then unique too, is not interned. a is not written.
func compactAnnotations(a map[string]string, name string) map[string]string {
	_, named := a[tenancyv1alpha1.ClaimNameAnnotation]
	_, recorded := a[tenancyv1alpha1.OwnershipAnnotation]
	if named || recorded || holdsValue(a, name) {
		return internValues(a, name, false)
	}
	return shareLabels(internValues(a, name, true))
}

// internValues returns a new map equal to m whose keys and values are shared copies of equal content:
// a value equal to name is name itself, claimpolicy.AppliedAnnotation's digest is interned only with digests set,
// and an ownership record never.
// It returns nil for an empty m. m is not written.
func internValues(m map[string]string, name string, digests bool) map[string]string {
	if len(m) == 0 {
		return nil
	}
	interned := make(map[string]string, len(m))
	for k, v := range m {
		switch {
		case v == name:
			v = name
		case k == tenancyv1alpha1.OwnershipAnnotation:
			// A namespace's ownership record is its own: interning it would only fill the table.
		case digests || k != claimpolicy.AppliedAnnotation:
			v = intern(v)
		}
		interned[intern(k)] = v
	}
	return interned
}
