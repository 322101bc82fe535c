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

package olmcondition

import (
	"context"
	"errors"
	"fmt"

	ctrl "sigs.k8s.io/controller-runtime"
)

// StartupTask is one step of the leader's startup pass, such as a migration of existing objects.
type StartupTask struct {
	// Name names the task in the Upgradeable message and in errors.
	Name string
	// Run does the work; it must be safe to run again after an interruption.
	Run func(ctx context.Context) error
}

// CacheSyncer is the part of the manager's cache the gate waits for.
type CacheSyncer interface {
	WaitForCacheSync(ctx context.Context) bool
}

// StartupGate is a manager Runnable that runs on the leader only. It sets Upgradeable=False
// (StartupPassReason) as soon as the replica becomes leader, waits for the cache to sync, runs Tasks
// in order and then sets Upgradeable=True (ReadyReason). OLM therefore does not replace the operator
// while a new leader has not yet seen the cluster or is migrating state. If a task fails, Upgradeable
// stays False (StartupFailedReason, naming the task) and Start returns the error, which stops the
// manager so that the next start retries the pass.
type StartupGate struct {
	Reporter *Reporter
	Cache    CacheSyncer
	Tasks    []StartupTask
}

// NeedLeaderElection implements manager.LeaderElectionRunnable: the pass runs on the leader.
func (g *StartupGate) NeedLeaderElection() bool { return true }

// Start implements manager.Runnable. It returns nil after the pass, or when ctx ends first.
func (g *StartupGate) Start(ctx context.Context) error {
	log := ctrl.LoggerFrom(ctx).WithName("startup-gate")
	if err := g.Reporter.SetUpgradeable(ctx, false, StartupPassReason, "The leader is syncing its caches and running its startup tasks"); err != nil {
		return err
	}
	if !g.Cache.WaitForCacheSync(ctx) {
		return ctx.Err()
	}
	for _, t := range g.Tasks {
		msg := fmt.Sprintf("Running startup task %s", t.Name)
		if err := g.Reporter.SetUpgradeable(ctx, false, StartupPassReason, msg); err != nil {
			return err
		}
		log.Info("Running startup task", "task", t.Name)
		if err := t.Run(ctx); err != nil {
			if errors.Is(ctx.Err(), context.Canceled) {
				return nil
			}
			msg := fmt.Sprintf("Startup task %s failed; the operator retries it when it restarts", t.Name)
			if serr := g.Reporter.SetUpgradeable(ctx, false, StartupFailedReason, msg); serr != nil {
				log.Error(serr, "Setting Upgradeable=False")
			}
			return fmt.Errorf("startup task %s: %w", t.Name, err)
		}
	}
	return g.Reporter.SetUpgradeable(ctx, true, ReadyReason, "No startup task is running")
}
