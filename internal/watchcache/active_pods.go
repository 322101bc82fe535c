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
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// ActivePodSelector selects the Pods that count as activity: every phase but Succeeded and Failed
// (Pending, Running and Unknown). A Pod that ends leaves the selection, and the watch reports it as
// deleted.
var ActivePodSelector = fields.AndSelectors(
	fields.OneTermNotEqualSelector("status.phase", string(corev1.PodSucceeded)),
	fields.OneTermNotEqualSelector("status.phase", string(corev1.PodFailed)))

// ActivePods is an informer cache of the Pods Pending, Running or Unknown in the cluster, metadata only
// and stripped to identity (name, namespace, UID, resourceVersion): a claim's idle clock stops while
// its namespace has one (docs/lifecycle.md). The API server filters by phase; Pods cannot be selected
// by their namespace's labels, so active Pods of other namespaces are cached too, at about the size
// docs/benchmarks-history.md measures. Pods that end leave the cache.
type ActivePods struct {
	sideCache
}

// NewActivePods creates the cache. Add it to the manager (AddActivePods does) so it starts with the
// others. Unlike the other side caches it keeps the namespace index: it is read by namespace.
func NewActivePods(cfg *rest.Config, scheme *runtime.Scheme) (*ActivePods, error) {
	c, err := cache.New(cfg, cache.Options{Scheme: scheme, DefaultTransform: stripToActivity,
		ByObject: map[client.Object]cache.ByObject{newPodMetadata(): {Field: ActivePodSelector}}})
	if err != nil {
		return nil, fmt.Errorf("creating the active Pod cache: %w", err)
	}
	return &ActivePods{sideCache: sideCache{cache: c}}, nil
}

// AddActivePods creates the active Pod cache and adds it to mgr.
func AddActivePods(mgr manager.Manager, cfg *rest.Config, scheme *runtime.Scheme) (*ActivePods, error) {
	p, err := NewActivePods(cfg, scheme)
	if err != nil {
		return nil, err
	}
	if err := mgr.Add(p); err != nil {
		return nil, fmt.Errorf("adding the active Pod cache: %w", err)
	}
	return p, nil
}

// Count returns the number of active Pods in namespace ns, as the cache last saw them.
func (p *ActivePods) Count(ctx context.Context, ns string) (int, error) {
	all, _, err := p.CountWork(ctx, ns)
	return all, err
}

// CountWork returns the number of active Pods in namespace ns, and how many of them are work: not
// controlled by a ReplicaSet or a StatefulSet (see isWorkloadPod).
func (p *ActivePods) CountWork(ctx context.Context, ns string) (all, work int, err error) {
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("PodList"))
	if err := p.cache.List(ctx, list, client.InNamespace(ns), client.UnsafeDisableDeepCopy); err != nil {
		return 0, 0, fmt.Errorf("listing active Pods in %s: %w", ns, err)
	}
	return len(list.Items), CountWork(list.Items), nil
}

// CountWork counts the Pods that are not controlled by a ReplicaSet or a StatefulSet.
func CountWork(pods []metav1.PartialObjectMetadata) int {
	n := 0
	for i := range pods {
		if !isWorkloadPod(pods[i].OwnerReferences) {
			n++
		}
	}
	return n
}

// isWorkloadPod reports whether a Pod's controller is a ReplicaSet (of a Deployment) or a StatefulSet:
// the Pods a sleep stops. In a class with lifetime.sleepAfter they are not activity (a running app
// would otherwise never sleep); Pods of Jobs (and CronJobs), bare Pods and others are.
func isWorkloadPod(refs []metav1.OwnerReference) bool {
	for _, r := range refs {
		if r.Controller != nil && *r.Controller && (r.Kind == "ReplicaSet" || r.Kind == "StatefulSet") && strings.HasPrefix(r.APIVersion, "apps/") {
			return true
		}
	}
	return false
}

// workloadController is the only owner reference the cache keeps, for a Pod that isWorkloadPod: shared,
// so that it costs one slice header per Pod.
var workloadController = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Controller: ptr.To(true)}}

// stripToActivity is stripToIdentity, keeping besides whether the Pod is a workload's (isWorkloadPod),
// as one shared owner reference: nothing else of its owners.
func stripToActivity(obj any) (any, error) {
	m, ok := obj.(*metav1.PartialObjectMetadata)
	if !ok {
		return obj, nil
	}
	workload := isWorkloadPod(m.OwnerReferences)
	out, err := stripToIdentity(obj)
	if err != nil || !workload {
		return out, err
	}
	out.(*metav1.PartialObjectMetadata).OwnerReferences = workloadController
	return out, nil
}

// Source is the watch that enqueues, when a Pod starts counting or stops counting as active (created,
// or deleted or ended), what toClaims maps its namespace to. Updates of an active Pod change nothing.
func (p *ActivePods) Source(toClaims func(ctx context.Context, namespace string) []reconcile.Request) source.Source {
	startsOrEnds := predicate.Funcs{
		UpdateFunc:  func(event.UpdateEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
	return source.Kind(p.cache, client.Object(newPodMetadata()), handler.EnqueueRequestsFromMapFunc(
		func(ctx context.Context, o client.Object) []reconcile.Request { return toClaims(ctx, o.GetNamespace()) }),
		predicate.Predicate(startsOrEnds))
}

func newPodMetadata() *metav1.PartialObjectMetadata {
	p := &metav1.PartialObjectMetadata{}
	p.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Pod"))
	return p
}
