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
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
)

// LiveNamespaces follows, through a watch, the namespaces made for the claims of one requester
// namespace, and remembers the most that existed at once (created and not being deleted). The claim
// limit's race tests read it: the limit holds only if Peak never exceeds it.
type LiveNamespaces struct {
	mu    sync.Mutex
	peak  int
	first chan struct{}
}

// WatchLiveNamespaces starts following the namespaces of requesterNamespace's claims until ctx ends.
func WatchLiveNamespaces(ctx context.Context, cs kubernetes.Interface, requesterNamespace string) (*LiveNamespaces, error) {
	w, err := cs.CoreV1().Namespaces().Watch(ctx, metav1.ListOptions{
		LabelSelector: tenancyv1alpha1.ClaimNamespaceLabel + "=" + requesterNamespace,
	})
	if err != nil {
		return nil, err
	}
	l := &LiveNamespaces{first: make(chan struct{})}
	go l.follow(w)
	return l, nil
}

func (l *LiveNamespaces) follow(w watch.Interface) {
	defer w.Stop()
	live := map[string]bool{}
	var once sync.Once
	for ev := range w.ResultChan() {
		ns, ok := ev.Object.(*corev1.Namespace)
		if !ok {
			continue
		}
		live[ns.Name] = ev.Type != watch.Deleted && ns.DeletionTimestamp.IsZero()
		n := 0
		for _, alive := range live {
			if alive {
				n++
			}
		}
		l.mu.Lock()
		l.peak = max(l.peak, n)
		l.mu.Unlock()
		once.Do(func() { close(l.first) })
	}
}

// Peak is the most namespaces that existed at once so far.
func (l *LiveNamespaces) Peak() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.peak
}

// First is closed when the first namespace has been seen.
func (l *LiveNamespaces) First() <-chan struct{} { return l.first }
