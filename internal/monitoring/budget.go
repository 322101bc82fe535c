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
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/client"

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

// NewBudgetCollector returns a collector of BudgetQueuedName and BudgetOldestWaitName from the
// NamespaceBudgets' status in r (the manager's cache) at every scrape: a deleted budget leaves no series.
func NewBudgetCollector(r client.Reader) prometheus.Collector { return newBudgetCollector(r, time.Now) }

func newBudgetCollector(r client.Reader, now func() time.Time) prometheus.Collector {
	return newListCollector(r, "NamespaceBudgets", func(budgets *tenancyv1alpha1.NamespaceBudgetList, d []*prometheus.Desc, ch chan<- prometheus.Metric) {
		for i := range budgets.Items {
			b := &budgets.Items[i]
			gauge(ch, d[0], float64(b.Status.Queued), b.Name)
			if since := b.Status.OldestQueuedSince; since != nil && b.Status.Queued > 0 {
				gauge(ch, d[1], now().Sub(since.Time).Seconds(), b.Name)
			}
		}
	}, BudgetQueuedName, BudgetOldestWaitName)
}
