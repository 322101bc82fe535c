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

package namespaceclaim

import (
	"context"
	"testing"
	"time"

	"github.com/nsclaim/nsclaim-operator/test/invariants"
)

// suiteInvariants checks the cluster-wide invariants of test/invariants after every scenario and after
// the suite: one may stay broken for 30 s (a scenario may break one on purpose, as an attacker would,
// and the operator must restore it).
func suiteInvariants() invariants.Suite {
	return invariants.Suite{Client: k8s, Settle: 30 * time.Second, Poll: 200 * time.Millisecond, Key: ownershipKey}
}

// checkInvariants fails the scenario when the cluster breaks nsclaim's invariants after it. Every
// claim a scenario makes registers it (newClaim), so it runs after every scenario that makes one.
func checkInvariants(t *testing.T) {
	t.Helper()
	suiteInvariants().AfterScenario(context.Background(), t)
}

// finalInvariants is TestMain's check once every scenario has ended.
func finalInvariants() error {
	return suiteInvariants().AtEnd(context.Background())
}
