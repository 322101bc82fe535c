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

package main

import (
	"strconv"
	"testing"
	"time"
)

func TestQueueStatsBetween(t *testing.T) {
	scrape := func(success, requeueAfter, work, works, wait, waits float64) []sample {
		return parseMetrics(`controller_runtime_reconcile_total{controller="namespaceclaim",result="success"} ` + f(success) + `
controller_runtime_reconcile_total{controller="namespaceclaim",result="requeue_after"} ` + f(requeueAfter) + `
controller_runtime_reconcile_total{controller="namespacepool",result="success"} 99
controller_runtime_reconcile_time_seconds_sum{controller="namespaceclaim"} ` + f(work) + `
controller_runtime_reconcile_time_seconds_count{controller="namespaceclaim"} ` + f(works) + `
controller_runtime_max_concurrent_reconciles{controller="namespaceclaim"} 32
workqueue_queue_duration_seconds_sum{name="namespaceclaim"} ` + f(wait) + `
workqueue_queue_duration_seconds_count{name="namespaceclaim"} ` + f(waits) + `
`)
	}
	q := queueStatsBetween(scrape(10, 0, 1, 10, 2, 10), scrape(210, 100, 31, 310, 92, 310))
	got := q.String(100, 10*time.Second)
	want := "claim controller: 3.00 reconciles/claim (requeue_after 1.00, success 2.00), 100.0 ms work per reconcile, 32 workers busy 9% of the span, 300.0 ms mean queue wait"
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	hub := controllerStatsBetween("fleet", parseMetrics(`controller_runtime_reconcile_total{controller="fleet",result="success"} 0
controller_runtime_reconcile_time_seconds_count{controller="fleet"} 0
`), parseMetrics(`controller_runtime_reconcile_total{controller="fleet",result="success"} 50
controller_runtime_reconcile_time_seconds_sum{controller="fleet"} 5
controller_runtime_reconcile_time_seconds_count{controller="fleet"} 50
controller_runtime_max_concurrent_reconciles{controller="fleet"} 10
`))
	if got, want := hub.String(50, 10*time.Second), "fleet controller: 1.00 reconciles/claim (success 1.00), 100.0 ms work per reconcile, 10 workers busy 5% of the span, 0.0 ms mean queue wait"; got != want {
		t.Errorf("the hub's controller:\ngot  %s\nwant %s", got, want)
	}
	if got := (queueStats{}).String(100, time.Second); got != "no reconcile metrics" {
		t.Errorf("without metrics: %s", got)
	}
}

func f(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
