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

// Package memory is what the claim reconciler remembers from one reconcile to the next (Memory).
package memory

import (
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
	"github.com/nsclaim/nsclaim-operator/internal/selftest"
)

// Memory is everything the claim reconciler remembers from one reconcile to the next: the hidden
// inputs of a reconcile besides the claim, its class and what the API server and the caches hold.
// It lives in this process only: a restart, or another replica taking the lead, starts with none,
// and every entry is such that starting without it costs a request or a write, never a wrong
// decision. Each entry is kept per claim and forgotten when the claim is deleted (Forget), or
// earlier as its field says. (The quiet window, the other input a reader does not see in the claim,
// is no memory: claimstatus.QuietUntil derives it from the claim's status and its namespace's creation.)
type Memory struct {
	// written is, per claim key, the status this process last wrote (writtenStatus). Why: a reconcile
	// whose cached copy lags that write would otherwise re-issue credentials, re-run the self-test and
	// emit transitions again (Overlay). Forgotten as soon as the cache holds the write (the cached
	// claim's resourceVersion is the write's), when the key names another claim (another UID), or when
	// the claim is gone; a reconcile that writes nothing stores none, so a settled claim costs no copy
	// of its status (10,000 of them were ~8 MB of live heap; docs/benchmarks-history.md, issue 30).
	written sync.Map
	// given is, per claim UID, the namespace this process gave a claim of a class with a pool (made
	// for it, or handed out of the pool). Why: until the claim's status records it, a reconcile whose
	// cache lags that write must not give the claim a second namespace. Forgotten once the status
	// records a namespace (reconcileClass) or the claim is deleted; without it (after a restart)
	// givenNamespace finds the namespace by its labels and ownership record instead.
	given sync.Map
	// provisioned holds the UIDs of claims whose first Ready this process observed. Why: a reconcile of a
	// stale cached copy (the status write has not reached the cache yet) must not observe it again in
	// the provisioning metric. Forgotten when the claim is deleted.
	provisioned sync.Map
	// credentialsChecked is, per claim UID, when its credentials Secret was last checked. Why: the
	// periodic check (CredentialsCheckInterval) of a Secret no watch reports. A claim not in it (after a
	// restart) counts as checked at a random moment of the last interval, so a restart issues no burst
	// of probes. Forgotten when the claim is deleted.
	credentialsChecked sync.Map
	// selfTestFailures is, per claim UID, its run of failed self-tests (selftest.Backoff). Why: the
	// retry backoff of a self-test that needs a person to change RBAC. Forgotten when a self-test passes
	// or the claim is deleted; a restart retries at once.
	selfTestFailures sync.Map
	// inFlight counts the reconciles running now. Why: the warm pool's refill waits while the claims
	// have work (Busy). Each reconcile takes itself off when it ends.
	inFlight atomic.Int64
}

// writtenStatus is the status this process last wrote for a claim, the claim's UID and the
// resourceVersion that write returned.
type writtenStatus struct {
	uid             types.UID
	resourceVersion string
	status          *tenancyv1alpha1.NamespaceClaimStatus
}

// Overlay replaces the status of a cached claim with the one this process last wrote for it, when the
// cache has not caught up with that write yet (same claim UID, different status), and forgets the
// write once the cache holds it or key names another claim.
func (m *Memory) Overlay(key types.NamespacedName, claim *tenancyv1alpha1.NamespaceClaim) {
	v, ok := m.written.Load(key)
	if !ok {
		return
	}
	w := v.(writtenStatus)
	if w.uid != claim.UID || (w.resourceVersion != "" && w.resourceVersion == claim.ResourceVersion) {
		m.written.CompareAndDelete(key, v)
		return
	}
	if !equality.Semantic.DeepEqual(&claim.Status, w.status) {
		claim.Status = *w.status.DeepCopy()
	}
}

// Wrote remembers the status of claim as the API server just took it (claim carries the
// resourceVersion the write returned).
func (m *Memory) Wrote(key types.NamespacedName, claim *tenancyv1alpha1.NamespaceClaim) {
	m.written.Store(key, writtenStatus{uid: claim.UID, resourceVersion: claim.ResourceVersion, status: claim.Status.DeepCopy()})
}

// Gone forgets the status written for the claim of key, which no longer exists.
func (m *Memory) Gone(key types.NamespacedName) { m.written.Delete(key) }

// Forget drops everything remembered of the claim with UID uid, which is being deleted.
func (m *Memory) Forget(uid types.UID) {
	m.credentialsChecked.Delete(uid)
	m.provisioned.Delete(uid)
	m.selfTestFailures.Delete(uid)
	m.given.Delete(uid)
}

// Give remembers that this process gave the claim with UID uid namespace name.
func (m *Memory) Give(uid types.UID, name string) { m.given.Store(uid, name) }

// GivenTo returns the namespace this process gave the claim with UID uid, if it remembers one.
func (m *Memory) GivenTo(uid types.UID) (string, bool) {
	v, ok := m.given.Load(uid)
	if !ok {
		return "", false
	}
	return v.(string), true
}

// Recorded forgets the namespace given to the claim with UID uid: its status records it now.
func (m *Memory) Recorded(uid types.UID) { m.given.Delete(uid) }

// FirstReady reports whether this is the first Ready of the claim with UID uid this process observes.
func (m *Memory) FirstReady(uid types.UID) bool {
	_, seen := m.provisioned.LoadOrStore(uid, struct{}{})
	return !seen
}

// Enter counts a reconcile in; the function it returns counts it out.
func (m *Memory) Enter() func() {
	m.inFlight.Add(1)
	return func() { m.inFlight.Add(-1) }
}

// Busy reports whether reconciles are running now.
func (m *Memory) Busy() bool { return m.inFlight.Load() > 0 }

// CheckedAt returns when the credentials Secret of the claim with UID uid was last checked, if this
// process remembers it.
func (m *Memory) CheckedAt(uid types.UID) (time.Time, bool) {
	v, ok := m.credentialsChecked.Load(uid)
	at, _ := v.(time.Time)
	return at, ok
}

// Checked remembers that the credentials Secret of the claim with UID uid was checked at.
func (m *Memory) Checked(uid types.UID, at time.Time) { m.credentialsChecked.Store(uid, at) }

// SelfTestBackoff returns the run of failed self-tests of the claim with UID uid, if there is one.
func (m *Memory) SelfTestBackoff(uid types.UID) (selftest.Backoff, bool) {
	v, ok := m.selfTestFailures.Load(uid)
	b, _ := v.(selftest.Backoff)
	return b, ok
}

// SelfTestFailed remembers the run of failed self-tests of the claim with UID uid.
func (m *Memory) SelfTestFailed(uid types.UID, b selftest.Backoff) { m.selfTestFailures.Store(uid, b) }

// SelfTestPassed forgets the run of failed self-tests of the claim with UID uid: its self-test passed.
func (m *Memory) SelfTestPassed(uid types.UID) { m.selfTestFailures.Delete(uid) }
