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

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
)

// benchClassName is the class every bench claim uses.
const benchClassName = "bench"

// Kinds of the children the chaos scenarios delete.
const (
	kindRoleBinding   = "RoleBinding"
	kindResourceQuota = "ResourceQuota"
)

// claimController is the controller-runtime name of the claim controller, a label of its metrics.
const claimController = "namespaceclaim"

// cmdBench is the program's name, and the bench client's name in the per-user request counts.
const cmdBench = "bench"

// benchClass is like the sample class "ci" (edit role, quota, limit range, network policy), with
// tokens that outlive any bench run so that no renewal falls into a measurement.
func benchClass() *tenancyv1alpha1.NamespaceClass {
	d := func(x time.Duration) *metav1.Duration { return &metav1.Duration{Duration: x} }
	return &tenancyv1alpha1.NamespaceClass{
		ObjectMeta: metav1.ObjectMeta{Name: benchClassName},
		Spec: tenancyv1alpha1.NamespaceClassSpec{
			ClusterRole:   "edit",
			Naming:        tenancyv1alpha1.NamingSpec{Prefix: "b-"},
			PodSecurity:   tenancyv1alpha1.PodSecurityRestricted,
			NetworkPolicy: tenancyv1alpha1.NetworkPolicyDenyFromOtherNamespaces,
			ResourceQuota: &corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{
				corev1.ResourcePods: resource.MustParse("20"), corev1.ResourceRequestsCPU: resource.MustParse("4"),
			}},
			LimitRange: &corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{
				Type:           corev1.LimitTypeContainer,
				Default:        corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m")},
				DefaultRequest: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")},
			}}},
			Lifetime:    tenancyv1alpha1.LifetimeSpec{DefaultTTL: d(7 * 24 * time.Hour), MaxTTL: d(7 * 24 * time.Hour)},
			Credentials: tenancyv1alpha1.CredentialsSpec{TokenTTL: d(48 * time.Hour), RenewBefore: d(time.Hour)},
		},
	}
}

// ensureClass creates the bench class if it is missing and returns it as stored (with defaults).
func ensureClass(ctx context.Context, k *clients) (*tenancyv1alpha1.NamespaceClass, error) {
	want := benchClass()
	if err := k.c.Create(ctx, want); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("creating NamespaceClass %s: %w", want.Name, err)
	}
	got := &tenancyv1alpha1.NamespaceClass{}
	if err := k.c.Get(ctx, clientKey("", benchClassName), got); err != nil {
		return nil, err
	}
	return got, nil
}

// claimRef names a claim the bench made, and when its create call was sent.
type claimRef struct {
	namespace, name string
	created         time.Time
	// obj is the claim as its create returned it.
	obj *tenancyv1alpha1.NamespaceClaim
}

func (c claimRef) key() string { return c.namespace + "/" + c.name }

// requesterNamespace is the namespace of claim i of a series: perNS claims share one, as a CI
// system's pipelines of one project would.
func requesterNamespace(series string, i, perNS int) string {
	return fmt.Sprintf("%s-r%03d", series, i/perNS)
}

// ensureNamespaces creates the named namespaces that do not exist.
func ensureNamespaces(ctx context.Context, k *clients, names []string) error {
	for _, n := range names {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: n, Labels: map[string]string{"nsclaim-bench": "requester"}}}
		if err := k.c.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating namespace %s: %w", n, err)
		}
	}
	return nil
}

// createClaims creates claims series-<from>..series-<to-1> of the bench class, parallel at a time,
// into requester namespaces of perNS claims each, and sends each to out (if not nil) as its create
// returns. It returns them in creation order.
func createClaims(ctx context.Context, k *clients, series string, from, to, perNS, parallel int, out chan<- claimRef) ([]claimRef, error) {
	return createClaimsOf(ctx, k, benchClassName, series, from, to, perNS, parallel, out)
}

