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

package monitoring

import (
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
)

// Values of the state label of PoolNamespacesName.
const (
	PoolStateReady    = "ready"
	PoolStateCreating = "creating"
)

// PoolHit counts a claim of class handed a pooled namespace.
func PoolHit(class string) { poolHits.WithLabelValues(class).Inc() }

// PoolMiss counts a claim of class whose pool had no ready namespace.
func PoolMiss(class string) { poolMisses.WithLabelValues(class).Inc() }

// PoolCreated counts a namespace created for the pool of class.
func PoolCreated(class string) { poolCreated.WithLabelValues(class).Inc() }

// PoolCounts returns the hits and misses counted so far for class, for tests and benchmarks that
// compare before and after.
func PoolCounts(class string) (hits, misses float64) {
	read := func(c prometheus.Counter) float64 {
		m := &dto.Metric{}
		if err := c.Write(m); err != nil {
			return 0
		}
		return m.GetCounter().GetValue()
	}
	return read(poolHits.WithLabelValues(class)), read(poolMisses.WithLabelValues(class))
}

// NewPoolCollector returns a collector of PoolNamespacesName from the NamespaceClasses' status.pool in
// r (the manager's cache) at every scrape: a class without a pool, or deleted, leaves no series behind.
func NewPoolCollector(r client.Reader) prometheus.Collector {
	return newListCollector(r, "NamespaceClasses", func(classes *tenancyv1alpha1.NamespaceClassList, d []*prometheus.Desc, ch chan<- prometheus.Metric) {
		for i := range classes.Items {
			cl := &classes.Items[i]
			if cl.Status.Pool == nil {
				continue
			}
			gauge(ch, d[0], float64(cl.Status.Pool.Ready), cl.Name, PoolStateReady)
			gauge(ch, d[0], float64(cl.Status.Pool.Creating), cl.Name, PoolStateCreating)
		}
	}, PoolNamespacesName)
}
