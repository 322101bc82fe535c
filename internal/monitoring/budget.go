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

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
)

// Label names and values of the budget metrics.
const (
	BudgetLabel     = "budget"
	OutcomeLabel    = "outcome"
	OutcomeQueued   = "queued"
	OutcomeRejected = "rejected"
	OutcomeEvicting = "evicting"
)

// BudgetAdmitted counts a claim budget admitted.
func BudgetAdmitted(budget string) { budgetAdmissions.WithLabelValues(budget).Inc() }

// BudgetEvicted counts an idle claim budget deleted to make room.
func BudgetEvicted(budget string) { budgetEvictions.WithLabelValues(budget).Inc() }

// BudgetExhausted counts a claim that did not fit budget, by outcome (OutcomeQueued, OutcomeRejected,
// OutcomeEvicting).
func BudgetExhausted(budget, outcome string) {
	budgetExhaustions.WithLabelValues(budget, outcome).Inc()
}

// budgetCollector reports BudgetQueuedName and BudgetOldestWaitName from the budgets' status when scraped.
type budgetCollector struct {
	reader client.Reader
	queued *prometheus.Desc
	oldest *prometheus.Desc
	now    func() time.Time
}

// NewBudgetCollector returns a collector of BudgetQueuedName and BudgetOldestWaitName that lists
// NamespaceBudgets from r (the manager's cache) at every scrape: a deleted budget leaves no series.
func NewBudgetCollector(r client.Reader) prometheus.Collector {
	q, o := lookup(BudgetQueuedName), lookup(BudgetOldestWaitName)
	return &budgetCollector{reader: r, queued: prometheus.NewDesc(q.Name, q.Help, q.Labels, nil),
		oldest: prometheus.NewDesc(o.Name, o.Help, o.Labels, nil), now: time.Now}
}

// Describe implements prometheus.Collector.
func (c *budgetCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.queued
	ch <- c.oldest
}

// Collect implements prometheus.Collector.
func (c *budgetCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), collectTimeout)
	defer cancel()
	var budgets tenancyv1alpha1.NamespaceBudgetList
	if err := c.reader.List(ctx, &budgets, client.UnsafeDisableDeepCopy); err != nil {
		logf.Log.WithName("monitoring").Error(err, "Listing NamespaceBudgets for metrics")
		return
	}
	for i := range budgets.Items {
		b := &budgets.Items[i]
		ch <- prometheus.MustNewConstMetric(c.queued, prometheus.GaugeValue, float64(b.Status.Queued), b.Name)
		if since := b.Status.OldestQueuedSince; since != nil && b.Status.Queued > 0 {
			ch <- prometheus.MustNewConstMetric(c.oldest, prometheus.GaugeValue, c.now().Sub(since.Time).Seconds(), b.Name)
		}
	}
}
