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
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/fields"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The usable ceiling waits, after the raw client's writes, until kube-controller-manager has made each
// namespace usable, which is what nsclaim's Ready promises: the namespace's `default` ServiceAccount
// exists (the serviceaccount controller) and its ResourceQuota has a status whose hard limits are the
// spec's (the resourcequota controller). The wait holds no worker: a watch of both records when each
// namespace got there, so the raw client does nothing beyond its writes, and a namespace is usable at
// the later of its last write and those two moments.

// usableTracker records, through watches as admin, when each namespace first had its `default`
// ServiceAccount and when its quota's status first matched its spec.
type usableTracker struct {
	mu      sync.Mutex
	saAt    map[string]time.Time
	quotaAt map[string]time.Time
	changed chan struct{}
}

// startUsableTracker starts the two informers and records until ctx ends. The informers keep nothing
// but names (a transform drops the rest), so a cluster of 10,000 namespaces costs the bench little.
func startUsableTracker(ctx context.Context, k *clients) (*usableTracker, error) {
	t := &usableTracker{saAt: map[string]time.Time{}, quotaAt: map[string]time.Time{}, changed: make(chan struct{}, 1)}
	c, err := cache.New(k.cfg, cache.Options{Scheme: scheme, ByObject: map[client.Object]cache.ByObject{
		&corev1.ServiceAccount{}: {Field: fields.OneTermEqualSelector("metadata.name", "default")},
	}})
	if err != nil {
		return nil, err
	}
	record := func(m map[string]time.Time, ns string) {
		now := time.Now()
		t.mu.Lock()
		if _, seen := m[ns]; !seen {
			m[ns] = now
		}
		t.mu.Unlock()
		select {
		case t.changed <- struct{}{}:
		default:
		}
	}
	sa, err := c.GetInformer(ctx, &corev1.ServiceAccount{})
	if err != nil {
		return nil, err
	}
	if _, err := sa.AddEventHandler(toolscache.ResourceEventHandlerFuncs{AddFunc: func(o any) {
		if s, ok := o.(*corev1.ServiceAccount); ok {
			record(t.saAt, s.Namespace)
		}
	}}); err != nil {
		return nil, err
	}
	rq, err := c.GetInformer(ctx, &corev1.ResourceQuota{})
	if err != nil {
		return nil, err
	}
	see := func(o any) {
		if q, ok := o.(*corev1.ResourceQuota); ok && quotaInForce(q) {
			record(t.quotaAt, q.Namespace)
		}
	}
	if _, err := rq.AddEventHandler(toolscache.ResourceEventHandlerFuncs{AddFunc: see, UpdateFunc: func(_, n any) { see(n) }}); err != nil {
		return nil, err
	}
	go func() { _ = c.Start(ctx) }()
	if !c.WaitForCacheSync(ctx) {
		return nil, fmt.Errorf("ServiceAccount and ResourceQuota informers did not sync")
	}
	return t, nil
}

// quotaInForce reports whether kube-controller-manager has computed the quota's status for its spec:
// status.hard holds exactly spec.hard (as nsclaim's reconcileUsable asks).
func quotaInForce(q *corev1.ResourceQuota) bool {
	if len(q.Status.Hard) != len(q.Spec.Hard) {
		return false
	}
	for name, want := range q.Spec.Hard {
		if got, ok := q.Status.Hard[name]; !ok || !equality.Semantic.DeepEqual(got, want) {
			return false
		}
	}
	return true
}

// usableAt is when namespace ns became usable: withQuota says whether the class made a quota in it.
func (t *usableTracker) usableAt(ns string, withQuota bool) (time.Time, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	at, ok := t.saAt[ns]
	if !ok {
		return time.Time{}, false
	}
	if withQuota {
		q, ok := t.quotaAt[ns]
		if !ok {
			return time.Time{}, false
		}
		if q.After(at) {
			at = q
		}
	}
	return at, true
}

// waitUsable waits until every namespace of made is usable, and returns how many were not when it gave
// up.
func (t *usableTracker) waitUsable(ctx context.Context, made map[string]provisioned, withQuota bool, timeout time.Duration) int {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		missing := 0
		for _, p := range made {
			if _, ok := t.usableAt(p.namespace, withQuota); !ok {
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

// usableLatencies are the create -> usable latencies of refs (usable: the later of the raw client's
// last write and kube-controller-manager's work), sorted, and the time the last one was usable.
func (t *usableTracker) usableLatencies(refs []claimRef, res poolResult, withQuota bool) ([]time.Duration, time.Time) {
	var out []time.Duration
	var last time.Time
	for _, r := range refs {
		done, ok := res.done[r.key()]
		if !ok {
			continue
		}
		at, ok := t.usableAt(res.made[r.key()].namespace, withQuota)
		if !ok {
			continue
		}
		if done.After(at) {
			at = done
		}
		out = append(out, at.Sub(r.created))
		if at.After(last) {
			last = at
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out, last
}
