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
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nsclaim/nsclaim-operator/test/invariants"
)

// invariantsSettle is how long the cluster-wide invariants may stay broken after a scenario: an attack
// may break one on purpose (a claim deleted without its finalizer leaves an orphaned namespace) and the
// operator must restore it within this time.
const invariantsSettle = 60 * time.Second

// brokenInvariants returns the invariants of test/invariants that still do not hold after
// invariantsSettle (the checks that hold whatever happens, not those that need every claim settled:
// other scenarios run in parallel). It returns nil as soon as they all hold.
func brokenInvariants() ([]string, error) {
	return invariants.CheckWithin(ctx, admin, invariants.Options{}, invariantsSettle, time.Second)
}

// checkInvariants fails the scenario when, after it, the cluster breaks nsclaim's invariants for longer
// than invariantsSettle. Every identity a scenario logs in as registers it (loginAs), so it runs after
// every scenario.
func checkInvariants(t testing.TB) {
	t.Helper()
	broken, err := brokenInvariants()
	if err != nil {
		t.Errorf("checking invariants: %v", err)
		return
	}
	if len(broken) > 0 {
		t.Errorf("invariants broken for %s after the scenario:\n%s", invariantsSettle, strings.Join(broken, "\n"))
	}
}

// finalInvariants is TestMain's check once every scenario has ended.
func finalInvariants() error {
	broken, err := brokenInvariants()
	if err != nil {
		return err
	}
	if len(broken) > 0 {
		return fmt.Errorf("invariants broken after the suite:\n%s", strings.Join(broken, "\n"))
	}
	return nil
}
