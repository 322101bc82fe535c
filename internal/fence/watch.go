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

package fence

import (
	"context"
	"fmt"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
)

// Watching the fence: list and watch of each of the four objects by name (a list or watch whose field
// selector is metadata.name=<name> is authorized against resourceNames), so a fence applied, altered or
// repaired is checked within moments instead of at the next periodic check.
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=validatingadmissionpolicies;validatingadmissionpolicybindings,verbs=list;watch,resourceNames=nsclaim-operator-fence;nsclaim-operator-label-guard

// settle is how long the checker waits after a change of a fence object before it checks: applying the
// fence writes several objects one after the other, and one check after the last write reports the
// outcome instead of a series of half-applied states.
const settle = 500 * time.Millisecond

// WithWatch makes the runnable also check whenever one of the fence's objects is created, changed or
// deleted, seen through watches made with cfg (one per object, selected by name). The periodic check
// stays as a backstop for a watch that is broken (for example by missing RBAC).
func WithWatch(cfg *rest.Config) Option {
	return func(c *checker) { c.watchConfig = cfg }
}

// Option configures the runnable of NewRunnable.
type Option func(*checker)

// watchFence starts an informer per fence object on ctx and returns a channel that receives a value
// (coalesced: capacity one) after each add, update or delete any of them sees, including each
// object's initial listing.
func watchFence(ctx context.Context, cfg *rest.Config, want Expected) (<-chan struct{}, error) {
	cs, err := kubernetes.NewForConfig(rest.CopyConfig(cfg))
	if err != nil {
		return nil, fmt.Errorf("client for watching the fence: %w", err)
	}
	changes := make(chan struct{}, 1)
	poke := func() {
		select {
		case changes <- struct{}{}:
		default:
		}
	}
	handler := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { poke() },
		UpdateFunc: func(any, any) { poke() },
		DeleteFunc: func(any) { poke() },
	}
	policies := cs.AdmissionregistrationV1().ValidatingAdmissionPolicies()
	bindings := cs.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings()
	var informers []cache.SharedIndexInformer
	for _, p := range want.pairs() {
		informers = append(informers,
			byName(p.policy.Name, &admissionregistrationv1.ValidatingAdmissionPolicy{},
				func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) { return policies.List(ctx, o) },
				func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
					return policies.Watch(ctx, o)
				}),
			byName(p.binding.Name, &admissionregistrationv1.ValidatingAdmissionPolicyBinding{},
				func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) { return bindings.List(ctx, o) },
				func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
					return bindings.Watch(ctx, o)
				}),
		)
	}
	for _, inf := range informers {
		if _, err := inf.AddEventHandler(handler); err != nil {
			return nil, fmt.Errorf("watching the fence: %w", err)
		}
		go inf.RunWithContext(ctx)
	}
	return changes, nil
}

// byName is an informer on the one object of a cluster-scoped resource called name.
func byName(name string, obj runtime.Object,
	list func(context.Context, metav1.ListOptions) (runtime.Object, error),
	watchFn func(context.Context, metav1.ListOptions) (watch.Interface, error),
) cache.SharedIndexInformer {
	selector := fields.OneTermEqualSelector("metadata.name", name).String()
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.FieldSelector = selector
			return list(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = selector
			return watchFn(ctx, o)
		},
	}
	return cache.NewSharedIndexInformer(lw, obj, 0, cache.Indexers{})
}
