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

package fleet

import (
	"context"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
)

// MirrorWatch watches the hub's mirror claims on every engaged member (the member cluster's cache:
// NamespaceClaims in the member's requester namespace labelled with a hub claim's UID,
// MemberCacheOptions) and queues the hub claim a mirror names the moment the member's operator writes
// its status or deletes it: the hub copies a member's answer when it is given, instead of at its next
// look. It is a multicluster-runtime runnable: the provider engages it with each member's cluster.
//
// A member whose watch has not synced (not yet, or never: a member Role without watch, from before
// this release) is looked at every waitRecheck as before; one whose watch has synced only every
// watchedRecheck, the safety net for a missed event.
type MirrorWatch struct {
	mu     sync.Mutex
	queue  workqueue.TypedRateLimitingInterface[reconcile.Request]
	synced map[string]toolscache.ResourceEventHandlerRegistration
}

// Source is the hub controller's source of mirror events: it hands the watch the controller's queue
// when the controller starts (events before that are not needed: the controller's start reconciles
// every hub claim).
func (w *MirrorWatch) Source() source.Source {
	return source.Func(func(_ context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
		w.mu.Lock()
		defer w.mu.Unlock()
		w.queue = q
		return nil
	})
}

// Start implements manager.Runnable: the watch has nothing to run on its own.
func (w *MirrorWatch) Start(ctx context.Context) error {
	<-ctx.Done()
	return nil
}

// Engage starts watching member name's mirrors (its cache's NamespaceClaim informer, not waiting for it
// to sync: a member that forbids the watch must not hold up the others) until ctx ends, when the member
// is disengaged.
func (w *MirrorWatch) Engage(ctx context.Context, name string, cl cluster.Cluster) error {
	inf, err := cl.GetCache().GetInformer(ctx, &tenancyv1alpha1.NamespaceClaim{}, cache.BlockUntilSynced(false))
	if err != nil {
		return err
	}
	reg, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    w.enqueue,
		UpdateFunc: func(_, o any) { w.enqueue(o) },
		DeleteFunc: w.enqueue,
	})
	if err != nil {
		return err
	}
	w.mu.Lock()
	if w.synced == nil {
		w.synced = map[string]toolscache.ResourceEventHandlerRegistration{}
	}
	w.synced[name] = reg
	w.mu.Unlock()
	go func() {
		<-ctx.Done()
		_ = inf.RemoveEventHandler(reg)
		w.mu.Lock()
		defer w.mu.Unlock()
		// A later engagement of the same name (its Secret changed) may have replaced this one.
		if w.synced[name] == reg {
			delete(w.synced, name)
		}
	}()
	ctrl.Log.WithName("fleet").Info("Watching mirrors on member cluster", "cluster", name)
	return nil
}

// Watched says whether member name's mirrors are watched and the watch has synced.
func (w *MirrorWatch) Watched(name string) bool {
	if w == nil {
		return false
	}
	w.mu.Lock()
	reg := w.synced[name]
	w.mu.Unlock()
	return reg != nil && reg.HasSynced()
}

// enqueue queues the hub claim a mirror names (HubClaimAnnotation). A forged annotation costs one
// reconcile of the named claim, which then checks the mirror by its UID label as always.
func (w *MirrorWatch) enqueue(o any) {
	if d, ok := o.(toolscache.DeletedFinalStateUnknown); ok {
		o = d.Obj
	}
	obj, ok := o.(client.Object)
	if !ok {
		return
	}
	key, ok := HubClaimKey(obj.GetAnnotations()[HubClaimAnnotation])
	if !ok {
		return
	}
	w.mu.Lock()
	q := w.queue
	w.mu.Unlock()
	if q != nil {
		q.Add(reconcile.Request{NamespacedName: key})
	}
}

// hubClaimSelector selects mirrors: claims labelled with a hub claim's UID.
var hubClaimSelector = func() labels.Selector {
	req, err := labels.NewRequirement(HubClaimUIDLabel, selection.Exists, nil)
	if err != nil {
		panic(err)
	}
	return labels.NewSelector().Add(*req)
}()

// MemberCacheOptions scope a member cluster's cache to what the hub may read there and needs: the
// NamespaceClaims in memberNamespace labelled with a hub claim's UID (config/fleet/member.yaml grants
// list and watch there, and nothing cluster-wide), without their managedFields (nothing reads them, and
// they are about a third of a mirror's size).
func MemberCacheOptions(memberNamespace string) cluster.Option {
	return func(o *cluster.Options) {
		o.Cache.DefaultNamespaces = map[string]cache.Config{memberNamespace: {}}
		o.Cache.DefaultTransform = cache.TransformStripManagedFields()
		o.Cache.ByObject = map[client.Object]cache.ByObject{
			&tenancyv1alpha1.NamespaceClaim{}: {Label: hubClaimSelector},
		}
	}
}

// HubClaimKey parses a mirror's HubClaimAnnotation (namespace/name).
func HubClaimKey(v string) (types.NamespacedName, bool) {
	ns, name, ok := strings.Cut(v, "/")
	if !ok || ns == "" || name == "" || strings.Contains(name, "/") {
		return types.NamespacedName{}, false
	}
	return types.NamespacedName{Namespace: ns, Name: name}, true
}
