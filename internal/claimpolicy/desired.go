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
	"strings"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
)

// Names of the objects nsclaim keeps in each namespace it provisions.
const (
	// TenantRoleBindingName binds the class's ClusterRole to the tenant ServiceAccount.
	TenantRoleBindingName = "nsclaim-tenant"
	// ReleaseRoleName is the RoleBinding that lets the tenant read and delete its own namespace, and
	// nothing else (it binds ReleaseClusterRoleName). Releases before 0.4.0 bound a Role of this name in
	// the namespace instead; the operator replaces both (see reconcileChildren).
	ReleaseRoleName = "nsclaim-release"
	// ReleaseClusterRoleName is the shared ClusterRole config/rbac ships (release_role.yaml, named
	// "release" there before the kustomize prefix): get and delete of namespaces. Bound by a RoleBinding
	// in namespace N it grants them on N alone, since a request for the Namespace object N carries the
	// namespace attribute N. The operator may bind it (and only it, of its own roles): a binding to a
	// role the writer may bind skips kube-apiserver's escalation check, which reads every binding of the
	// cluster with a consistent read (docs/benchmarks-history.md, issue 30 item 3).
	ReleaseClusterRoleName = "nsclaim-operator-release"
	// ResourceQuotaName is the class's quota.
	ResourceQuotaName = "nsclaim-quota"
	// LimitRangeName is the class's limit range.
	LimitRangeName = "nsclaim-limits"
	// NetworkPolicyName is the class's network policy preset.
	NetworkPolicyName = "nsclaim-deny-other-namespaces"
	// ExtraRoleBindingPrefix prefixes the names of a class's extra RoleBindings.
	ExtraRoleBindingPrefix = "nsclaim-"
)

// clusterRoleKind is the roleRef kind of a binding to a ClusterRole.
const clusterRoleKind = "ClusterRole"

// Pod Security Admission label keys.
const (
	psaEnforce = "pod-security.kubernetes.io/enforce"
	psaWarn    = "pod-security.kubernetes.io/warn"
	psaAudit   = "pod-security.kubernetes.io/audit"
)

// Owner identifies the request a namespace is made for: a NamespaceClaim (or, through the ConfigMap
// protocol, a request that stands for one).
type Owner struct {
	Namespace string
	Name      string
	UID       string
}

// OwnerOf returns the Owner for a claim.
func OwnerOf(claim *tenancyv1alpha1.NamespaceClaim) Owner {
	return Owner{Namespace: claim.Namespace, Name: claim.Name, UID: string(claim.UID)}
}

// AppliedAnnotation holds a digest of the apply configuration nsclaim last applied to a child. The
// cache holds no managedFields, so this is how a reconcile tells that the class dropped a field nsclaim
// used to set (a quota key): the digest differs, and the apply that follows removes that field. It is
// taken with the claim's identity left out (see identity), so the same child of every claim of a class
// carries the same digest, and the operator's cache keeps one annotation map for all of them.
const AppliedAnnotation = "tenancy.nsclaim.dev/applied"

// NamespaceOwnerRef makes ns an owner (not a controller, not blocking its deletion) of a dependent.
func NamespaceOwnerRef(ns *corev1.Namespace) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: "v1", Kind: "Namespace", Name: ns.Name, UID: ns.UID}
}

// IsManaged reports whether obj carries nsclaim's managed-by label.
func IsManaged(obj metav1.Object) bool {
	return obj.GetLabels()[tenancyv1alpha1.ManagedByLabel] == tenancyv1alpha1.ManagedByValue
}

// OwnershipLabels are the labels that mark an object as made by nsclaim for owner.
func OwnershipLabels(o Owner) map[string]string {
	return map[string]string{
		tenancyv1alpha1.ManagedByLabel:      tenancyv1alpha1.ManagedByValue,
		tenancyv1alpha1.ClaimUIDLabel:       o.UID,
		tenancyv1alpha1.ClaimNamespaceLabel: o.Namespace,
	}
}

// OwnershipAnnotations are the annotations that name owner on the namespace made for it. Its children
// do not carry them: the claim a child belongs to is its namespace's (see MarkedFor), and an
// annotation map without the claim's name is one that every claim of a class shares in the operator's
// cache.
func OwnershipAnnotations(o Owner) map[string]string {
	return map[string]string{tenancyv1alpha1.ClaimNameAnnotation: o.Name}
}

// CarriesMarksOf reports whether the namespace obj carries every ownership mark of owner. The marks are
// an index, which anyone who may patch a namespace can copy: only together with nsclaim's ownership
// record (internal/ownership) may such a namespace be changed or deleted on owner's behalf.
func CarriesMarksOf(obj metav1.Object, o Owner) bool {
	return MarkedFor(obj, o) && obj.GetAnnotations()[tenancyv1alpha1.ClaimNameAnnotation] == o.Name
}

