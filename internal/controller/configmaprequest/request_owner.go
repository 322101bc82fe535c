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

package configmaprequest

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
	"github.com/nsclaim/nsclaim-operator/internal/claimpolicy"
	"github.com/nsclaim/nsclaim-operator/internal/kube"
)

// MayServe reports whether requester, the namespace of a request claim, is a requests namespace the
// protocol may serve (ServeNamespace): only then is the claim's namespace named exactly after its
// request, without the class's prefix.
func (p Protocol) MayServe(requester *corev1.Namespace) bool {
	ok, _ := ServeNamespace(requester)
	return ok
}

// OwnRequest makes ns, the namespace of a request claim (IsRequest), own the request ConfigMap, as
// the ConfigMap protocol promises: deleting the namespace, by its tenant or anyone, removes the
// request. The claim reconciler calls it before the credentials are written, so a pipeline never
// holds a token whose namespace could be deleted while its request stays behind. A claim that is no
// request, or has no namespace yet, changes nothing.
func (p Protocol) OwnRequest(ctx context.Context, c client.Client, claim *tenancyv1alpha1.NamespaceClaim, ns *corev1.Namespace) error {
	if !p.IsRequest(claim) || ns == nil {
		return nil
	}
	cm := &corev1.ConfigMap{}
	if ok, err := kube.Found(c.Get(ctx, client.ObjectKey{Namespace: claim.Namespace, Name: metav1.GetControllerOf(claim).Name}, cm)); !ok {
		return err
	}
	for _, ref := range cm.OwnerReferences {
		if ref.UID == ns.UID {
			return nil
		}
	}
	before := cm.DeepCopy()
	cm.OwnerReferences = append(cm.OwnerReferences, claimpolicy.NamespaceOwnerRef(ns))
	if err := c.Patch(ctx, cm, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}), client.FieldOwner(kube.FieldOwner)); err != nil {
		return fmt.Errorf("setting namespace %s as owner of request ConfigMap %s: %w", ns.Name, klog.KObj(cm), err)
	}
	return nil
}
