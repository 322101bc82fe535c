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

package main

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
	"github.com/nsclaim/nsclaim-operator/internal/testenv"
)

// Ceiling (b) is the protocol of the shell operator nsplease (nsplease.sh and namespace-template.yaml
// of github.com/jpetazzo/nsplease): for each request ConfigMap N, ten writes and nothing else.
//
//  1. create namespaces               N
//  2. create serviceaccounts          the tenant's ServiceAccount
//  3. create rolebindings             the ClusterRole admin to it
//  4. create roles                    delete namespace N
//  5. create rolebindings             that Role to it
//  6. patch  serviceaccounts          the token policy annotation
//  7. create serviceaccounts/token    TokenRequest
//  8. create secrets                  Secret N (the token) next to the request
//  9. patch  configmaps               owner reference: Namespace N owns the request
//  10. patch secrets                  owner reference: Namespace N owns Secret N
//
// It runs as the operator's ServiceAccount, so what nsclaim's RBAC and admission fence require
// differs from the shell script in names and labels only: the ServiceAccount is nsclaim-tenant (the
// only one the operator may mint tokens for), the namespace carries Pod Security baseline and
// tenancy.nsclaim.dev/managed-by=nsclaim, the Secret the managed-by label, and the requests live in a
// namespace labelled tenancy.nsclaim.dev/requests-namespace=true. The script's reads (kubectl apply's
// gets, the ServiceAccount's annotation, the namespace's UID) are not made: the UID comes from the
// create's response.

// nspleaseRequestsNamespace holds the ceiling's request ConfigMaps and Secrets.
const nspleaseRequestsNamespace = "nsp-requests"

// nspleaseAdmin is the name of nsplease's Role, and the ClusterRole it binds.
const nspleaseAdmin = "admin"

// tokenPolicyDefault is nsplease's default token policy.
const tokenPolicyDefault = "multiple-times"

// nspleaseRequest is one request ConfigMap and when its create returned.
type nspleaseRequest struct {
	name    string
	created time.Time
}

// ensureRequestsNamespace creates the requests namespace, labelled for the protocol, as admin.
func ensureRequestsNamespace(ctx context.Context, k *clients) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: nspleaseRequestsNamespace, Labels: map[string]string{
		tenancyv1alpha1.RequestsNamespaceLabel: "true", "nsclaim-bench": "requester",
	}}}
	if err := k.c.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating namespace %s: %w", ns.Name, err)
	}
	return nil
}

// nspleaseRolesGrant is what nsplease's own RBAC has and nsclaim's no longer does (its release grant is a
// shared ClusterRole): creating Roles. Ceiling (b) grants it to the operator's ServiceAccount, for its
// duration only, so that write 4 keeps its cost (kube-apiserver's escalation check) instead of being
// made by another identity.
const nspleaseRolesGrant = "nsclaim-bench-nsplease-roles"

// grantNspleaseRoles lets the operator's ServiceAccount create Roles, and returns the function that
// takes it back.
func grantNspleaseRoles(ctx context.Context, k *clients) (func(), error) {
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: nspleaseRolesGrant},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{rbacv1.GroupName}, Resources: []string{"roles"}, Verbs: []string{"create"}}}}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: nspleaseRolesGrant},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: nspleaseRolesGrant},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: operatorNamespace, Name: operatorSA}}}
	for _, o := range []client.Object{role, binding} {
		if err := k.c.Create(ctx, o); err != nil && !apierrors.IsAlreadyExists(err) {
			return nil, fmt.Errorf("creating %T %s: %w", o, o.GetName(), err)
		}
	}
	revoke := func() {
		_ = k.c.Delete(context.Background(), binding)
		_ = k.c.Delete(context.Background(), role)
	}
	// The authorizer learns of a binding from its informers: wait until it allows the create.
	if err := testenv.WaitAllowed(ctx, k.c, operatorUser, authorizationv1.ResourceAttributes{
		Group: rbacv1.GroupName, Resource: "roles", Verb: "create", Namespace: nspleaseRequestsNamespace}, 30*time.Second); err != nil {
		revoke()
		return nil, fmt.Errorf("waiting for %s to be in force: %w", nspleaseRolesGrant, err)
	}
	return revoke, nil
}