// createClaimsOf is createClaims for claims of class.
func createClaimsOf(ctx context.Context, k *clients, class, series string, from, to, perNS, parallel int, out chan<- claimRef) ([]claimRef, error) {
	var nss []string
	for i := from; i < to; i++ {
		if n := requesterNamespace(series, i, perNS); len(nss) == 0 || nss[len(nss)-1] != n {
			nss = append(nss, n)
		}
	}
	if err := ensureNamespaces(ctx, k, nss); err != nil {
		return nil, err
	}
	var (
		mu    sync.Mutex
		refs  []claimRef
		first error
		wg    sync.WaitGroup
		idx   = make(chan int)
	)
	for w := 0; w < parallel; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range idx {
				c := &tenancyv1alpha1.NamespaceClaim{
					ObjectMeta: metav1.ObjectMeta{Namespace: requesterNamespace(series, i, perNS), Name: fmt.Sprintf("%s-%05d", series, i)},
					Spec:       tenancyv1alpha1.NamespaceClaimSpec{ClassName: class},
				}
				// The clock starts before the create call, as a client's does: a claim's latency is from
				// its create call to the event of Ready=True on the bench's watch.
				sent := time.Now()
				err := k.c.Create(ctx, c)
				ref := claimRef{namespace: c.Namespace, name: c.Name, created: sent, obj: c}
				mu.Lock()
				if err != nil && !apierrors.IsAlreadyExists(err) {
					if first == nil {
						first = fmt.Errorf("creating claim %s: %w", ref.key(), err)
					}
				} else {
					refs = append(refs, ref)
				}
				mu.Unlock()
				if err == nil && out != nil {
					out <- ref
				}
			}
		}()
	}
	for i := from; i < to && ctx.Err() == nil; i++ {
		idx <- i
	}
	close(idx)
	wg.Wait()
	sort.Slice(refs, func(i, j int) bool { return refs[i].created.Before(refs[j].created) })
	return refs, first
}

// readyTracker records when the bench first saw each claim Ready, through a watch of all claims.
type readyTracker struct {
	mu      sync.Mutex
	readyAt map[string]time.Time
	last    time.Time
	changed chan struct{}
}

// startTracker starts an informer on claims and records Ready transitions until ctx ends.
func startTracker(ctx context.Context, k *clients) (*readyTracker, error) {
	t := &readyTracker{readyAt: map[string]time.Time{}, changed: make(chan struct{}, 1)}
	c, err := cache.New(k.cfg, cache.Options{Scheme: scheme})
	if err != nil {
		return nil, err
	}
	inf, err := c.GetInformer(ctx, &tenancyv1alpha1.NamespaceClaim{})
	if err != nil {
		return nil, err
	}
	see := func(obj any) {
		claim, ok := obj.(*tenancyv1alpha1.NamespaceClaim)
		if !ok || !meta.IsStatusConditionTrue(claim.Status.Conditions, tenancyv1alpha1.ReadyCondition) {
			return
		}
		now := time.Now()
		key := claim.Namespace + "/" + claim.Name
		t.mu.Lock()
		if _, seen := t.readyAt[key]; !seen {
			t.readyAt[key] = now
			t.last = now
		}
		t.mu.Unlock()
		select {
		case t.changed <- struct{}{}:
		default:
		}
	}
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    see,
		UpdateFunc: func(_, n any) { see(n) },
	}); err != nil {
		return nil, err
	}
	go func() { _ = c.Start(ctx) }()
	if !c.WaitForCacheSync(ctx) {
		return nil, fmt.Errorf("claim informer did not sync")
	}
	return t, nil
}

func (t *readyTracker) at(key string) (time.Time, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	v, ok := t.readyAt[key]
	return v, ok
}

func (t *readyTracker) lastReady() time.Time {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.last
}

// waitAll waits until every claim of refs was seen Ready, and returns how many were not when it gave up.
func (t *readyTracker) waitAll(ctx context.Context, refs []claimRef, timeout time.Duration) int {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		missing := 0
		for _, r := range refs {
			if _, ok := t.at(r.key()); !ok {
				missing++
			}
		}
		if missing == 0 {
			return 0
		}
		select {
		case <-ctx.Done():
			return missing
		case <-deadline.C:
			return missing
		case <-t.changed:
		case <-time.After(time.Second):
		}
	}
}

// latencies returns the create -> Ready latencies of refs that became Ready, sorted, and the time the
// last one did.
func (t *readyTracker) latencies(refs []claimRef) ([]time.Duration, time.Time) {
	var out []time.Duration
	var last time.Time
	for _, r := range refs {
		if at, ok := t.at(r.key()); ok {
			out = append(out, at.Sub(r.created))
			if at.After(last) {
				last = at
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out, last
}

// percentile of sorted durations (nearest rank).
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(p/100*float64(len(sorted))+0.5) - 1
	i = max(0, min(i, len(sorted)-1))
	return sorted[i]
}
