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

	"github.com/nsclaim/nsclaim-operator/internal/kube"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// DefaultServiceAccounts is an informer cache of the `default` ServiceAccount of every namespace,
// metadata only (name, namespace, UID, resourceVersion): a claim is Ready only once its namespace has
// one (reconcileUsable), and the watch reports its creation, so the claim waits for an event instead
// of reading it from the API server. The manager's own cache holds only nsclaim's ServiceAccounts.
type DefaultServiceAccounts struct {
	sideCache
}

// NewDefaultServiceAccounts creates the cache (field selector metadata.name=default). Add it to the
// manager (it is a Runnable; AddSideCaches does) so it starts with the others.
func NewDefaultServiceAccounts(cfg *rest.Config, scheme *runtime.Scheme) (*DefaultServiceAccounts, error) {
	c, err := newSideCache(cfg, scheme, "the default ServiceAccount cache", map[client.Object]cache.ByObject{
		NewServiceAccountMetadata(): {Field: fields.OneTermEqualSelector("metadata.name", kube.DefaultServiceAccount)},
	}, stripToIdentity)
	if err != nil {
		return nil, err
	}
	return &DefaultServiceAccounts{sideCache: c}, nil
}

// DefaultServiceAccountsFrom reads the `default` ServiceAccounts from c, a cache the caller runs that
// holds ServiceAccounts as metadata; NewDefaultServiceAccounts makes the operator's own.
func DefaultServiceAccountsFrom(c cache.Cache) *DefaultServiceAccounts {
	return &DefaultServiceAccounts{sideCache: sideCache{cache: c}}
}

// Exists reports whether namespace ns has its `default` ServiceAccount, as the cache last saw it.
func (d *DefaultServiceAccounts) Exists(ctx context.Context, ns string) (bool, error) {
	return kube.Found(d.cache.Get(ctx, client.ObjectKey{Namespace: ns, Name: kube.DefaultServiceAccount}, NewServiceAccountMetadata()))
}

// Source is the watch that enqueues, for each `default` ServiceAccount event, what toClaims maps its
// namespace to.
func (d *DefaultServiceAccounts) Source(toClaims func(ctx context.Context, namespace string) []reconcile.Request) source.Source {
	return source.Kind(d.cache, client.Object(NewServiceAccountMetadata()), handler.EnqueueRequestsFromMapFunc(
		func(ctx context.Context, o client.Object) []reconcile.Request { return toClaims(ctx, o.GetNamespace()) }))
}

// NewServiceAccountMetadata returns an empty ServiceAccount as metadata only, the form this cache holds
// and a metadata-only GET reads.
func NewServiceAccountMetadata() *metav1.PartialObjectMetadata {
	sa := &metav1.PartialObjectMetadata{}
	sa.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ServiceAccount"))
	return sa
}

// stripToIdentity keeps of an object's metadata only what tells it apart: the cache answers "is it
// there", nothing more. The name (always `default`) and the namespace are shared copies.
func stripToIdentity(obj any) (any, error) {
	if m, ok := obj.(*metav1.PartialObjectMetadata); ok {
		return &metav1.PartialObjectMetadata{TypeMeta: m.TypeMeta, ObjectMeta: metav1.ObjectMeta{
			Name: intern(m.Name), Namespace: intern(m.Namespace), UID: m.UID, ResourceVersion: m.ResourceVersion}}, nil
	}
	return obj, nil
}
