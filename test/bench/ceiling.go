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
	"path/filepath"
	"sort"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
	"github.com/nsclaim/nsclaim-operator/internal/access"
	"github.com/nsclaim/nsclaim-operator/internal/credentials"
	"github.com/nsclaim/nsclaim-operator/internal/provision"
)

// The ceiling is what the control plane can do for nsclaim at best: a program that makes, for each
// claim, exactly the writes the operator makes, in the same order, with no reads at all, at the
// operator's concurrency and with no client-side throttling. It runs as the operator's ServiceAccount,
// so authentication and RBAC cost the same. The objects come from the operator's own builders
// (internal/provision.Build, internal/credentials), so they follow the controller's real object set.
//
// Writes per claim, in order:
//  1. patch     namespaceclaims           add the finalizer (merge patch with resourceVersion)
//  2. create    namespaces                provision.Build(...).Namespace
//  3. create    serviceaccounts           nsclaim-tenant
//  4. create    roles                     nsclaim-release
//  5. create    rolebindings              nsclaim-tenant, nsclaim-release, then the class's extra ones
//  6. create    resourcequotas, limitranges, networkpolicies   those the class asks for
//  7. patch     secrets                   the probe: a JSON patch that only tests the claim-uid label (404)
//  8. create    serviceaccounts/token     TokenRequest for nsclaim-tenant
//  9. create    secrets                   <claim>-kubeconfig next to the claim, owned by claim and namespace
//  10. create   subjectaccessreviews      access.Checks of the issued identity, selfTestConcurrency at a time
//  11. patch    namespaceclaims/status    namespace, class, expiry, token record, conditions Ready
//  12. create   events                    Provisioned (events.k8s.io/v1)
//
// The operator's reads (class, requester namespace, sibling claims, every child from its caches, and
// the ClusterRole it reads from the API server for the self-test) are not made: the ClusterRole's rules
// are read once, before the clock starts.

// ceilingOptions select which of the writes the ceiling makes; the fill used to reach large sizes
// leaves out the self-test and the Event, which store nothing the operator later reads.
type ceilingOptions struct {
	workers             int
	selfTest            bool
	event               bool
	selfTestConcurrency int
}

// ceiling runs the writes for claims as they arrive on in, workers at a time.
type ceiling struct {
	c        client.Client
	class    *tenancyv1alpha1.NamespaceClass
	endpoint credentials.Endpoint
	grants   []rbacv1.PolicyRule
	opts     ceilingOptions
}

// newCeiling builds the ceiling's client from the operator's kubeconfig, without throttling.
func newCeiling(ctx context.Context, e *env, admin *clients, class *tenancyv1alpha1.NamespaceClass, opts ceilingOptions) (*ceiling, error) {
	cfg, err := restConfig(filepath.Join(e.state, "operator.kubeconfig"))
	if err != nil {
		return nil, err
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, err
	}
	role := &rbacv1.ClusterRole{}
	if err := admin.c.Get(ctx, clientKey("", class.Spec.ClusterRole), role); err != nil {
		return nil, fmt.Errorf("reading ClusterRole %s: %w", class.Spec.ClusterRole, err)
	}
	ep := credentials.Endpoint{Server: fmt.Sprintf("https://127.0.0.1:%d", e.apiserverPort), CAData: cfg.CAData}
	return &ceiling{c: c, class: class, endpoint: ep, grants: role.Rules, opts: opts}, nil
}

// ceilingResult is when each claim's last write returned.
type ceilingResult struct {
	done   map[string]time.Time
	errors int
	first  error
}

