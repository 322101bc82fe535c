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
	"testing"
	"time"

	"github.com/nsclaim/nsclaim-operator/test/invariants"
)

// suiteInvariants checks the cluster-wide invariants of test/invariants after every scenario and after
// the suite: one may stay broken for 60 s (an attack may break one on purpose: a claim deleted without
// its finalizer leaves an orphaned namespace, and the operator must restore it).
func suiteInvariants() invariants.Suite {
	return invariants.Suite{Client: admin, Settle: 60 * time.Second, Poll: time.Second}
}

// checkInvariants fails the scenario when, after it, the cluster breaks nsclaim's invariants for longer
// than the settle time. Every identity a scenario logs in as registers it (loginAs), so it runs after
// every scenario.
func checkInvariants(t testing.TB) {
	t.Helper()
	suiteInvariants().AfterScenario(ctx, t)
}

// finalInvariants is TestMain's check once every scenario has ended.
func finalInvariants() error {
	return suiteInvariants().AtEnd(ctx)
}
