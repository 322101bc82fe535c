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

package namespaceclaim

import "context"

// reconcileRequestOwner makes the namespace of a request claim own its request ConfigMap, through the
// ConfigMap protocol's hook (RequestProtocol.OwnRequest). It runs before the credentials are written,
// so a pipeline never holds a token whose namespace could be deleted while its request stays behind.
// A claim that is no request, or has no namespace yet, changes nothing.
func (r *NamespaceClaimReconciler) reconcileRequestOwner(ctx context.Context, s *claimScope) error {
	if !s.request || s.namespace == nil {
		return nil
	}
	return r.Requests.OwnRequest(ctx, r.Client, s.claim, s.namespace)
}
