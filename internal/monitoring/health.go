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

package monitoring

import (
	"context"
	"errors"
	"net/http"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/healthz"
)

// CacheSyncer is the part of the manager's cache that CacheSyncedCheck needs.
type CacheSyncer interface {
	WaitForCacheSync(ctx context.Context) bool
}

// CacheSyncedCheck returns a readiness check that fails until every informer of c has synced, so
// that a replica (leader or not) reports ready only once it can serve nsclaim_claims and take over
// reconciling without a cold cache. It waits at most one second per probe.
func CacheSyncedCheck(c CacheSyncer) healthz.Checker {
	return func(req *http.Request) error {
		ctx, cancel := context.WithTimeout(req.Context(), time.Second)
		defer cancel()
		if !c.WaitForCacheSync(ctx) {
			return errors.New("informer caches are not synced")
		}
		return nil
	}
}
