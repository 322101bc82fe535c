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
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nsclaim/nsclaim-operator/test/invariants"
)

// invariantsSettle is how long the cluster-wide invariants of test/invariants may stay broken after a
// scenario (one may break them on purpose, as an attacker would, and the operator must restore them).
const invariantsSettle = 30 * time.Second

// brokenInvariants returns the invariants that hold whatever happens (not the settled ones: other
// scenarios run in parallel) and still do not hold after invariantsSettle; nil as soon as all hold.
func brokenInvariants() ([]string, error) {
	return invariants.CheckWithin(context.Background(), k8s, invariants.Options{}, invariantsSettle, 200*time.Millisecond)
}

// checkInvariants fails the scenario when the cluster breaks nsclaim's invariants after it. Every
// claim a scenario makes registers it (newClaim), so it runs after every scenario that makes one.
func checkInvariants(t *testing.T) {
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
