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

package invariants

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nsclaim/nsclaim-operator/internal/ownership"
)

// Suite checks, for a suite whose scenarios run in parallel, the invariants that hold whatever happens
// (Options{}; not the settled ones): after each scenario and once every scenario has ended. A scenario
// may break one on purpose, as an attacker would, and the operator must restore it within Settle.
type Suite struct {
	// Client is an uncached client allowed to list what Check lists.
	Client client.Client
	// Settle is how long an invariant may stay broken; Poll how often it is checked again meanwhile.
	Settle, Poll time.Duration
	// Key is Options.Key.
	Key *ownership.Key
}

// broken returns the invariants still broken after Settle; nil as soon as they all hold.
func (s Suite) broken(ctx context.Context) ([]string, error) {
	return CheckWithin(ctx, s.Client, Options{Key: s.Key}, s.Settle, s.Poll)
}

// AfterScenario fails t when, after its scenario, the cluster breaks nsclaim's invariants for longer
// than Settle, or they cannot be checked.
func (s Suite) AfterScenario(ctx context.Context, t testing.TB) {
	t.Helper()
	broken, err := s.broken(ctx)
	if err != nil {
		t.Errorf("checking invariants: %v", err)
		return
	}
	if len(broken) > 0 {
		t.Errorf("invariants broken for %s after the scenario:\n%s", s.Settle, strings.Join(broken, "\n"))
	}
}

// AtEnd is TestMain's check once every scenario has ended: an error lists what is still broken after
// Settle.
func (s Suite) AtEnd(ctx context.Context) error {
	broken, err := s.broken(ctx)
	if err != nil {
		return err
	}
	if len(broken) > 0 {
		return fmt.Errorf("invariants broken after the suite:\n%s", strings.Join(broken, "\n"))
	}
	return nil
}
