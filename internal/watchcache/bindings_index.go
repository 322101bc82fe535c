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

package watchcache

import (
	"context"
	"fmt"
	"sort"
	"sync"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
	"github.com/nsclaim/nsclaim-operator/internal/claimpolicy"
)

// subjectIndex indexes RoleBindings and ClusterRoleBindings by the subjects they name.
const subjectIndex = "nsclaim.subject"

// BindingIndex answers, from informer caches of every RoleBinding and ClusterRoleBinding of the
// cluster, which bindings name a given user, ServiceAccount or group. A SubjectAccessReview sample
// cannot see a RoleBinding in some third namespace made ahead of time for a future tenant; this can.
// The bindings nsclaim made (its managed-by label) are in the manager's cache, whole; every other one is
// in the index's own cache, stripped to name, labels, roleRef and subjects. Both are indexed by subject,
// but for nsclaim's bindings of a namespace's own ServiceAccounts (see bindingKeys), which no lookup
// returns.
type BindingIndex struct {
	sideCache
	// managed is the manager's cache (nil: the index's own cache alone, which then holds no binding
	// nsclaim made).
	managed cache.Cache
	// reported remembers the grants to every identity already reported (an Event on the binding).
	reported sync.Map
}

// NewBindingIndex creates the index's own cache of the bindings nsclaim did not make, and indexes the
// bindings of managed, the manager's cache, which keeps the ones it made. Add it to the manager (it is
// a Runnable; AddSideCaches does) so it starts with the others.
func NewBindingIndex(cfg *rest.Config, scheme *runtime.Scheme, managed cache.Cache) (*BindingIndex, error) {
	notManaged, err := labels.NewRequirement(tenancyv1alpha1.ManagedByLabel, selection.NotEquals, []string{tenancyv1alpha1.ManagedByValue})
	if err != nil {
		return nil, err
	}
	others := cache.ByObject{Label: labels.NewSelector().Add(*notManaged)}
	c, err := newSideCache(cfg, scheme, "the binding cache",
		map[client.Object]cache.ByObject{&rbacv1.RoleBinding{}: others, &rbacv1.ClusterRoleBinding{}: others}, stripBinding)
	if err != nil {
		return nil, err
	}
	ctx := context.Background()
	for _, idx := range []cache.Cache{c.cache, managed} {
		if idx == nil {
			continue
		}
		for _, o := range []client.Object{&rbacv1.RoleBinding{}, &rbacv1.ClusterRoleBinding{}} {
			if err := idx.IndexField(ctx, o, subjectIndex, bindingKeys); err != nil {
				return nil, fmt.Errorf("indexing bindings by subject: %w", err)
			}
		}
	}
	return &BindingIndex{sideCache: c, managed: managed}, nil
}

// stripBinding keeps only what the lookups need of a binding nsclaim did not make: its name, its
// managed-by and bootstrapping labels, roleRef and subjects.
func stripBinding(obj any) (any, error) {
	keep := func(m *metav1.ObjectMeta) metav1.ObjectMeta {
		out := metav1.ObjectMeta{Name: m.Name, Namespace: intern(m.Namespace), ResourceVersion: m.ResourceVersion, UID: m.UID}
		for _, k := range []string{tenancyv1alpha1.ManagedByLabel, bootstrappingLabel} {
			if v, ok := m.Labels[k]; ok {
				if out.Labels == nil {
					out.Labels = map[string]string{}
				}
				out.Labels[k] = v
			}
		}
		return out
	}
	switch b := obj.(type) {
	case *rbacv1.RoleBinding:
		return &rbacv1.RoleBinding{TypeMeta: b.TypeMeta, ObjectMeta: keep(&b.ObjectMeta), RoleRef: b.RoleRef, Subjects: b.Subjects}, nil
	case *rbacv1.ClusterRoleBinding:
		return &rbacv1.ClusterRoleBinding{TypeMeta: b.TypeMeta, ObjectMeta: keep(&b.ObjectMeta), RoleRef: b.RoleRef, Subjects: b.Subjects}, nil
	}
	return obj, nil
}

