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

package namespaceclaim

import (
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// reconciles records, per controller and object, the highest resourceVersion a reconcile acted on, from
// the reconcilers' "Reconciled" debug log line. A test that asserts nothing is written after a change
// first waits until a reconcile saw the change (waitReconciled); otherwise a quiet check would pass
// when the change never caused a reconcile at all.
var reconciles = &reconcileLog{seen: map[string]int64{}}

type reconcileLog struct {
	mu   sync.Mutex
	seen map[string]int64
}

func reconcileKey(controller, namespace, name string) string {
	return controller + "/" + namespace + "/" + name
}

func (l *reconcileLog) record(controller, namespace, name, rv string) {
	v, err := strconv.ParseInt(rv, 10, 64)
	if err != nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	k := reconcileKey(controller, namespace, name)
	if v > l.seen[k] {
		l.seen[k] = v
	}
}

func (l *reconcileLog) observed(controller, namespace, name string) int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.seen[reconcileKey(controller, namespace, name)]
}

// waitReconciled waits until the named controller finished a reconcile of obj at obj's resourceVersion
// or a later one.
func waitReconciled(t *testing.T, controller string, obj client.Object) {
	t.Helper()
	want, err := strconv.ParseInt(obj.GetResourceVersion(), 10, 64)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	NewWithT(t).Eventually(func() int64 {
		return reconciles.observed(controller, obj.GetNamespace(), obj.GetName())
	}).WithTimeout(30*time.Second).WithPolling(20*time.Millisecond).Should(BeNumerically(">=", want),
		"a %s reconcile of %s/%s at resourceVersion %s or later", controller, obj.GetNamespace(), obj.GetName(), obj.GetResourceVersion())
}

// observeReconciles returns a logger that logs what inner enables and records every "Reconciled" line
// (whatever inner's level) in reconciles.
func observeReconciles(inner logr.Logger) logr.Logger {
	return logr.New(&observingSink{inner: inner.GetSink()})
}

type observingSink struct {
	inner logr.LogSink
	kv    []any
}

func (s *observingSink) Init(info logr.RuntimeInfo) { s.inner.Init(info) }
func (s *observingSink) Enabled(int) bool           { return true }

func (s *observingSink) Info(level int, msg string, kv ...any) {
	if msg == "Reconciled" {
		fields := map[string]string{}
		for _, list := range [][]any{s.kv, kv} {
			for i := 0; i+1 < len(list); i += 2 {
				if k, ok := list[i].(string); ok {
					if v, ok := list[i+1].(string); ok {
						fields[k] = v
					}
				}
			}
		}
		reconciles.record(fields["controller"], fields["namespace"], fields["name"], fields["observedResourceVersion"])
	}
	if s.inner.Enabled(level) {
		s.inner.Info(level, msg, kv...)
	}
}

func (s *observingSink) Error(err error, msg string, kv ...any) { s.inner.Error(err, msg, kv...) }

func (s *observingSink) WithValues(kv ...any) logr.LogSink {
	return &observingSink{inner: s.inner.WithValues(kv...), kv: append(append([]any{}, s.kv...), kv...)}
}

func (s *observingSink) WithName(name string) logr.LogSink {
	return &observingSink{inner: s.inner.WithName(name), kv: s.kv}
}

func TestObservingSinkRecordsReconciles(t *testing.T) {
	before := reconciles.observed("test-controller", "ns", "obj")
	log := observeReconciles(funcr.New(func(string, string) {}, funcr.Options{})).WithValues("controller", "test-controller").WithName("x").WithValues("namespace", "ns", "name", "obj")
	log.V(1).Info("Reconciled", "observedResourceVersion", "41")
	log.V(1).Info("Something else", "observedResourceVersion", "99")
	log.V(1).Info("Reconciled", "observedResourceVersion", "40")
	if got := reconciles.observed("test-controller", "ns", "obj"); got != 41 || before != 0 {
		t.Fatalf("observed %d (before %d), want 41 (before 0)", got, before)
	}
}