// MarkedFor reports whether obj carries the ownership labels of owner: nsclaim's managed-by label, the
// claim's UID and its namespace. Only such a child, in a namespace OwnedBy owner, may be changed or
// deleted on owner's behalf. (A claim's UID is unique in the cluster: the claim's name adds nothing.)
func MarkedFor(obj metav1.Object, o Owner) bool {
	l := obj.GetLabels()
	return l[tenancyv1alpha1.ManagedByLabel] == tenancyv1alpha1.ManagedByValue &&
		l[tenancyv1alpha1.ClaimUIDLabel] == o.UID &&
		l[tenancyv1alpha1.ClaimNamespaceLabel] == o.Namespace
}

// OwnerFromMarks returns the claim named by the ownership marks of obj, a namespace (or a child made
// before children lost the claim-name annotation), and false if obj has none.
func OwnerFromMarks(obj metav1.Object) (Owner, bool) {
	l := obj.GetLabels()
	if l[tenancyv1alpha1.ManagedByLabel] != tenancyv1alpha1.ManagedByValue {
		return Owner{}, false
	}
	o := Owner{Namespace: l[tenancyv1alpha1.ClaimNamespaceLabel], UID: l[tenancyv1alpha1.ClaimUIDLabel], Name: obj.GetAnnotations()[tenancyv1alpha1.ClaimNameAnnotation]}
	return o, o.Namespace != "" && o.Name != "" && o.UID != ""
}

// Desired is everything nsclaim keeps in and on one namespace.
type Desired struct {
	Namespace      *corev1.Namespace
	ServiceAccount *corev1.ServiceAccount
	RoleBindings   []*rbacv1.RoleBinding
	ResourceQuota  *corev1.ResourceQuota
	LimitRange     *corev1.LimitRange
	NetworkPolicy  *networkingv1.NetworkPolicy
	// NamespaceWatcher and NamespaceWatcherBinding let the tenant get, list and watch its own
	// Namespace object by name, cluster-scoped (a list or watch of namespaces is not namespaced, so a
	// Role inside the namespace cannot grant it): `kubectl delete namespace <own>` then waits for the
	// deletion with kubectl's default flags. The Namespace owns both, so they go with it.
	NamespaceWatcher        *rbacv1.ClusterRole
	NamespaceWatcherBinding *rbacv1.ClusterRoleBinding
	TenantUser              string
	TenantGroups            []string
	TenantClusterRole       string
}

// Build returns the desired state of namespace name for owner, from class and the claim's extra labels.
// Optional objects (quota, limit range, network policy) are nil when the class does not ask for them.
func Build(name string, o Owner, class *tenancyv1alpha1.NamespaceClass, claimLabels map[string]string) Desired {
	d := Desired{
		Namespace:         desiredNamespace(name, o, class, claimLabels),
		ServiceAccount:    desiredServiceAccount(name, o),
		TenantUser:        "system:serviceaccount:" + name + ":" + tenancyv1alpha1.TenantServiceAccountName,
		TenantGroups:      []string{"system:serviceaccounts", "system:serviceaccounts:" + name, "system:authenticated"},
		TenantClusterRole: clusterRoleOf(class),
	}
	d.RoleBindings = desiredRoleBindings(name, o, class)
	d.ResourceQuota = desiredResourceQuota(name, o, class)
	d.LimitRange = desiredLimitRange(name, o, class)
	d.NetworkPolicy = desiredNetworkPolicy(name, o, class)
	d.NamespaceWatcher, d.NamespaceWatcherBinding = desiredNamespaceWatcher(name, o)
	return d
}

// NamespaceWatcherName is the name of the ClusterRole and ClusterRoleBinding of namespace ns.
func NamespaceWatcherName(ns string) string { return tenancyv1alpha1.NamespaceWatcherPrefix + ns }

// WatchedNamespace is the inverse of NamespaceWatcherName: the namespace a watcher's name gives, and
// whether name is a watcher's name at all.
func WatchedNamespace(name string) (string, bool) {
	return strings.CutPrefix(name, tenancyv1alpha1.NamespaceWatcherPrefix)
}

func desiredNamespaceWatcher(ns string, o Owner) (*rbacv1.ClusterRole, *rbacv1.ClusterRoleBinding) {
	name := NamespaceWatcherName(ns)
	role := &rbacv1.ClusterRole{
		ObjectMeta: meta(name, "", o),
		Rules: []rbacv1.PolicyRule{{
			APIGroups: []string{""}, Resources: []string{"namespaces"}, ResourceNames: []string{ns},
			Verbs: []string{"get", "list", "watch"},
		}},
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: meta(name, "", o),
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: clusterRoleKind, Name: name},
		Subjects:   []rbacv1.Subject{tenantSubject(ns)},
	}
	return role, binding
}

