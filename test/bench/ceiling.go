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
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	authorizationclient "k8s.io/client-go/kubernetes/typed/authorization/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
	"github.com/nsclaim/nsclaim-operator/internal/claimpolicy"
	"github.com/nsclaim/nsclaim-operator/internal/credentials"
)

// The ceilings are what the control plane can do at best, measured in the same run as nsclaim, at the
// same concurrency, as the operator's own ServiceAccount (so authentication, RBAC and the admission
// fence cost the same), unthrottled and with no reads at all. There are two:
//
// (a) "nsclaim's objects" (this file): for each claim, exactly the objects nsclaim creates for it, from
//     the operator's own builder (internal/claimpolicy.Build) and credentials code, and nothing else:
//       create namespaces, serviceaccounts (nsclaim-tenant), rolebindings (nsclaim-tenant,
//       nsclaim-release, then the class's extra ones), resourcequotas, limitranges,
//       networkpolicies (those the class asks for), clusterroles and clusterrolebindings (the
//       namespace watcher, owned by the namespace), serviceaccounts/token, secrets (the kubeconfig,
//       next to the claim). No self-test, no finalizer, no status, no Event, no Secret probe.
// (b) "the shell operator's protocol" (nsplease.go): the ten writes of nsplease.
//
// Neither ceiling proves anything or reports anything: the difference between nsclaim and (a) is what
// nsclaim's safety (self-test, finalizer, status, Events, probes) and its reads cost.

// rawClient is the ceilings' client: the operator's ServiceAccount kubeconfig, without throttling.
type rawClient struct {
	c        client.Client
	cfg      *rest.Config
	class    *tenancyv1alpha1.NamespaceClass
	endpoint credentials.Endpoint
	// unstored: the claims are not stored on this cluster (the fleet's ceiling: they are the hub's), so
	// the kubeconfig Secret is owned by the namespace alone.
	unstored bool
}

func newRawClient(e *env, class *tenancyv1alpha1.NamespaceClass) (*rawClient, error) {
	return newRawClientAt(filepath.Join(e.state, "operator.kubeconfig"), class)
}

// newRawClientAt is the raw client of the operator's ServiceAccount kubeconfig at path; the handed
// kubeconfigs name that kubeconfig's server.
func newRawClientAt(path string, class *tenancyv1alpha1.NamespaceClass) (*rawClient, error) {
	cfg, err := restConfig(path)
	if err != nil {
		return nil, err
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, err
	}
	ep := credentials.Endpoint{Server: cfg.Host, CAData: cfg.CAData}
	return &rawClient{c: c, cfg: cfg, class: class, endpoint: ep}, nil
}

// provisioned is what ceiling (a) made for one claim: enough to write the claim's status later.
type provisioned struct {
	namespace string
	secret    string
	token     credentials.Token
}