// bindingKeys are the subject index keys of a binding. Most bindings of a cluster with many claims are
// nsclaim's own in each claim's namespace (the tenant's and the release's), binding ServiceAccounts of
// that namespace, and the namespace watchers (ClusterRoleBinding NamespaceWatcherPrefix+ns binding
// ServiceAccounts of ns). No lookup returns them: grants skips the tenant's own namespace and its
// watcher, TenantBindings and UserGrants skip what nsclaim made, and SharedGrants wants only the
// groups every identity is in, which they do not name. So they get no key (see ownNamespaceBinding).
func bindingKeys(o client.Object) []string {
	ns := o.GetNamespace()
	if _, ok := o.(*rbacv1.ClusterRoleBinding); ok {
		var watcher bool
		if ns, watcher = claimpolicy.WatchedNamespace(o.GetName()); !watcher {
			ns = ""
		}
	}
	subjects := bindingSubjects(o)
	if ownNamespaceBinding(o.GetLabels(), ns, subjects) {
		return nil
	}
	return subjectKeys(subjects)
}

// ownNamespaceBinding reports whether a binding with these labels and subjects is one no lookup of the
// index returns: nsclaim made it (its managed-by label, not a bootstrap binding) and it names
// ServiceAccounts of namespace ns only (a RoleBinding's own namespace; for a namespace watcher, the
// namespace it watches), at least one.
func ownNamespaceBinding(labels map[string]string, ns string, subjects []rbacv1.Subject) bool {
	if ns == "" || len(subjects) == 0 || labels[tenancyv1alpha1.ManagedByLabel] != tenancyv1alpha1.ManagedByValue {
		return false
	}
	if _, boot := labels[bootstrappingLabel]; boot {
		return false
	}
	for _, s := range subjects {
		if s.Kind != rbacv1.ServiceAccountKind || s.Namespace != ns {
			return false
		}
	}
	return true
}

func bindingSubjects(o client.Object) []rbacv1.Subject {
	switch b := o.(type) {
	case *rbacv1.RoleBinding:
		return b.Subjects
	case *rbacv1.ClusterRoleBinding:
		return b.Subjects
	}
	return nil
}

// subjectKeys are the index keys of subjects: "User:<name>", "Group:<name>" and
// "ServiceAccount:<namespace>/<name>" (a ServiceAccount is also its user name).
func subjectKeys(subjects []rbacv1.Subject) []string {
	keys := make([]string, 0, len(subjects))
	for _, s := range subjects {
		switch s.Kind {
		case rbacv1.ServiceAccountKind:
			keys = append(keys, "User:system:serviceaccount:"+s.Namespace+":"+s.Name)
		case rbacv1.UserKind, rbacv1.GroupKind:
			keys = append(keys, s.Kind+":"+s.Name)
		}
	}
	return keys
}

// ForeignGrant is a binding nsclaim did not make that names the tenant.
type ForeignGrant struct {
	// Binding is "RoleBinding <ns>/<name>" or "ClusterRoleBinding <name>".
	Binding string
	// Role is "ClusterRole <name>" or "Role <name>".
	Role string
	// Subject is the subject it names: the tenant's user or its namespace's group.
	Subject string
}

func (g ForeignGrant) String() string {
	return fmt.Sprintf("%s grants %s to %s", g.Binding, g.Role, g.Subject)
}

// ForeignGrants returns the bindings, not made by nsclaim, that name the tenant of namespace ns: its
// ServiceAccount user or the group of every ServiceAccount of ns. Grants to groups shared by every
// identity (system:serviceaccounts, system:authenticated) are not one tenant's and are not returned.
func (b *BindingIndex) ForeignGrants(ctx context.Context, ns string) ([]ForeignGrant, error) {
	return b.grants(ctx, ns, tenantSubjects(ns))
}

// tenantSubjects are the index keys of the subjects that are the tenant of namespace ns alone.
func tenantSubjects(ns string) []string {
	return []string{"User:system:serviceaccount:" + ns + ":" + tenancyv1alpha1.TenantServiceAccountName, "Group:system:serviceaccounts:" + ns}
}

