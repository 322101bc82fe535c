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

package namespacepool

import (
	"context"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
	"github.com/nsclaim/nsclaim-operator/internal/kube"
)

// pooledContents is what a pooled namespace holds that a handout checks: the names of its
// RoleBindings, ServiceAccounts and Pods, and the bindings anywhere (not made by nsclaim) that name its
// tenant.
type pooledContents struct {
	roleBindings, serviceAccounts, pods []string
	tenantGrants                        []string
}

// pooledTampered returns why a pooled namespace no longer holds only what the pool made, or "" when it
// does. The pool makes no RoleBinding, no Pod and no ServiceAccount (kube-controller-manager makes
// `default`; the tenant's is made at the handout), and nothing anywhere may name its tenant: whatever
// is there was put there by someone else, and would reach the claim's tenant (a RoleBinding for a
// foreign subject, a ServiceAccount whose token was minted ahead, a grant made ahead elsewhere).
func pooledTampered(c pooledContents) string {
	switch {
	case len(c.roleBindings) > 0:
		return fmt.Sprintf("it holds RoleBinding %s, which the pool never makes", c.roleBindings[0])
	case len(c.pods) > 0:
		return fmt.Sprintf("it holds Pod %s", c.pods[0])
	case len(c.tenantGrants) > 0:
		return fmt.Sprintf("%s names its tenant ahead of any claim", c.tenantGrants[0])
	}
	for _, sa := range c.serviceAccounts {
		if sa != kube.DefaultServiceAccount {
			return fmt.Sprintf("it holds ServiceAccount %s, made before its handout", sa)
		}
	}
	return ""
}

// readPooledContents reads, at the API server (metadata only, the three lists at once), what
// pooledTampered judges.
func (h *Handout) readPooledContents(ctx context.Context, ns string) (pooledContents, error) {
	var c pooledContents
	lists := []struct {
		gvk  schema.GroupVersionKind
		into *[]string
		err  error
	}{
		{rbacv1.SchemeGroupVersion.WithKind("RoleBindingList"), &c.roleBindings, nil},
		{corev1.SchemeGroupVersion.WithKind("ServiceAccountList"), &c.serviceAccounts, nil},
		{corev1.SchemeGroupVersion.WithKind("PodList"), &c.pods, nil},
	}
	var wg sync.WaitGroup
	for i := range lists {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l := &lists[i]
			list := &metav1.PartialObjectMetadataList{}
			list.SetGroupVersionKind(l.gvk)
			if l.err = h.APIReader.List(ctx, list, client.InNamespace(ns)); l.err != nil {
				return
			}
			for _, o := range list.Items {
				*l.into = append(*l.into, o.Name)
			}
		}()
	}
	wg.Wait()
	for _, l := range lists {
		if l.err != nil {
			return c, fmt.Errorf("reading what pooled namespace %s holds: %w", ns, l.err)
		}
	}
	if h.Bindings != nil {
		grants, err := h.Bindings.TenantBindings(ctx, ns)
		if err != nil {
			return c, err
		}
		for _, g := range grants {
			c.tenantGrants = append(c.tenantGrants, g.Binding())
		}
	}
	return c, nil
}

// discard deletes a pooled namespace that holds more than the pool made (why): as it was read, or, with
// no resourceVersion, whatever its state since (the UID is always a precondition); with a Warning Event on the class: the claim takes another, or the
// cold path.
func (h *Handout) discard(ctx context.Context, class *tenancyv1alpha1.NamespaceClass, ns *corev1.Namespace, why string) error {
	pre := client.Preconditions{UID: &ns.UID}
	if ns.ResourceVersion != "" {
		pre.ResourceVersion = &ns.ResourceVersion
	}
	if err := h.Client.Delete(ctx, ns, pre); err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("discarding pooled namespace %s: %w", ns.Name, err)
	}
	logf.FromContext(ctx).Info("Discarded a pooled namespace that holds more than the pool made", "pooledNamespace", klog.KObj(ns), "why", why)
	if h.Recorder != nil {
		h.Recorder.Eventf(class, nil, corev1.EventTypeWarning, tenancyv1alpha1.PooledNamespaceDiscardedReason, "Discard",
			"Pooled namespace %s was discarded instead of handed out: %s", ns.Name, why)
	}
	return nil
}
