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

package controller

import (
	"context"
	"fmt"
	"maps"
	"reflect"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
)

// ensure makes the object want exist as built: it creates it when missing, and patches it when its
// labels, annotations or content drifted. It reads through the cache first; an object the cache does
// not hold (for example one whose nsclaim labels were removed) is read from the API server. It reports
// whether it wrote anything.
func (r *NamespaceClaimReconciler) ensure(ctx context.Context, want client.Object) (bool, error) {
	key := client.ObjectKeyFromObject(want)
	have := reflect.New(reflect.TypeOf(want).Elem()).Interface().(client.Object)
	ok, err := found(r.Get(ctx, key, have))
	if err != nil {
		return false, fmt.Errorf("reading %T %s: %w", want, key, err)
	}
	if !ok {
		err := r.Create(ctx, want.DeepCopyObject().(client.Object), client.FieldOwner(FieldOwner))
		if err == nil {
			return true, nil
		}
		if !apierrors.IsAlreadyExists(err) {
			return false, fmt.Errorf("creating %T %s: %w", want, key, err)
		}
		if err := r.APIReader.Get(ctx, key, have); err != nil {
			return false, fmt.Errorf("reading %T %s: %w", want, key, err)
		}
	}
	if labelsAndAnnotationsMatch(want, have) && contentMatches(want, have) {
		return false, nil
	}
	if immutableDiffers(want, have) {
		uid, rv := have.GetUID(), have.GetResourceVersion()
		if err := r.Delete(ctx, have, client.Preconditions{UID: &uid, ResourceVersion: &rv}); client.IgnoreNotFound(err) != nil {
			return false, fmt.Errorf("replacing %T %s: %w", want, key, err)
		}
		if err := r.Create(ctx, want.DeepCopyObject().(client.Object), client.FieldOwner(FieldOwner)); err != nil {
			return false, fmt.Errorf("creating %T %s: %w", want, key, err)
		}
		return true, nil
	}
	patched := have.DeepCopyObject().(client.Object)
	mergeMeta(patched, want)
	copyContent(patched, want)
	if err := r.Patch(ctx, patched, client.MergeFromWithOptions(have, client.MergeFromWithOptimisticLock{}), client.FieldOwner(FieldOwner)); err != nil {
		return false, fmt.Errorf("patching %T %s: %w", want, klog.KObj(want), err)
	}
	return true, nil
}

// labelsAndAnnotationsMatch reports whether have carries every label and annotation of want.
func labelsAndAnnotationsMatch(want, have metav1.Object) bool {
	return isSubset(want.GetLabels(), have.GetLabels()) && isSubset(want.GetAnnotations(), have.GetAnnotations())
}

