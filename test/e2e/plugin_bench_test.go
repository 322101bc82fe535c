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

package e2e

import (
	"sort"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
)

// BenchmarkPluginClaimToKubeconfig prints, for claims made one at a time on an idle cluster, the wall
// time of "kubectl-nsclaim claim -o kubeconfig" (process start to exit: create, watch until Ready, read
// the Secret) next to the claim's own created-to-Ready time (an admin's watch: the claim's ADDED event
// to its Ready=True event, on this machine's clock). Nothing is asserted on time. make bench-plugin runs
// it (hack/test-local.sh with E2E_BENCH).
func BenchmarkPluginClaimToKubeconfig(b *testing.B) {
	ns, pipelineKC := pluginPipeline(b, "bench")
	wc, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme})
	if err != nil {
		b.Fatal(err)
	}
	w, err := wc.Watch(ctx, &tenancyv1alpha1.NamespaceClaimList{}, client.InNamespace(ns))
	if err != nil {
		b.Fatal(err)
	}
	defer w.Stop()
	var mu sync.Mutex
	added, ready := map[string]time.Time{}, map[string]time.Time{}
	go func() {
		for ev := range w.ResultChan() {
			c, ok := ev.Object.(*tenancyv1alpha1.NamespaceClaim)
			if !ok {
				continue
			}
			now := time.Now()
			mu.Lock()
			if _, ok := added[c.Name]; !ok && ev.Type == watch.Added {
				added[c.Name] = now
			}
			if _, ok := ready[c.Name]; !ok && meta.IsStatusConditionTrue(c.Status.Conditions, tenancyv1alpha1.ReadyCondition) {
				ready[c.Name] = now
			}
			mu.Unlock()
		}
	}()
	var plugin, claim []time.Duration
	for i := 0; b.Loop(); i++ {
		name := "bench-" + time.Now().Format("150405") + "-" + string(rune('a'+i%26))
		start := time.Now()
		r := runPlugin(b, pipelineKC, nil, "claim", name, "--class", className, "-o", "kubeconfig")
		took := time.Since(start)
		if r.code != 0 {
			b.Fatalf("claim %s: %s", name, r)
		}
		plugin = append(plugin, took)
		b.StopTimer()
		deadline := time.Now().Add(10 * time.Second)
		for {
			mu.Lock()
			a, okA := added[name]
			rd, okR := ready[name]
			mu.Unlock()
			if okA && okR {
				claim = append(claim, rd.Sub(a))
				break
			}
			if time.Now().After(deadline) {
				b.Fatalf("the admin's watch did not see claim %s Ready", name)
			}
			time.Sleep(10 * time.Millisecond)
		}
		if r := runPlugin(b, pipelineKC, nil, "release", name, "--wait"); r.code != 0 {
			b.Fatalf("release %s: %s", name, r)
		}
		time.Sleep(time.Second) // an idle cluster between claims
		b.StartTimer()
	}
	median := func(d []time.Duration) time.Duration {
		s := append([]time.Duration(nil), d...)
		sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
		return s[len(s)/2]
	}
	b.ReportMetric(float64(median(plugin).Milliseconds()), "plugin-claim-to-kubeconfig-p50-ms")
	b.ReportMetric(float64(median(claim).Milliseconds()), "claim-created-to-ready-p50-ms")
	b.Logf("%d claims, one at a time: plugin claim -> kubeconfig %v; claim created -> Ready %v", len(plugin), plugin, claim)
}
