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
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/source"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
	"github.com/nsclaim/nsclaim-operator/internal/kube"
)

// Seeds holds the two caches of a class's seeds (docs/seeds.md): the sources, the Secrets and
// ConfigMaps of the one seed namespace that carry seeds.nsclaim.dev/class (read through a Role in that
// namespace: no cluster-wide read of Secrets), and the ConfigMap copies in claimed namespaces, which
// carry seeds.nsclaim.dev/seed (the operator may already read ConfigMaps cluster-wide). Secret copies
// are not cached: the operator never reads a Secret outside the seed namespace; the label guard keeps
// anyone else from changing their data, and each reconcile applies them.
type Seeds struct {
	// Namespace is the seed namespace.
	Namespace string
	sources   sideCache
	copies    sideCache
}

// NewSeeds creates the caches of the seed namespace ns. Add it to the manager (AddSeeds does).
func NewSeeds(cfg *rest.Config, scheme *runtime.Scheme, ns string) (*Seeds, error) {
	consented, err := labels.NewRequirement(tenancyv1alpha1.SeedClassLabel, selection.Exists, nil)
	if err != nil {
		return nil, err
	}
	inSeedNS := map[string]cache.Config{ns: {LabelSelector: labels.NewSelector().Add(*consented)}}
	sources, err := newSideCache(cfg, scheme, "the seed sources cache", map[client.Object]cache.ByObject{
		&corev1.Secret{}: {Namespaces: inSeedNS}, &corev1.ConfigMap{}: {Namespaces: inSeedNS},
	}, stripManagedFields)
	if err != nil {
		return nil, err
	}
	copied, err := labels.NewRequirement(tenancyv1alpha1.SeedLabel, selection.Exists, nil)
	if err != nil {
		return nil, err
	}
	copies, err := newSideCache(cfg, scheme, "the seed copies cache", map[client.Object]cache.ByObject{
		&corev1.ConfigMap{}: {Label: labels.NewSelector().Add(*copied)},
	}, stripManagedFields)
	if err != nil {
		return nil, err
	}
	return &Seeds{Namespace: ns, sources: sources, copies: copies}, nil
}

// AddSeeds creates the seed caches of ns and adds them to mgr; nil when ns is empty (seeds off).
func AddSeeds(mgr manager.Manager, cfg *rest.Config, scheme *runtime.Scheme, ns string) (*Seeds, error) {
	if ns == "" {
		return nil, nil
	}
	s, err := NewSeeds(cfg, scheme, ns)
	if err != nil {
		return nil, err
	}
	for _, c := range []sideCache{s.sources, s.copies} {
		if err := mgr.Add(c); err != nil {
			return nil, fmt.Errorf("adding the seed caches: %w", err)
		}
	}
	return s, nil
}

// Source returns the source object of kind and name in the seed namespace, or nil when the cache
// holds none (absent, or without the opt-in label).
func (s *Seeds) Source(ctx context.Context, kind tenancyv1alpha1.SeedKind, name string) (client.Object, error) {
	var obj client.Object
	switch kind {
	case tenancyv1alpha1.SeedKindSecret:
		obj = &corev1.Secret{}
	case tenancyv1alpha1.SeedKindConfigMap:
		obj = &corev1.ConfigMap{}
	default:
		return nil, nil
	}
	ok, err := kube.Found(s.sources.cache.Get(ctx, client.ObjectKey{Namespace: s.Namespace, Name: name}, obj))
	if err != nil || !ok {
		return nil, err
	}
	return obj, nil
}

// ConfigMapCopy returns the ConfigMap copy name in namespace ns, or nil when there is none.
func (s *Seeds) ConfigMapCopy(ctx context.Context, ns, name string) (*corev1.ConfigMap, error) {
	cm := &corev1.ConfigMap{}
	ok, err := kube.Found(s.copies.cache.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, cm))
	if err != nil || !ok {
		return nil, err
	}
	return cm, nil
}

// Watches returns the sources that enqueue, for a source's event, what fromSource maps it to (the
// claims of the classes that name it), and for a copy's event what fromCopy maps it to (its claim).
func (s *Seeds) Watches(fromSource, fromCopy handler.MapFunc) []source.Source {
	return []source.Source{
		source.Kind(s.sources.cache, client.Object(&corev1.Secret{}), handler.EnqueueRequestsFromMapFunc(fromSource)),
		source.Kind(s.sources.cache, client.Object(&corev1.ConfigMap{}), handler.EnqueueRequestsFromMapFunc(fromSource)),
		source.Kind(s.copies.cache, client.Object(&corev1.ConfigMap{}), handler.EnqueueRequestsFromMapFunc(fromCopy)),
	}
}

// stripManagedFields drops managedFields, which nothing reads.
func stripManagedFields(obj any) (any, error) {
	if o, ok := obj.(client.Object); ok {
		o.SetManagedFields(nil)
	}
	return obj, nil
}