func isSubset(sub, super map[string]string) bool {
	for k, v := range sub {
		if got, ok := super[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// mergeMeta adds want's labels and annotations to obj, keeping the ones others set.
func mergeMeta(obj, want metav1.Object) {
	l := maps.Clone(obj.GetLabels())
	if l == nil {
		l = map[string]string{}
	}
	maps.Copy(l, want.GetLabels())
	obj.SetLabels(l)
	a := maps.Clone(obj.GetAnnotations())
	if a == nil {
		a = map[string]string{}
	}
	maps.Copy(a, want.GetAnnotations())
	obj.SetAnnotations(a)
}

// contentMatches reports whether have's content (everything but metadata) is what want sets. Fields
// want leaves empty are ignored, so values the API server defaults do not count as drift.
func contentMatches(want, have client.Object) bool {
	switch w := want.(type) {
	case *corev1.ServiceAccount:
		return equality.Semantic.DeepDerivative(w.AutomountServiceAccountToken, have.(*corev1.ServiceAccount).AutomountServiceAccountToken)
	case *rbacv1.Role:
		return equality.Semantic.DeepEqual(w.Rules, have.(*rbacv1.Role).Rules)
	case *rbacv1.ClusterRole:
		return equality.Semantic.DeepEqual(w.Rules, have.(*rbacv1.ClusterRole).Rules)
	case *rbacv1.ClusterRoleBinding:
		h := have.(*rbacv1.ClusterRoleBinding)
		return w.RoleRef == h.RoleRef && equality.Semantic.DeepEqual(w.Subjects, h.Subjects)
	case *rbacv1.RoleBinding:
		h := have.(*rbacv1.RoleBinding)
		return w.RoleRef == h.RoleRef && equality.Semantic.DeepEqual(w.Subjects, h.Subjects)
	case *corev1.ResourceQuota:
		return equality.Semantic.DeepDerivative(w.Spec, have.(*corev1.ResourceQuota).Spec)
	case *corev1.LimitRange:
		return equality.Semantic.DeepDerivative(w.Spec, have.(*corev1.LimitRange).Spec)
	case *networkingv1.NetworkPolicy:
		return equality.Semantic.DeepDerivative(w.Spec, have.(*networkingv1.NetworkPolicy).Spec)
	}
	panic(fmt.Sprintf("contentMatches: unexpected type %T", want))
}

// immutableDiffers reports whether have differs from want in a field the API server will not change in
// place (a RoleBinding's roleRef), so the object must be replaced.
func immutableDiffers(want, have client.Object) bool {
	switch w := want.(type) {
	case *rbacv1.RoleBinding:
		return w.RoleRef != have.(*rbacv1.RoleBinding).RoleRef
	case *rbacv1.ClusterRoleBinding:
		return w.RoleRef != have.(*rbacv1.ClusterRoleBinding).RoleRef
	}
	return false
}

// copyContent sets dst's content (everything but metadata) to src's.
func copyContent(dst, src client.Object) {
	switch s := src.(type) {
	case *corev1.ServiceAccount:
		dst.(*corev1.ServiceAccount).AutomountServiceAccountToken = s.AutomountServiceAccountToken
	case *rbacv1.Role:
		dst.(*rbacv1.Role).Rules = s.Rules
	case *rbacv1.ClusterRole:
		dst.(*rbacv1.ClusterRole).Rules = s.Rules
	case *rbacv1.ClusterRoleBinding:
		dst.(*rbacv1.ClusterRoleBinding).Subjects = s.Subjects
	case *rbacv1.RoleBinding:
		dst.(*rbacv1.RoleBinding).Subjects = s.Subjects
	case *corev1.ResourceQuota:
		dst.(*corev1.ResourceQuota).Spec = *s.Spec.DeepCopy()
	case *corev1.LimitRange:
		dst.(*corev1.LimitRange).Spec = *s.Spec.DeepCopy()
	case *networkingv1.NetworkPolicy:
		dst.(*networkingv1.NetworkPolicy).Spec = *s.Spec.DeepCopy()
	}
}

// isNil reports whether an optional desired object is absent (a typed nil inside the interface).
func isNil(o client.Object) bool {
	return o == nil || reflect.ValueOf(o).IsNil()
}

// ManagedTypes are the namespaced kinds nsclaim creates inside the namespaces it provisions; the
// manager caches only those objects of them that carry nsclaim's managed-by label, never every
// RoleBinding of the cluster. Secrets are not among them: the operator never reads a Secret.
func ManagedTypes() []client.Object {
	return []client.Object{
		&corev1.ServiceAccount{}, &corev1.ResourceQuota{}, &corev1.LimitRange{},
		&rbacv1.Role{}, &rbacv1.RoleBinding{}, &networkingv1.NetworkPolicy{},
	}
}

// CacheOptions limits the manager's informer caches of ManagedTypes to the objects that carry
// nsclaim's managed-by label, and its ConfigMap cache to the requests namespace of the ConfigMap
// protocol (requestsNamespace; empty when the protocol is off, and then no ConfigMap is read).
func CacheOptions(requestsNamespace string) cache.Options {
	managed := labels.SelectorFromSet(labels.Set{tenancyv1alpha1.ManagedByLabel: tenancyv1alpha1.ManagedByValue})
	byObject := map[client.Object]cache.ByObject{}
	for _, o := range ManagedTypes() {
		byObject[o] = cache.ByObject{Label: managed}
	}
	// The tenants' namespace watchers; ClusterRoles are cached whole (the self-test reads the classes'
	// roles).
	byObject[&rbacv1.ClusterRoleBinding{}] = cache.ByObject{Label: managed}
	if requestsNamespace != "" {
		byObject[&corev1.ConfigMap{}] = cache.ByObject{Namespaces: map[string]cache.Config{requestsNamespace: {}}}
	}
	// Nothing reads managedFields: dropping them from cached objects roughly halves the cache.
	return cache.Options{ByObject: byObject, DefaultTransform: cache.TransformStripManagedFields()}
}

// isManaged reports whether obj carries nsclaim's managed-by label.
func isManaged(obj client.Object) bool {
	return obj.GetLabels()[tenancyv1alpha1.ManagedByLabel] == tenancyv1alpha1.ManagedByValue
}