// Groups every issued identity is in, whatever its namespace: a grant to them is every identity's.
const (
	allServiceAccountsGroup = "system:serviceaccounts"
	allAuthenticatedGroup   = "system:authenticated"
)

// bootstrappingLabel marks the API server's own default bindings (system:basic-user, system:discovery,
// ...): what any identity of any cluster has.
const (
	bootstrappingLabel = "kubernetes.io/bootstrapping"
	bootstrappingValue = "rbac-defaults"
)

// SharedGrant is a binding that names a group every issued identity is in.
type SharedGrant struct {
	// Namespace is the RoleBinding's namespace; empty for a ClusterRoleBinding.
	Namespace, Name string
	UID             types.UID
	RoleRef         rbacv1.RoleRef
	Subject         string
	// Default is set on the API server's own bootstrap bindings.
	Default bool
}

// Binding names the binding like ForeignGrant.Binding.
func (g SharedGrant) Binding() string {
	if g.Namespace == "" {
		return "ClusterRoleBinding " + g.Name
	}
	return "RoleBinding " + g.Namespace + "/" + g.Name
}

// Object is a reference to the binding, for an Event about it.
func (g SharedGrant) Object() client.Object {
	meta := metav1.ObjectMeta{Name: g.Name, Namespace: g.Namespace, UID: g.UID}
	if g.Namespace == "" {
		return &rbacv1.ClusterRoleBinding{TypeMeta: metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "ClusterRoleBinding"}, ObjectMeta: meta}
	}
	return &rbacv1.RoleBinding{TypeMeta: metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "RoleBinding"}, ObjectMeta: meta}
}

// SharedGrants returns every binding, in any namespace, that names system:serviceaccounts or
// system:authenticated, sorted by binding.
func (b *BindingIndex) SharedGrants(ctx context.Context) ([]SharedGrant, error) {
	var out []SharedGrant
	for _, subject := range []string{"Group:" + allServiceAccountsGroup, "Group:" + allAuthenticatedGroup} {
		rbs, crbs, err := b.bindingsOf(ctx, subject, true)
		if err != nil {
			return nil, err
		}
		for i := range rbs {
			rb := &rbs[i]
			out = append(out, SharedGrant{Namespace: rb.Namespace, Name: rb.Name, UID: rb.UID, RoleRef: rb.RoleRef, Subject: subject,
				Default: rb.Labels[bootstrappingLabel] == bootstrappingValue})
		}
		for i := range crbs {
			crb := &crbs[i]
			out = append(out, SharedGrant{Name: crb.Name, UID: crb.UID, RoleRef: crb.RoleRef, Subject: subject,
				Default: crb.Labels[bootstrappingLabel] == bootstrappingValue})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Binding() < out[j].Binding() })
	return out, nil
}

// TenantBindings returns the bindings, not made by nsclaim, that name the tenant of namespace ns,
// its own namespace included, with the roles they grant: where an excess rule may come from.
func (b *BindingIndex) TenantBindings(ctx context.Context, ns string) ([]SharedGrant, error) {
	var out []SharedGrant
	for _, subject := range tenantSubjects(ns) {
		rbs, crbs, err := b.bindingsOf(ctx, subject, false)
		if err != nil {
			return nil, err
		}
		for i := range rbs {
			if rb := &rbs[i]; !claimpolicy.IsManaged(rb) {
				out = append(out, SharedGrant{Namespace: rb.Namespace, Name: rb.Name, UID: rb.UID, RoleRef: rb.RoleRef, Subject: subject})
			}
		}
		for i := range crbs {
			if crb := &crbs[i]; !claimpolicy.IsManaged(crb) {
				out = append(out, SharedGrant{Name: crb.Name, UID: crb.UID, RoleRef: crb.RoleRef, Subject: subject})
			}
		}
	}
	return out, nil
}