// run provisions every claim received on in until it is closed.
func (cl *ceiling) run(ctx context.Context, in <-chan claimRef) ceilingResult {
	res := ceilingResult{done: map[string]time.Time{}}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for w := 0; w < max(cl.opts.workers, 1); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ref := range in {
				err := cl.provision(ctx, ref)
				mu.Lock()
				if err != nil {
					res.errors++
					if res.first == nil {
						res.first = err
					}
				} else {
					res.done[ref.key()] = time.Now()
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return res
}

// provision makes the writes listed above for one claim.
func (cl *ceiling) provision(ctx context.Context, ref claimRef) error {
	claim := ref.obj.DeepCopy()
	before := claim.DeepCopy()
	controllerutil.AddFinalizer(claim, tenancyv1alpha1.ClaimFinalizer)
	if err := cl.c.Patch(ctx, claim, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("adding finalizer to %s: %w", ref.key(), err)
	}
	before = claim.DeepCopy()

	owner := provision.OwnerOf(claim)
	name := provision.NamespaceName(cl.class.Spec.Naming.Prefix, claim.Spec.NamespaceName, claim.Namespace, claim.Name, string(claim.UID))
	d := provision.Build(name, owner, cl.class, claim.Spec.Labels)
	objs := []client.Object{d.Namespace, d.ServiceAccount, d.ReleaseRole}
	for _, rb := range d.RoleBindings {
		objs = append(objs, rb)
	}
	if d.ResourceQuota != nil {
		objs = append(objs, d.ResourceQuota)
	}
	if d.LimitRange != nil {
		objs = append(objs, d.LimitRange)
	}
	if d.NetworkPolicy != nil {
		objs = append(objs, d.NetworkPolicy)
	}
	for _, o := range objs {
		if err := cl.c.Create(ctx, o); err != nil {
			return fmt.Errorf("creating %T %s: %w", o, client.ObjectKeyFromObject(o), err)
		}
	}

	probe := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: claim.Namespace, Name: credentials.SecretName(claim.Name)}}
	if err := cl.c.Patch(ctx, probe, client.RawPatch(types.JSONPatchType, credentials.ProbePatch(string(claim.UID)))); !apierrors.IsNotFound(err) {
		return fmt.Errorf("probing Secret %s: want NotFound, got %v", client.ObjectKeyFromObject(probe), err)
	}
	seconds := int64(provision.TokenTTL(cl.class).Seconds())
	tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &seconds}}
	if err := cl.c.SubResource("token").Create(ctx, d.ServiceAccount, tr); err != nil {
		return fmt.Errorf("requesting token in %s: %w", name, err)
	}
	tok := credentials.Token{Value: tr.Status.Token, ExpiresAt: tr.Status.ExpirationTimestamp.Time, ServiceAccountUID: string(d.ServiceAccount.UID)}
	data, err := credentials.SecretData(cl.endpoint, name, tok)
	if err != nil {
		return err
	}
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: credentials.SecretName(claim.Name), Namespace: claim.Namespace, Labels: map[string]string{
			tenancyv1alpha1.ManagedByLabel: tenancyv1alpha1.ManagedByValue,
			tenancyv1alpha1.ClaimUIDLabel:  string(claim.UID),
		}, Annotations: credentials.TokenAnnotations(tok)},
		Type: corev1.SecretTypeOpaque,
		Data: data,
	}
	if err := controllerutil.SetControllerReference(claim, secret, scheme); err != nil {
		return err
	}
	ns := d.Namespace
	secret.OwnerReferences = append(secret.OwnerReferences, metav1.OwnerReference{APIVersion: "v1", Kind: "Namespace", Name: ns.Name, UID: ns.UID})
	if err := cl.c.Create(ctx, secret); err != nil {
		return fmt.Errorf("creating Secret %s: %w", client.ObjectKeyFromObject(secret), err)
	}

	if cl.opts.selfTest {
		checks := access.Checks(name, cl.grants, []string{claim.Namespace, metav1.NamespaceDefault, metav1.NamespaceSystem})
		// The answers are not checked: the ceiling counts the requests, not the outcome.
		if _, err := access.Verify(ctx, cl.c, access.Identity{User: d.TenantUser, Groups: d.TenantGroups}, checks, max(cl.opts.selfTestConcurrency, 1)); err != nil {
			return err
		}
	}

	ttl, _ := provision.TTL(claim, cl.class)
	claim.Status.Namespace = name
	claim.Status.ClassName = cl.class.Name
	claim.Status.ExpiresAt = credentials.ExpiryTime(claim.CreationTimestamp.Add(ttl))
	claim.Status.CredentialsSecretName = secret.Name
	claim.Status.TokenExpiresAt = credentials.ExpiryTime(tok.ExpiresAt)
	claim.Status.TokenServiceAccountUID = tok.ServiceAccountUID
	claim.Status.ObservedGeneration = claim.Generation
	for _, t := range []string{tenancyv1alpha1.NamespaceReadyCondition, tenancyv1alpha1.CredentialsReadyCondition, tenancyv1alpha1.PermissionsVerifiedCondition, tenancyv1alpha1.ReadyCondition} {
		meta.SetStatusCondition(&claim.Status.Conditions, metav1.Condition{Type: t, Status: metav1.ConditionTrue,
			Reason: tenancyv1alpha1.ProvisionedReason, Message: "Provisioned by the bench's ceiling program", ObservedGeneration: claim.Generation})
	}
	if err := cl.c.Status().Patch(ctx, claim, client.MergeFrom(before)); err != nil {
		return fmt.Errorf("patching status of %s: %w", ref.key(), err)
	}

	if cl.opts.event {
		ev := &eventsv1.Event{
			ObjectMeta:          metav1.ObjectMeta{Namespace: claim.Namespace, Name: claim.Name + "." + rand.String(10)},
			EventTime:           metav1.NowMicro(),
			ReportingController: "nsclaim",
			ReportingInstance:   "nsclaim-bench-ceiling",
			Action:              "Provision",
			Reason:              "Provisioned",
			Regarding:           corev1.ObjectReference{APIVersion: tenancyv1alpha1.GroupVersion.String(), Kind: "NamespaceClaim", Namespace: claim.Namespace, Name: claim.Name, UID: claim.UID},
			Note:                "Namespace " + name + " is ready",
			Type:                corev1.EventTypeNormal,
		}
		if err := cl.c.Create(ctx, ev); err != nil {
			return fmt.Errorf("creating Event for %s: %w", ref.key(), err)
		}
	}
	return nil
}

// runCeiling creates n claims of a series through the admin client, as the burst does, and feeds each
// to the ceiling's workers as its create returns. It returns the refs and the result.
func runCeiling(ctx context.Context, k *clients, cl *ceiling, series string, from, to, perNS, parallel int) ([]claimRef, ceilingResult, error) {
	in := make(chan claimRef, to-from)
	var res ceilingResult
	done := make(chan struct{})
	go func() { res = cl.run(ctx, in); close(done) }()
	refs, err := createClaims(ctx, k, series, from, to, perNS, parallel, in)
	close(in)
	<-done
	if err == nil && res.first != nil {
		err = fmt.Errorf("%d claims failed, first: %w", res.errors, res.first)
	}
	return refs, res, err
}

// ceilingLatencies are create -> last write latencies, sorted, and the time of the last write.
func ceilingLatencies(refs []claimRef, res ceilingResult) ([]time.Duration, time.Time) {
	var out []time.Duration
	var last time.Time
	for _, r := range refs {
		if at, ok := res.done[r.key()]; ok {
			out = append(out, at.Sub(r.created))
			if at.After(last) {
				last = at
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out, last
}

func clientKey(namespace, name string) client.ObjectKey {
	return client.ObjectKey{Namespace: namespace, Name: name}
}
