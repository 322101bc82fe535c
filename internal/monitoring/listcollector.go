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
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
)

// collectTimeout bounds a scrape's read of the cache; a cache that is not synced yet makes the list
// wait.
const collectTimeout = 5 * time.Second

// listPtr is a pointer to an object list type T.
type listPtr[T any] interface {
	*T
	client.ObjectList
}

// listCollector is the one shape of nsclaim's collectors: at every scrape it lists one kind from the
// reader (the manager's cache; read only, no deep copy of every object on every scrape) and reports
// what emit derives from the list, so a deleted object leaves no series behind. If the list fails, it
// logs the error and reports nothing, so that the rest of the scrape still succeeds.
type listCollector[T any, L listPtr[T]] struct {
	reader client.Reader
	// kind names the listed kind in the log.
	kind  string
	descs []*prometheus.Desc
	// emit sends the metrics of list on ch; descs are the collector's, in the order of names.
	emit func(list L, descs []*prometheus.Desc, ch chan<- prometheus.Metric)
}

// newListCollector returns the collector of the metrics names (each a definition of the metrics
// table) that emit derives from a list of kind read from r.
func newListCollector[T any, L listPtr[T]](r client.Reader, kind string, emit func(L, []*prometheus.Desc, chan<- prometheus.Metric), names ...string) *listCollector[T, L] {
	c := &listCollector[T, L]{reader: r, kind: kind, emit: emit}
	for _, n := range names {
		d := lookup(n)
		c.descs = append(c.descs, prometheus.NewDesc(d.Name, d.Help, d.Labels, nil))
	}
	return c
}

// Describe implements prometheus.Collector.
func (c *listCollector[T, L]) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.descs {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *listCollector[T, L]) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), collectTimeout)
	defer cancel()
	list := L(new(T))
	if err := c.reader.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
		logf.Log.WithName("monitoring").Error(err, "Listing "+c.kind+" for metrics")
		return
	}
	c.emit(list, c.descs, ch)
}

// gauge sends one gauge sample of d.
func gauge(ch chan<- prometheus.Metric, d *prometheus.Desc, v float64, labels ...string) {
	ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
}
