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

package access

import (
	"context"

	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
	"github.com/nsclaim/nsclaim-operator/internal/credentials"
	"github.com/nsclaim/nsclaim-operator/internal/credentials/tokensecret"
)

// DeleteCredentials deletes the claim's credentials Secret once its namespace is going (expired or
// released): a dead token must not wait, next to the claim, until the namespace is gone, where a
// pipeline re-run that asks for the same name would read it. The Secret is found with the probe that
// fails on any Secret not made for this claim, and deleted on the UID and resourceVersion the probe
// returned, so no other Secret is ever deleted. It reports whether the claim's status named a token (the
// caller then forgets it); a claim whose status names none changes nothing.
func DeleteCredentials(ctx context.Context, c client.Client, claim *tenancyv1alpha1.NamespaceClaim) (bool, error) {
	if claim.Status.CredentialsSecretName == "" && claim.Status.TokenExpiresAt == nil {
		return false, nil
	}
	sec, err := tokensecret.Delete(ctx, c, SecretRef(claim, credentials.ClaimSecretName(claim)))
	if err != nil {
		return true, err
	}
	if sec != nil {
		logf.FromContext(ctx).Info("Deleted the credentials of a namespace that is going", "secret", klog.KObj(sec))
	}
	return true, nil
}