// bindingsOf returns the RoleBindings and ClusterRoleBindings that name subject (an index key: see
// subjectKeys): those nsclaim did not make, and with managed set those it made too (the manager's
// cache). Lookups that skip nsclaim's bindings leave managed unset and do not read that cache at all.
func (b *BindingIndex) bindingsOf(ctx context.Context, subject string, managed bool) ([]rbacv1.RoleBinding, []rbacv1.ClusterRoleBinding, error) {
	var rbs []rbacv1.RoleBinding
	var crbs []rbacv1.ClusterRoleBinding
	caches := []cache.Cache{b.cache}
	if managed {
		caches = append(caches, b.managed)
	}
	for _, c := range caches {
		if c == nil {
			continue
		}
		rbl := &rbacv1.RoleBindingList{}
		if err := c.List(ctx, rbl, client.MatchingFields{subjectIndex: subject}); err != nil {
			return nil, nil, fmt.Errorf("looking up RoleBindings of %s: %w", subject, err)
		}
		crbl := &rbacv1.ClusterRoleBindingList{}
		if err := c.List(ctx, crbl, client.MatchingFields{subjectIndex: subject}); err != nil {
			return nil, nil, fmt.Errorf("looking up ClusterRoleBindings of %s: %w", subject, err)
		}
		rbs, crbs = append(rbs, rbl.Items...), append(crbs, crbl.Items...)
	}
	return rbs, crbs, nil
}

// ReportOnce reports whether the binding with this UID and role was not reported yet, and marks it.
func (b *BindingIndex) ReportOnce(g SharedGrant) bool {
	_, seen := b.reported.LoadOrStore(string(g.UID)+"/"+g.RoleRef.Kind+"/"+g.RoleRef.Name, true)
	return !seen
}

func (b *BindingIndex) grants(ctx context.Context, ns string, subjects []string) ([]ForeignGrant, error) {
	var out []ForeignGrant
	for _, subject := range subjects {
		rbs, crbs, err := b.bindingsOf(ctx, subject, true)
		if err != nil {
			return nil, err
		}
		for i := range rbs {
			rb := &rbs[i]
			if rb.Namespace == ns {
				// Inside its own namespace the tenant's rights are the class's and its own business.
				continue
			}
			out = append(out, ForeignGrant{Binding: "RoleBinding " + rb.Namespace + "/" + rb.Name, Role: rb.RoleRef.Kind + " " + rb.RoleRef.Name, Subject: subject})
		}
		for i := range crbs {
			crb := &crbs[i]
			if claimpolicy.IsManaged(crb) && crb.Name == claimpolicy.NamespaceWatcherName(ns) {
				// The tenant's own namespace watcher (the fence admits no other shape under that name).
				continue
			}
			out = append(out, ForeignGrant{Binding: "ClusterRoleBinding " + crb.Name, Role: crb.RoleRef.Kind + " " + crb.RoleRef.Name, Subject: subject})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out, nil
}

// UserGrants returns the bindings, not made by nsclaim, that name user outside namespace ns and
// outside home (where a claim's creator holds the right to make claims): for a claim of credentials
// mode Requester, the creator's rights that the class did not grant. Bindings nsclaim made (for the
// same creator's other claims) are not returned.
func (b *BindingIndex) UserGrants(ctx context.Context, user, ns, home string) ([]ForeignGrant, error) {
	subject := "User:" + user
	var out []ForeignGrant
	rbs, crbs, err := b.bindingsOf(ctx, subject, false)
	if err != nil {
		return nil, err
	}
	for i := range rbs {
		rb := &rbs[i]
		if rb.Namespace == ns || rb.Namespace == home || claimpolicy.IsManaged(rb) {
			continue
		}
		out = append(out, ForeignGrant{Binding: "RoleBinding " + rb.Namespace + "/" + rb.Name, Role: rb.RoleRef.Kind + " " + rb.RoleRef.Name, Subject: subject})
	}
	for i := range crbs {
		if crb := &crbs[i]; !claimpolicy.IsManaged(crb) {
			out = append(out, ForeignGrant{Binding: "ClusterRoleBinding " + crb.Name, Role: crb.RoleRef.Kind + " " + crb.RoleRef.Name, Subject: subject})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out, nil
}
