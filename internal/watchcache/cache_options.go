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
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
)

// ManagedTypes are the namespaced kinds nsclaim creates inside the namespaces it provisions; the
// manager caches only those objects of them that carry nsclaim's managed-by label, never every
// RoleBinding of the cluster. Secrets are not among them: the operator never reads a Secret.
func ManagedTypes() []client.Object {
	return []client.Object{
		&corev1.ServiceAccount{}, &corev1.ResourceQuota{}, &corev1.LimitRange{},
		&rbacv1.Role{}, &rbacv1.RoleBinding{}, &networkingv1.NetworkPolicy{},
	}
}

// CacheOptions limits the manager's informer caches of ManagedTypes to the objects that carry
// nsclaim's managed-by label, and its ConfigMap cache to the requests namespace of the ConfigMap
// protocol (requestsNamespace; empty when the protocol is off, and then no ConfigMap is read). reuse,
// when not nil, watches the Namespace informer for names that were in use moments ago (see
// NamespaceReuse).
func CacheOptions(requestsNamespace string, reuse *NamespaceReuse) cache.Options {
	managed := labels.SelectorFromSet(labels.Set{tenancyv1alpha1.ManagedByLabel: tenancyv1alpha1.ManagedByValue})
	byObject := map[client.Object]cache.ByObject{}
	for _, o := range ManagedTypes() {
		byObject[o] = cache.ByObject{Label: managed}
	}
	// The tenants' namespace watchers; ClusterRoles are cached whole (the self-test reads the classes'
	// roles).
	byObject[&rbacv1.ClusterRoleBinding{}] = cache.ByObject{Label: managed}
	if requestsNamespace != "" {
		byObject[&corev1.ConfigMap{}] = cache.ByObject{Namespaces: map[string]cache.Config{requestsNamespace: {}}}
	}
	// Nothing reads managedFields: dropping them from cached objects roughly halves the cache; see
	// compactForCache for the rest.
	// No List reads these kinds in one namespace (RoleBindings are: pruneChildren; claims and
	// ConfigMaps too), so their informers keep no namespace index: see withoutNamespaceIndex.
	unlisted := withoutNamespaceIndex(&corev1.ServiceAccount{}, &corev1.ResourceQuota{}, &corev1.LimitRange{},
		&rbacv1.Role{}, &networkingv1.NetworkPolicy{})
	if reuse != nil {
		byObject[&corev1.Namespace{}] = cache.ByObject{Transform: reuse.Transform(compactForCache())}
	}
	return cache.Options{ByObject: byObject, DefaultTransform: compactForCache(), NewInformer: unlisted}
}
