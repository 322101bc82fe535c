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
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func TestWithoutNamespaceIndex(t *testing.T) {
	indexers := toolscache.Indexers{toolscache.NamespaceIndex: toolscache.MetaNamespaceIndexFunc, "other": toolscache.MetaNamespaceIndexFunc}
	cases := []struct {
		name     string
		unlisted []client.Object
		obj      runtime.Object
		want     bool // namespace index kept
	}{
		{"a listed kind keeps it", []client.Object{&corev1.ServiceAccount{}}, &rbacv1.RoleBinding{}, true},
		{"an unlisted kind has none", []client.Object{&corev1.ServiceAccount{}}, &corev1.ServiceAccount{}, false},
		{"no kinds given: none for any", nil, &metav1.PartialObjectMetadata{}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			inf := withoutNamespaceIndex(c.unlisted...)(&toolscache.ListWatch{}, c.obj, 0, indexers)
			got := inf.GetIndexer().GetIndexers()
			if _, ok := got[toolscache.NamespaceIndex]; ok != c.want {
				t.Fatalf("namespace index kept = %v, want %v", ok, c.want)
			}
			if _, ok := got["other"]; !ok {
				t.Fatal("another index was dropped")
			}
		})
	}
	if _, ok := indexers[toolscache.NamespaceIndex]; !ok {
		t.Fatal("the caller's indexers were changed")
	}
}
