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

package namespaceclass

import (
	"context"
	"sync"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/event"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
)

// PoolReports carries the pool reconciler's counts of a class's pooled namespaces to the class
// reconciler, the one writer of a NamespaceClass's status: the pool reconciler reports (Report), the
// class reconciler writes them to status.pool together with its conditions, in its one status patch.
// Both run in the leader's process; a report lives until the class is deleted or the process ends (a
// new leader's pool reconciler reports every pool again when it starts).
type PoolReports struct {
	mu      sync.Mutex
	byClass map[string]poolReport
	// events asks the class reconciler to write a class whose status.pool differs from its report.
	events chan event.GenericEvent
}

// poolReport is the last report of one class (by name), for the class of that UID.
type poolReport struct {
	uid  types.UID
	pool *tenancyv1alpha1.PoolStatus
}

// NewPoolReports returns an empty PoolReports; give the same one to the class and the pool reconcilers.
func NewPoolReports() *PoolReports {
	return &PoolReports{byClass: map[string]poolReport{}, events: make(chan event.GenericEvent, 64)}
}

// Report records the pool's counts for class (nil when the class has no pool and holds no pooled
// namespace) and, when they differ from class's status.pool as read, asks the class reconciler to write
// them. It waits until the request is taken or ctx ends.
func (p *PoolReports) Report(ctx context.Context, class *tenancyv1alpha1.NamespaceClass, pool *tenancyv1alpha1.PoolStatus) {
	p.mu.Lock()
	p.byClass[class.Name] = poolReport{uid: class.UID, pool: pool.DeepCopy()}
	p.mu.Unlock()
	if equality.Semantic.DeepEqual(class.Status.Pool, pool) {
		return
	}
	select {
	case p.events <- event.GenericEvent{Object: &tenancyv1alpha1.NamespaceClass{ObjectMeta: metav1.ObjectMeta{Name: class.Name}}}:
	case <-ctx.Done():
	}
}

// pool returns what was last reported for class; ok is false when nothing was (for this UID).
func (p *PoolReports) pool(class *tenancyv1alpha1.NamespaceClass) (pool *tenancyv1alpha1.PoolStatus, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	r, ok := p.byClass[class.Name]
	if !ok || r.uid != class.UID {
		return nil, false
	}
	return r.pool.DeepCopy(), true
}

// forget drops the report of the class named name (it is gone).
func (p *PoolReports) forget(name string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.byClass, name)
}
