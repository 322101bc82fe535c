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

import (
	"context"

	"github.com/nsclaim/nsclaim-operator/internal/claimpolicy"
)

// reconcileModeSwitch deletes the token of a claim whose class switched to credentials mode
// Requester: such a claim keeps no token, refused or not.
func (r *NamespaceClaimReconciler) reconcileModeSwitch(ctx context.Context, s *claimScope) error {
	if claimpolicy.IsRequesterMode(s.class) {
		return r.deleteCredentials(ctx, s)
	}
	return nil
}
