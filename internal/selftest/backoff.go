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

package selftest

import "time"

// The retry backoff of a self-test that failed. A failure waiting for new RoleBindings is retried at
// RetryDelay; one that needs a person to change RBAC (missing or excess permissions) backs off, doubling
// from RetryDelay up to MaxBackoff, so it is not retried every few seconds.
const (
	// RetryDelay retries a self-test that waits for new RoleBindings to reach the authorizer.
	RetryDelay = 2 * time.Second
	// MaxBackoff caps the backoff of a self-test that failed.
	MaxBackoff = 5 * time.Minute
)

// Backoff is a claim's run of failed self-tests: how many, and when the next retry is due.
type Backoff struct {
	Failures int
	Next     time.Time
}

// Delay is the wait before retrying a self-test that failed for the n-th time in a row (n >= 1):
// doubling from RetryDelay up to MaxBackoff.
func Delay(n int) time.Duration {
	d := RetryDelay
	for i := 1; i < n && d < MaxBackoff; i++ {
		d *= 2
	}
	return min(d, MaxBackoff)
}

// Failed records a self-test that failed at now in the run b, and returns the run and the wait before the
// next retry. A failure before the scheduled retry (a reconcile caused by some event) keeps the
// schedule, so the backoff grows with retries, not with events.
func (b Backoff) Failed(now time.Time) (Backoff, time.Duration) {
	if now.Before(b.Next) {
		return b, b.Next.Sub(now)
	}
	b.Failures++
	b.Next = now.Add(Delay(b.Failures))
	return b, b.Next.Sub(now)
}
