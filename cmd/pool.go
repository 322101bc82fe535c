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

package main

import (
	"fmt"

	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/nsclaim/nsclaim-operator/internal/controller/namespaceclaim"
	"github.com/nsclaim/nsclaim-operator/internal/controller/namespaceclass"
	"github.com/nsclaim/nsclaim-operator/internal/controller/namespacepool"
	"github.com/nsclaim/nsclaim-operator/internal/monitoring"
)

// setupClaimsAndPool sets up the claim reconciler claims and, beside it, the warm pool's reconciler
// (docs/pool.md), which shares its side caches, name-reuse tracker and fence, and registers the pool's
// metrics collector. The pool's counts go to pools, which the class reconciler writes to status.pool.
func setupClaimsAndPool(mgr ctrl.Manager, claims *namespaceclaim.NamespaceClaimReconciler, pools *namespaceclass.PoolReports, refillRate float64) error {
	claims.Pool = &namespacepool.Handout{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Recorder: mgr.GetEventRecorder("nsclaim"),
		DefaultServiceAccounts: claims.DefaultServiceAccounts, NameReuse: claims.NameReuse, Bindings: claims.Bindings, Ownership: claims.Ownership}
	if err := claims.SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up NamespaceClaim controller: %w", err)
	}
	if err := (&namespacepool.PoolReconciler{
		Client:                 mgr.GetClient(),
		APIReader:              mgr.GetAPIReader(),
		Recorder:               mgr.GetEventRecorder("nsclaim"),
		Clock:                  clock.RealClock{},
		DefaultServiceAccounts: claims.DefaultServiceAccounts,
		NameReuse:              claims.NameReuse,
		Ownership:              claims.Ownership,
		ClaimsBusy:             claims.Busy,
		FenceCovers:            claims.FenceCoversPool,
		RefillRate:             refillRate,
		Reports:                pools,
	}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up namespace pool controller: %w", err)
	}
	if err := ctrlmetrics.Registry.Register(monitoring.NewPoolCollector(mgr.GetCache())); err != nil {
		return fmt.Errorf("registering pool metrics: %w", err)
	}
	return nil
}

// defaultPoolRefillRate is --pool-refill-rate's default.
const defaultPoolRefillRate = namespacepool.DefaultRefillRate