// nsplease makes the ten writes for request name.
func (rc *rawClient) nsplease(ctx context.Context, name string) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
		"nsplease.container.training/thank-you": "",
		tenancyv1alpha1.ManagedByLabel:          tenancyv1alpha1.ManagedByValue,
		"pod-security.kubernetes.io/enforce":    "baseline",
	}}}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: name, Name: tenancyv1alpha1.TenantServiceAccountName}}
	subject := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: name, Name: sa.Name}}
	objs := []client.Object{
		ns,
		sa,
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: name, Name: "admin-clusterrole"},
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: nspleaseAdmin}, Subjects: subject},
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: name, Name: nspleaseAdmin}, Rules: []rbacv1.PolicyRule{{
			APIGroups: []string{""}, Resources: []string{"namespaces"}, ResourceNames: []string{name}, Verbs: []string{"delete"}}}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: name, Name: "admin-role"},
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: nspleaseAdmin}, Subjects: subject},
	}
	for _, o := range objs {
		if err := rc.c.Create(ctx, o); err != nil {
			return fmt.Errorf("creating %T %s: %w", o, client.ObjectKeyFromObject(o), err)
		}
	}
	annotate := fmt.Appendf(nil, `{"metadata":{"annotations":{%q:%q}}}`, tenancyv1alpha1.TokenPolicyAnnotation, tokenPolicyDefault)
	if err := rc.c.Patch(ctx, sa, client.RawPatch(types.MergePatchType, annotate)); err != nil {
		return fmt.Errorf("annotating ServiceAccount in %s: %w", name, err)
	}
	tr := &authenticationv1.TokenRequest{}
	if err := rc.c.SubResource("token").Create(ctx, sa, tr); err != nil {
		return fmt.Errorf("requesting token in %s: %w", name, err)
	}
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: nspleaseRequestsNamespace, Name: name,
			Labels: map[string]string{tenancyv1alpha1.ManagedByLabel: tenancyv1alpha1.ManagedByValue}},
		Type:       corev1.SecretTypeOpaque,
		StringData: map[string]string{"token": tr.Status.Token},
	}
	if err := rc.c.Create(ctx, secret); err != nil {
		return fmt.Errorf("creating Secret %s: %w", client.ObjectKeyFromObject(secret), err)
	}
	owner := fmt.Appendf(nil, `{"metadata":{"ownerReferences":[{"apiVersion":"v1","kind":"Namespace","name":%q,"uid":%q}]}}`, name, ns.UID)
	for _, o := range []client.Object{
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: nspleaseRequestsNamespace, Name: name}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: nspleaseRequestsNamespace, Name: name}},
	} {
		if err := rc.c.Patch(ctx, o, client.RawPatch(types.MergePatchType, owner)); err != nil {
			return fmt.Errorf("setting the owner of %T %s: %w", o, client.ObjectKeyFromObject(o), err)
		}
	}
	return nil
}

// ceilingNsplease runs ceiling (b): the admin creates request ConfigMaps series-from..series-to-1,
// parallel at a time, and workers make each request's ten writes as its create returns. It returns the
// create -> last write latencies, sorted, the time the first create returned and the last write's.
func ceilingNsplease(ctx context.Context, k *clients, rc *rawClient, workers int, series string, from, to, parallel int) ([]time.Duration, time.Time, time.Time, error) {
	if err := ensureRequestsNamespace(ctx, k); err != nil {
		return nil, time.Time{}, time.Time{}, err
	}
	revoke, err := grantNspleaseRoles(ctx, k)
	if err != nil {
		return nil, time.Time{}, time.Time{}, err
	}
	defer revoke()
	work := make(chan nspleaseRequest, to-from)
	var (
		mu          sync.Mutex
		lat         []time.Duration
		first, last time.Time
		failed      error
		wg          sync.WaitGroup
	)
	for w := 0; w < max(workers, 1); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range work {
				err := rc.nsplease(ctx, r.name)
				at := time.Now()
				mu.Lock()
				if err != nil && failed == nil {
					failed = err
				} else if err == nil {
					lat = append(lat, at.Sub(r.created))
					last = at
				}
				mu.Unlock()
			}
		}()
	}
	idx := make(chan int)
	var cwg sync.WaitGroup
	var createErr error
	for p := 0; p < max(parallel, 1); p++ {
		cwg.Add(1)
		go func() {
			defer cwg.Done()
			for i := range idx {
				cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: nspleaseRequestsNamespace, Name: fmt.Sprintf("nsp-%s-%05d", series, i)}}
				err := k.c.Create(ctx, cm)
				at := time.Now()
				mu.Lock()
				if err != nil {
					if createErr == nil {
						createErr = fmt.Errorf("creating ConfigMap %s: %w", cm.Name, err)
					}
					mu.Unlock()
					continue
				}
				if first.IsZero() || at.Before(first) {
					first = at
				}
				mu.Unlock()
				work <- nspleaseRequest{name: cm.Name, created: at}
			}
		}()
	}
	for i := from; i < to && ctx.Err() == nil; i++ {
		idx <- i
	}
	close(idx)
	cwg.Wait()
	close(work)
	wg.Wait()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	if createErr != nil {
		return lat, first, last, createErr
	}
	return lat, first, last, failed
}
