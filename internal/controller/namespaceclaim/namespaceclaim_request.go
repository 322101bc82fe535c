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
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nsclaim/nsclaim-operator/internal/kube"
	"github.com/nsclaim/nsclaim-operator/internal/provision"
)

// reconcileRequestOwner makes the namespace of a request claim own the request ConfigMap, as the
// ConfigMap protocol promises: deleting the namespace, by its tenant or anyone, removes the request.
// It runs before the credentials are written, so a pipeline never holds a token whose namespace could
// be deleted while its request stays behind.
func (r *NamespaceClaimReconciler) reconcileRequestOwner(ctx context.Context, s *claimScope) error {
	if !provision.IsRequestClaim(s.claim, r.RequestsNamespace) || s.namespace == nil {
		return nil
	}
	cm := &corev1.ConfigMap{}
	if ok, err := kube.Found(r.Get(ctx, client.ObjectKey{Namespace: s.claim.Namespace, Name: metav1.GetControllerOf(s.claim).Name}, cm)); !ok {
		return err
	}
	for _, ref := range cm.OwnerReferences {
		if ref.UID == s.namespace.UID {
			return nil
		}
	}
	before := cm.DeepCopy()
	cm.OwnerReferences = append(cm.OwnerReferences, namespaceOwnerRef(s.namespace))
	if err := r.Patch(ctx, cm, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}), client.FieldOwner(kube.FieldOwner)); err != nil {
		return fmt.Errorf("setting namespace %s as owner of request ConfigMap %s: %w", s.namespace.Name, klog.KObj(cm), err)
	}
	return nil
}