// objects makes ceiling (a)'s writes for one claim, in the operator's order.
func (rc *rawClient) objects(ctx context.Context, claim *tenancyv1alpha1.NamespaceClaim) (provisioned, error) {
	owner := claimpolicy.OwnerOf(claim)
	name := claimpolicy.NamespaceName(rc.class.Spec.Naming.Prefix, claim.Spec.NamespaceName, claim.Namespace, claim.Name, string(claim.UID))
	d := claimpolicy.Build(name, owner, rc.class, claim.Spec.Labels)
	if err := rc.c.Create(ctx, d.Namespace); err != nil {
		return provisioned{}, fmt.Errorf("creating namespace %s: %w", name, err)
	}
	nsRef := metav1.OwnerReference{APIVersion: "v1", Kind: "Namespace", Name: d.Namespace.Name, UID: d.Namespace.UID}
	// The watcher's ClusterRole first and its binding last, as nsclaim writes them: the binding's
	// escalation check waits for the progress notification after the ClusterRole's, and the other
	// objects are written in that wait (docs/benchmarks.md).
	d.NamespaceWatcher.OwnerReferences = []metav1.OwnerReference{nsRef}
	d.NamespaceWatcherBinding.OwnerReferences = []metav1.OwnerReference{nsRef}
	objs := []client.Object{d.NamespaceWatcher, d.ServiceAccount}
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
	objs = append(objs, d.NamespaceWatcherBinding)
	for _, o := range objs {
		if err := rc.c.Create(ctx, o); err != nil {
			return provisioned{}, fmt.Errorf("creating %T %s: %w", o, client.ObjectKeyFromObject(o), err)
		}
	}
	seconds := int64(claimpolicy.TokenTTL(rc.class).Seconds())
	tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &seconds}}
	if err := rc.c.SubResource("token").Create(ctx, d.ServiceAccount, tr); err != nil {
		return provisioned{}, fmt.Errorf("requesting token in %s: %w", name, err)
	}
	tok := credentials.Token{Value: tr.Status.Token, ExpiresAt: tr.Status.ExpirationTimestamp.Time, ServiceAccountUID: string(d.ServiceAccount.UID)}
	if err := rc.rulesReviews(ctx, tr.Status.Token, name, claim.Namespace); err != nil {
		return provisioned{}, err
	}
	data, err := credentials.SecretData(rc.endpoint, name, tok)
	if err != nil {
		return provisioned{}, err
	}
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: credentials.SecretName(claim.Name), Namespace: claim.Namespace, Labels: map[string]string{
			tenancyv1alpha1.ManagedByLabel: tenancyv1alpha1.ManagedByValue,
			tenancyv1alpha1.ClaimUIDLabel:  string(claim.UID),
		}, Annotations: credentials.TokenAnnotations(tok)},
		Type: corev1.SecretTypeOpaque,
		Data: data,
	}
	if !rc.unstored {
		if err := controllerutil.SetControllerReference(claim, secret, scheme); err != nil {
			return provisioned{}, err
		}
	}
	secret.OwnerReferences = append(secret.OwnerReferences, nsRef)
	if err := rc.c.Create(ctx, secret); err != nil {
		return provisioned{}, fmt.Errorf("creating Secret %s: %w", client.ObjectKeyFromObject(secret), err)
	}
	return provisioned{namespace: name, secret: secret.Name, token: tok}, nil
}

// rulesReviews makes the two SelfSubjectRulesReviews of nsclaim's self-test with the minted token, in
// parallel (the claim's namespace and the requester's), and does not look at the answers: what any
// self-test of the issued token costs the API server, and nothing more.
func (rc *rawClient) rulesReviews(ctx context.Context, token string, namespaces ...string) error {
	cfg := rest.AnonymousClientConfig(rc.cfg)
	cfg.BearerToken = token
	cs, err := authorizationclient.NewForConfig(cfg)
	if err != nil {
		return err
	}
	errs := make([]error, len(namespaces))
	var wg sync.WaitGroup
	for i, ns := range namespaces {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = cs.SelfSubjectRulesReviews().Create(ctx, &authorizationv1.SelfSubjectRulesReview{
				Spec: authorizationv1.SelfSubjectRulesReviewSpec{Namespace: ns}}, metav1.CreateOptions{})
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			return fmt.Errorf("SelfSubjectRulesReview in %s with the minted token: %w", namespaces[i], err)
		}
	}
	return nil
}