func clusterRoleOf(class *tenancyv1alpha1.NamespaceClass) string {
	if class.Spec.ClusterRole == "" {
		return DefaultClusterRole
	}
	return class.Spec.ClusterRole
}

// meta is the metadata of a child: its name, namespace and ownership labels.
func meta(name, namespace string, o Owner) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: OwnershipLabels(o)}
}

// desiredNamespace carries, from lowest to highest precedence, the claim's allowed labels, the class's
// labels and annotations, the Pod Security labels and the ownership marks.
func desiredNamespace(name string, o Owner, class *tenancyv1alpha1.NamespaceClass, claimLabels map[string]string) *corev1.Namespace {
	labels := map[string]string{}
	for k, v := range claimLabels {
		labels[k] = v
	}
	for k, v := range class.Spec.NamespaceLabels {
		labels[k] = v
	}
	level := string(PodSecurityOf(class))
	labels[psaEnforce], labels[psaWarn], labels[psaAudit] = level, level, level
	for k, v := range OwnershipLabels(o) {
		labels[k] = v
	}
	labels[tenancyv1alpha1.ClassLabel] = Label(class.Name)
	annotations := map[string]string{}
	for k, v := range class.Spec.NamespaceAnnotations {
		annotations[k] = v
	}
	for k, v := range OwnershipAnnotations(o) {
		annotations[k] = v
	}
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels, Annotations: annotations}}
}

func desiredServiceAccount(ns string, o Owner) *corev1.ServiceAccount {
	no := false
	return &corev1.ServiceAccount{ObjectMeta: meta(tenancyv1alpha1.TenantServiceAccountName, ns, o), AutomountServiceAccountToken: &no}
}

func tenantSubject(ns string) rbacv1.Subject {
	return rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: tenancyv1alpha1.TenantServiceAccountName, Namespace: ns}
}

// desiredRoleBindings binds the class's ClusterRole and the release ClusterRole to the tenant, then the
// class's extra bindings, in a stable order.
func desiredRoleBindings(ns string, o Owner, class *tenancyv1alpha1.NamespaceClass) []*rbacv1.RoleBinding {
	tenant := &rbacv1.RoleBinding{
		ObjectMeta: meta(TenantRoleBindingName, ns, o),
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: clusterRoleKind, Name: clusterRoleOf(class)},
		Subjects:   []rbacv1.Subject{tenantSubject(ns)},
	}
	release := &rbacv1.RoleBinding{
		ObjectMeta: meta(ReleaseRoleName, ns, o),
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: clusterRoleKind, Name: ReleaseClusterRoleName},
		Subjects:   []rbacv1.Subject{tenantSubject(ns)},
	}
	out := make([]*rbacv1.RoleBinding, 0, 2+len(class.Spec.ExtraRoleBindings))
	out = append(out, tenant, release)
	for _, x := range class.Spec.ExtraRoleBindings {
		out = append(out, &rbacv1.RoleBinding{
			ObjectMeta: meta(ExtraRoleBindingPrefix+x.Name, ns, o),
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: clusterRoleKind, Name: x.ClusterRole},
			Subjects:   append([]rbacv1.Subject(nil), x.Subjects...),
		})
	}
	return out
}

func desiredResourceQuota(ns string, o Owner, class *tenancyv1alpha1.NamespaceClass) *corev1.ResourceQuota {
	if class.Spec.ResourceQuota == nil {
		return nil
	}
	return &corev1.ResourceQuota{ObjectMeta: meta(ResourceQuotaName, ns, o), Spec: *class.Spec.ResourceQuota.DeepCopy()}
}

func desiredLimitRange(ns string, o Owner, class *tenancyv1alpha1.NamespaceClass) *corev1.LimitRange {
	if class.Spec.LimitRange == nil {
		return nil
	}
	return &corev1.LimitRange{ObjectMeta: meta(LimitRangeName, ns, o), Spec: *class.Spec.LimitRange.DeepCopy()}
}

// desiredNetworkPolicy, for the DenyFromOtherNamespaces preset, admits ingress to every Pod only from
// Pods of the same namespace.
func desiredNetworkPolicy(ns string, o Owner, class *tenancyv1alpha1.NamespaceClass) *networkingv1.NetworkPolicy {
	if class.Spec.NetworkPolicy != tenancyv1alpha1.NetworkPolicyDenyFromOtherNamespaces {
		return nil
	}
	return &networkingv1.NetworkPolicy{
		ObjectMeta: meta(NetworkPolicyName, ns, o),
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
			Ingress: []networkingv1.NetworkPolicyIngressRule{{
				From: []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{}}},
			}},
		},
	}
}
