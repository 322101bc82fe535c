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

package invariants

import (
	"context"
	"fmt"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
)

// BudgetWatch follows, through one watch, the namespaces made for the claims of some requester
// namespaces, Terminating ones included (a budget charges a namespace until it is gone), and records
// at every event the namespaces and the CPU (their classes' quota, by the class label) that exist at
// that instant: the most of each, and every instant that went over a limit. A budget holds only if no
// instant goes over.
type BudgetWatch struct {
	mu              sync.Mutex
	cpuOf           map[string]int64
	cpu             map[string]int64
	maxNS, maxCPU   int64
	peakNS, peakCPU int64
	// sinceNS and sinceCPU are the peaks since the last SincePeaks.
	sinceNS, sinceCPU int64
	over              []string
	events            int
}

// WatchBudget starts following the namespaces of requesters' claims until ctx ends; cpuOf is the CPU a
// namespace of each class holds, maxNamespaces and maxCPU the budget's limits. It lists them, then
// watches from the list's resourceVersion with a RetryWatcher (client-go tools/watch): the API server
// ends every watch after --min-request-timeout (30 to 60 min by default), and a test of 20 rounds
// outlives one, so the watch is resumed from the last resourceVersion seen, missing no event. A watch
// that cannot be resumed (its resourceVersion expired) or that ends before ctx is recorded as an
// instant over the budget (Over): what it did not see is not proven.
func WatchBudget(ctx context.Context, cs kubernetes.Interface, cpuOf map[string]int64, maxNamespaces, maxCPU int64, requesters ...string) (*BudgetWatch, error) {
	selector := fmt.Sprintf("%s in (%s)", tenancyv1alpha1.ClaimNamespaceLabel, strings.Join(requesters, ","))
	list, err := cs.CoreV1().Namespaces().List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return nil, err
	}
	bw := &BudgetWatch{cpuOf: cpuOf, cpu: map[string]int64{}, maxNS: maxNamespaces, maxCPU: maxCPU}
	for i := range list.Items {
		bw.record(watch.Added, &list.Items[i])
	}
	w, err := watchtools.NewRetryWatcherWithContext(ctx, list.ResourceVersion, &cache.ListWatch{
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.LabelSelector = selector
			return cs.CoreV1().Namespaces().Watch(ctx, o)
		}})
	if err != nil {
		return nil, err
	}
	go bw.follow(ctx, w)
	return bw, nil
}

func (bw *BudgetWatch) follow(ctx context.Context, w watch.Interface) {
	defer w.Stop()
	for ev := range w.ResultChan() {
		if ev.Type == watch.Error {
			bw.broken(fmt.Sprintf("the watch of the namespaces failed: %v", apierrors.FromObject(ev.Object)))
			return
		}
		if ns, ok := ev.Object.(*corev1.Namespace); ok && ev.Type != watch.Bookmark {
			bw.record(ev.Type, ns)
		}
	}
	if ctx.Err() == nil {
		bw.broken("the watch of the namespaces ended before the test")
	}
}

// broken records that the watch stopped seeing events: the instants after it are not proven.
func (bw *BudgetWatch) broken(why string) {
	bw.mu.Lock()
	defer bw.mu.Unlock()
	bw.over = append(bw.over, why+": the instants after it were not seen")
}

func (bw *BudgetWatch) record(t watch.EventType, ns *corev1.Namespace) {
	bw.mu.Lock()
	defer bw.mu.Unlock()
	bw.events++
	if t == watch.Deleted {
		delete(bw.cpu, ns.Name)
	} else {
		bw.cpu[ns.Name] = bw.cpuOf[ns.Labels[tenancyv1alpha1.ClassLabel]]
	}
	var sum int64
	for _, c := range bw.cpu {
		sum += c
	}
	n := int64(len(bw.cpu))
	bw.peakNS, bw.peakCPU = max(bw.peakNS, n), max(bw.peakCPU, sum)
	bw.sinceNS, bw.sinceCPU = max(bw.sinceNS, n), max(bw.sinceCPU, sum)
	if n > bw.maxNS || sum > bw.maxCPU {
		bw.over = append(bw.over, fmt.Sprintf("event %d (%s %s): %d namespaces, %d CPU exist", bw.events, t, ns.Name, n, sum))
	}
}

// Peaks are the most namespaces and the most CPU that existed at once so far.
func (bw *BudgetWatch) Peaks() (namespaces, cpu int64) {
	bw.mu.Lock()
	defer bw.mu.Unlock()
	return bw.peakNS, bw.peakCPU
}

// SincePeaks are the most namespaces and CPU that existed at once since the last call (a round's).
func (bw *BudgetWatch) SincePeaks() (namespaces, cpu int64) {
	bw.mu.Lock()
	defer bw.mu.Unlock()
	namespaces, cpu = bw.sinceNS, bw.sinceCPU
	var sum int64
	for _, c := range bw.cpu {
		sum += c
	}
	bw.sinceNS, bw.sinceCPU = int64(len(bw.cpu)), sum
	return namespaces, cpu
}

// Over lists every instant so far at which more than the limits existed (none if the budget held).
func (bw *BudgetWatch) Over() []string {
	bw.mu.Lock()
	defer bw.mu.Unlock()
	return append([]string(nil), bw.over...)
}

// Events is how many namespace events the watch has recorded: a watch that saw nothing proves nothing.
func (bw *BudgetWatch) Events() int {
	bw.mu.Lock()
	defer bw.mu.Unlock()
	return bw.events
}

// Existing is how many namespaces exist now (Terminating ones included), as the watch last saw them.
func (bw *BudgetWatch) Existing() int {
	bw.mu.Lock()
	defer bw.mu.Unlock()
	return len(bw.cpu)
}