// finish adds the finalizer and writes the Ready status the operator would have written, so that a
// manager started later adopts the claim as Ready and writes nothing for it. It is no part of any
// ceiling and runs outside every measured window.
func (rc *rawClient) finish(ctx context.Context, claim *tenancyv1alpha1.NamespaceClaim, p provisioned) error {
	claim = claim.DeepCopy()
	before := claim.DeepCopy()
	controllerutil.AddFinalizer(claim, tenancyv1alpha1.ClaimFinalizer)
	if err := rc.c.Patch(ctx, claim, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("adding finalizer to %s/%s: %w", claim.Namespace, claim.Name, err)
	}
	before = claim.DeepCopy()
	ttl, _ := claimpolicy.TTL(claim, rc.class)
	claim.Status.Namespace = p.namespace
	claim.Status.ClassName = rc.class.Name
	claim.Status.ExpiresAt = credentials.ExpiryTime(claim.CreationTimestamp.Add(ttl))
	claim.Status.CredentialsSecretName = p.secret
	claim.Status.TokenExpiresAt = credentials.ExpiryTime(p.token.ExpiresAt)
	claim.Status.TokenServiceAccountUID = p.token.ServiceAccountUID
	claim.Status.ObservedGeneration = claim.Generation
	for _, t := range []string{tenancyv1alpha1.NamespaceReadyCondition, tenancyv1alpha1.CredentialsReadyCondition, tenancyv1alpha1.PermissionsVerifiedCondition, tenancyv1alpha1.ReadyCondition} {
		meta.SetStatusCondition(&claim.Status.Conditions, metav1.Condition{Type: t, Status: metav1.ConditionTrue,
			Reason: tenancyv1alpha1.ProvisionedReason, Message: "Provisioned by the bench's raw client", ObservedGeneration: claim.Generation})
	}
	if err := rc.c.Status().Patch(ctx, claim, client.MergeFrom(before)); err != nil {
		return fmt.Errorf("patching status of %s/%s: %w", claim.Namespace, claim.Name, err)
	}
	return nil
}

// poolResult is when each item's work returned, and what it made.
type poolResult struct {
	done   map[string]time.Time
	made   map[string]provisioned
	errors int
	first  error
}

// runPool runs fn for every claimRef received on in, workers at a time, until in is closed.
func runPool(ctx context.Context, workers int, in <-chan claimRef, fn func(context.Context, claimRef) (provisioned, error)) poolResult {
	res := poolResult{done: map[string]time.Time{}, made: map[string]provisioned{}}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for w := 0; w < max(workers, 1); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ref := range in {
				p, err := fn(ctx, ref)
				at := time.Now()
				mu.Lock()
				if err != nil {
					res.errors++
					if res.first == nil {
						res.first = err
					}
				} else {
					res.done[ref.key()] = at
					res.made[ref.key()] = p
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return res
}

// ceilingObjects runs ceiling (a): it creates claims series-from..series-to-1 through the admin client,
// as a burst does, and feeds each to workers that make its objects as its create returns.
func ceilingObjects(ctx context.Context, k *clients, rc *rawClient, workers int, series string, from, to, perNS, parallel int) ([]claimRef, poolResult, error) {
	in := make(chan claimRef, to-from)
	var res poolResult
	done := make(chan struct{})
	go func() {
		res = runPool(ctx, workers, in, func(ctx context.Context, ref claimRef) (provisioned, error) { return rc.objects(ctx, ref.obj) })
		close(done)
	}()
	refs, err := createClaims(ctx, k, series, from, to, perNS, parallel, in)
	close(in)
	<-done
	if err == nil && res.first != nil {
		err = fmt.Errorf("%d claims failed, first: %w", res.errors, res.first)
	}
	return refs, res, err
}

// finishAll runs finish for every claim of refs that res provisioned, workers at a time.
func finishAll(ctx context.Context, rc *rawClient, workers int, refs []claimRef, res poolResult) error {
	in := make(chan claimRef, len(refs))
	for _, r := range refs {
		if _, ok := res.made[r.key()]; ok {
			in <- r
		}
	}
	close(in)
	fr := runPool(ctx, workers, in, func(ctx context.Context, ref claimRef) (provisioned, error) {
		return provisioned{}, rc.finish(ctx, ref.obj, res.made[ref.key()])
	})
	if fr.first != nil {
		return fmt.Errorf("finishing %d claims failed, first: %w", fr.errors, fr.first)
	}
	return nil
}

// poolLatencies are create -> last write latencies, sorted, and the time of the last write.
func poolLatencies(refs []claimRef, res poolResult) ([]time.Duration, time.Time) {
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
