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
	"fmt"
	"sort"
	"strings"
	"time"
)

// queueStats is where the claim controller's time went over a window, from the manager's
// controller-runtime metrics: its reconciles by result, the workers' time in Reconcile (work), and the
// time requests waited in the work queue before a worker took them (wait). Work that is a small part of
// workers x duration, with long waits, means the claims waited for something else than a worker: a
// requeue's delay, an event, the API server.
type queueStats struct {
	controller string
	reconciles map[string]float64
	work       float64
	works      float64
	wait       float64
	waits      float64
	// workers is the controller's MaxConcurrentReconciles.
	workers float64
}

// queueStatsBetween is the claim controller's queueStats between two scrapes of the manager's metrics.
func queueStatsBetween(before, after []sample) queueStats {
	return controllerStatsBetween(claimController, before, after)
}

// controllerStatsBetween is the queueStats of the controller named controller between two scrapes.
func controllerStatsBetween(controller string, before, after []sample) queueStats {
	q := queueStats{controller: controller, reconciles: map[string]float64{}}
	ctl := map[string]string{labelController: controller}
	queue := map[string]string{labelName: controller}
	d := func(name string, match map[string]string) float64 {
		return sum(after, name, match) - sum(before, name, match)
	}
	for _, res := range []string{"success", "error", "requeue", "requeue_after"} {
		if n := d("controller_runtime_reconcile_total", map[string]string{labelController: controller, "result": res}); n > 0 {
			q.reconciles[res] = n
		}
	}
	q.work, q.works = d("controller_runtime_reconcile_time_seconds_sum", ctl), d("controller_runtime_reconcile_time_seconds_count", ctl)
	q.workers = sum(after, "controller_runtime_max_concurrent_reconciles", ctl)
	q.wait, q.waits = d("workqueue_queue_duration_seconds_sum", queue), d("workqueue_queue_duration_seconds_count", queue)
	return q
}

// name is the controller's name in the report ("claim" for the claim controller).
func (q queueStats) name() string {
	if q.controller == claimController || q.controller == "" {
		return "claim"
	}
	return q.controller
}

// String is the one-line report: reconciles per claim by result, mean work per reconcile, the workers'
// busy share over dur, and the mean wait in the queue.
func (q queueStats) String(claims int, dur time.Duration) string {
	if q.works == 0 || claims == 0 {
		return "no reconcile metrics"
	}
	var total float64
	parts := make([]string, 0, len(q.reconciles))
	for res, n := range q.reconciles {
		total += n
		parts = append(parts, fmt.Sprintf("%s %.2f", res, n/float64(claims)))
	}
	sort.Strings(parts)
	busy := 0.0
	if q.workers > 0 && dur > 0 {
		busy = q.work / (q.workers * dur.Seconds())
	}
	wait := 0.0
	if q.waits > 0 {
		wait = q.wait / q.waits
	}
	return fmt.Sprintf("%s controller: %.2f reconciles/claim (%s), %.1f ms work per reconcile, %.0f workers busy %.0f%% of the span, %.1f ms mean queue wait",
		q.name(), total/float64(claims), strings.Join(parts, ", "), 1000*q.work/q.works, q.workers, 100*busy, 1000*wait)
}
