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

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// sideCache is an informer cache of its own beside the manager's, for objects the manager's cache does
// not hold: it caches only the kinds in its ByObject, each stripped by its transform before it is
// stored. It is a Runnable without GetCache, and it needs no leader election: every replica runs it
// from start-up, as it does the manager's caches, so a follower that takes over has it warm.
type sideCache struct {
	cache cache.Cache
}

// newSideCache creates a sideCache of the kinds in byObject, stripped by strip; what names it in the
// error.
func newSideCache(cfg *rest.Config, scheme *runtime.Scheme, what string, byObject map[client.Object]cache.ByObject, strip toolscache.TransformFunc) (sideCache, error) {
	// A side cache is read by Get and by field index only: no namespace index (withoutNamespaceIndex).
	c, err := cache.New(cfg, cache.Options{Scheme: scheme, ByObject: byObject, DefaultTransform: strip, NewInformer: withoutNamespaceIndex()})
	if err != nil {
		return sideCache{}, fmt.Errorf("creating %s: %w", what, err)
	}
	return sideCache{cache: c}, nil
}

// Start runs the cache until ctx ends.
func (s sideCache) Start(ctx context.Context) error { return s.cache.Start(ctx) }

// NeedLeaderElection is false: followers keep the cache too (it only reads).
func (s sideCache) NeedLeaderElection() bool { return false }

// AddSideCaches creates the caches the claim reconciler keeps beside the manager's own and adds them
// to mgr: every RoleBinding and ClusterRoleBinding nsclaim did not make, stripped to roleRef and
// subjects and indexed by subject, as are the ones it made in mgr's cache (the self-test finds grants
// made ahead of time for a tenant outside its namespace), and each
// namespace's `default` ServiceAccount, metadata only (Ready waits for it by a watch).
func AddSideCaches(mgr manager.Manager, cfg *rest.Config, scheme *runtime.Scheme) (*BindingIndex, *DefaultServiceAccounts, error) {
	bindings, err := NewBindingIndex(cfg, scheme, mgr.GetCache())
	if err != nil {
		return nil, nil, err
	}
	if err := mgr.Add(bindings); err != nil {
		return nil, nil, fmt.Errorf("adding the binding index: %w", err)
	}
	defaultSAs, err := NewDefaultServiceAccounts(cfg, scheme)
	if err != nil {
		return nil, nil, err
	}
	if err := mgr.Add(defaultSAs); err != nil {
		return nil, nil, fmt.Errorf("adding the default ServiceAccount cache: %w", err)
	}
	return bindings, defaultSAs, nil
}
