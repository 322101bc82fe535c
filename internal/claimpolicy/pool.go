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

package claimpolicy

import (
	"reflect"
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilrand "k8s.io/apimachinery/pkg/util/rand"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
)

// poolSuffixLength is the number of random characters of a pooled namespace's name (about 51 bits).
const poolSuffixLength = 10

// PoolNamespaceName returns a new name for a pooled namespace of a class with naming prefix prefix:
// the prefix followed by random characters. A pooled name is not derived from any claim, so no claim
// can compute it ahead, and a claim handed the namespace gets that name.
func PoolNamespaceName(prefix string) string {
	return prefix + utilrand.String(poolSuffixLength)
}

// PoolSize is the number of namespaces class keeps in its pool; 0 when it has none. A class of
// credentials mode Requester keeps none: its namespaces hold no tenant ServiceAccount and bind the
// claim's creator, so nothing of them can be made ahead but the namespace itself.
func PoolSize(class *tenancyv1alpha1.NamespaceClass) int {
	if class == nil || class.Spec.Pool.Size < 0 || IsRequesterMode(class) {
		return 0
	}
	return int(class.Spec.Pool.Size)
}

// MayUsePool reports whether a claim of class may be handed a pooled namespace: the class has a pool,
// the claim does not fix its namespace's name (a pooled name is random), and it is no request of the
// ConfigMap protocol (whose namespace is named after the request).
func MayUsePool(claim *tenancyv1alpha1.NamespaceClaim, class *tenancyv1alpha1.NamespaceClass, request bool) bool {
	return PoolSize(class) > 0 && claim.Spec.NamespaceName == "" && !request
}

// PoolLabels are the labels of a pooled namespace of class: nsclaim's managed-by label, the pool's,
// and the class's UID and generation. It carries no claim mark: no claim holds it.
func PoolLabels(class *tenancyv1alpha1.NamespaceClass) map[string]string {
	return map[string]string{
		tenancyv1alpha1.ManagedByLabel:      tenancyv1alpha1.ManagedByValue,
		tenancyv1alpha1.PoolLabel:           Label(class.Name),
		tenancyv1alpha1.PoolClassUIDLabel:   string(class.UID),
		tenancyv1alpha1.PoolGenerationLabel: strconv.FormatInt(class.Generation, 10),
	}
}

// IsPooled reports whether ns is a namespace of a pool that no claim holds: it carries nsclaim's
// managed-by label and the pool label, and no claim's ownership marks.
func IsPooled(ns metav1.Object) bool {
	l := ns.GetLabels()
	return IsManaged(ns) && l[tenancyv1alpha1.PoolLabel] != "" && l[tenancyv1alpha1.ClaimUIDLabel] == "" &&
		l[tenancyv1alpha1.ClaimNamespaceLabel] == "" && ns.GetAnnotations()[tenancyv1alpha1.ClaimNameAnnotation] == ""
}

// PoolCurrent reports whether the pooled namespace ns was made from class as it is now: its UID and
// generation. One that is not is deleted, never handed out.
func PoolCurrent(ns metav1.Object, class *tenancyv1alpha1.NamespaceClass) bool {
	l := ns.GetLabels()
	return l[tenancyv1alpha1.PoolClassUIDLabel] == string(class.UID) &&
		l[tenancyv1alpha1.PoolGenerationLabel] == strconv.FormatInt(class.Generation, 10)
}

// BuildPooled returns what a pooled namespace name of class holds: exactly what Build gives a claim's
// namespace, minus everything that names a claim. The namespace carries PoolLabels, the class's labels
// and annotations and the Pod Security labels; its children carry only nsclaim's managed-by label.
// The namespace watcher's ClusterRole and, in credentials mode Token, its ClusterRoleBinding are made
// ahead: the binding names only the ServiceAccount nsclaim-tenant of the namespace, which does not
// exist before the handout, so it grants nothing yet, and a handout then makes no write that
// kube-apiserver's RBAC escalation check slows (docs/pool.md). There is no RoleBinding, no token, no
// Secret, and no tenant ServiceAccount: the tenant's ServiceAccount is made at the handout, so that
// no token minted for it before (with a stolen operator token, say) is valid for the claim, and a
// handout discards a pooled namespace that holds any ServiceAccount but `default`. In mode Requester
// the binding names the claim's creator, unknown until a claim takes the namespace: it is made then.
func BuildPooled(name string, class *tenancyv1alpha1.NamespaceClass) Desired {
	d := Build(name, Owner{}, class, nil)
	d.RoleBindings = nil
	d.ServiceAccount = nil
	if IsRequesterMode(class) {
		d.NamespaceWatcherBinding = nil
	}
	for _, o := range []metav1.Object{d.ResourceQuota, d.LimitRange, d.NetworkPolicy, d.NamespaceWatcher, d.NamespaceWatcherBinding} {
		if isNilObject(o) {
			continue
		}
		o.SetLabels(map[string]string{tenancyv1alpha1.ManagedByLabel: tenancyv1alpha1.ManagedByValue})
	}
	labels := d.Namespace.Labels
	delete(labels, tenancyv1alpha1.ClaimUIDLabel)
	delete(labels, tenancyv1alpha1.ClaimNamespaceLabel)
	for k, v := range PoolLabels(class) {
		labels[k] = v
	}
	delete(d.Namespace.Annotations, tenancyv1alpha1.ClaimNameAnnotation)
	return d
}

// isNilObject reports whether o is a typed nil (an optional object the class does not ask for).
func isNilObject(o metav1.Object) bool {
	return reflect.ValueOf(o).IsNil()
}

// HandoutPatch is the merge patch that hands the pooled namespace to owner: it removes the pool's
// labels and sets owner's ownership marks and record (internal/ownership: the pool's record is replaced
// by the claim's), and records in PooledAnnotation that the namespace came from the pool. It carries resourceVersion, the version the namespace was read at, so a namespace changed
// since (handed to another claim, or drained) is not taken: the API server answers Conflict.
func HandoutPatch(o Owner, record, resourceVersion string) map[string]any {
	return map[string]any{"metadata": map[string]any{
		"resourceVersion": resourceVersion,
		"labels": map[string]any{
			tenancyv1alpha1.PoolLabel:           nil,
			tenancyv1alpha1.PoolClassUIDLabel:   nil,
			tenancyv1alpha1.PoolGenerationLabel: nil,
			tenancyv1alpha1.ClaimUIDLabel:       o.UID,
			tenancyv1alpha1.ClaimNamespaceLabel: o.Namespace,
		},
		"annotations": map[string]any{
			tenancyv1alpha1.ClaimNameAnnotation: o.Name,
			tenancyv1alpha1.PooledAnnotation:    "true",
			tenancyv1alpha1.OwnershipAnnotation: record,
		},
	}}
}
