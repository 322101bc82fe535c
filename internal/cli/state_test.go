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

package cli

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
)

type claimOpt func(*tenancyv1alpha1.NamespaceClaim)

func newClaim(opts ...claimOpt) *tenancyv1alpha1.NamespaceClaim {
	c := &tenancyv1alpha1.NamespaceClaim{ObjectMeta: metav1.ObjectMeta{Name: "pr-1", Namespace: "ci", Generation: 1}}
	for _, o := range opts {
		o(c)
	}
	return c
}

func withReady(status metav1.ConditionStatus, reason string, gen int64) claimOpt {
	return func(c *tenancyv1alpha1.NamespaceClaim) {
		c.Status.Conditions = append(c.Status.Conditions, metav1.Condition{Type: tenancyv1alpha1.ReadyCondition, Status: status, Reason: reason, Message: "m", ObservedGeneration: gen})
	}
}

// provisioned sets status.namespace, as the operator does once it made the namespace.
func provisioned() claimOpt {
	return func(c *tenancyv1alpha1.NamespaceClaim) { c.Status.Namespace = "ci-pr-1" }
}

func expired() claimOpt {
	return func(c *tenancyv1alpha1.NamespaceClaim) {
		c.Status.Conditions = append(c.Status.Conditions, metav1.Condition{Type: tenancyv1alpha1.ExpiredCondition, Status: metav1.ConditionTrue, Reason: tenancyv1alpha1.ExpiredReason})
	}
}

func deleting() claimOpt {
	return func(c *tenancyv1alpha1.NamespaceClaim) { now := metav1.Now(); c.DeletionTimestamp = &now }
}

func withClass(name string) claimOpt {
	return func(c *tenancyv1alpha1.NamespaceClaim) { c.Spec.ClassName = name }
}

func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		name  string
		claim *tenancyv1alpha1.NamespaceClaim
		want  Phase
	}{
		{"no status yet", newClaim(), PhasePending},
		{"provisioning", newClaim(withReady(metav1.ConditionFalse, tenancyv1alpha1.ProvisioningReason, 1)), PhasePending},
		{"internal error is transient", newClaim(withReady(metav1.ConditionFalse, tenancyv1alpha1.InternalErrorReason, 1)), PhasePending},
		{"ready", newClaim(provisioned(), withReady(metav1.ConditionTrue, tenancyv1alpha1.ProvisionedReason, 1)), PhaseReady},
		{"ready for an older generation", newClaim(provisioned(), withReady(metav1.ConditionTrue, tenancyv1alpha1.ProvisionedReason, 0)), PhasePending},
		{"refused", newClaim(withReady(metav1.ConditionFalse, tenancyv1alpha1.NamespaceTakenReason, 1)), PhaseRefused},
		{"refused for an older generation (the spec changed since)", newClaim(withReady(metav1.ConditionFalse, tenancyv1alpha1.TTLExceedsMaximumReason, 0)), PhasePending},
		{"refused: creator not admitted", newClaim(withReady(metav1.ConditionFalse, tenancyv1alpha1.CreatorNotAdmittedReason, 1)), PhaseRefused},
		{"expired", newClaim(withReady(metav1.ConditionFalse, tenancyv1alpha1.ExpiredReason, 1), expired()), PhaseExpired},
		{"queued for a budget", newClaim(withReady(metav1.ConditionFalse, tenancyv1alpha1.QueuedReason, 1)), PhaseQueued},
		{"waiting for a fleet member is queued, not refused", newClaim(withReady(metav1.ConditionFalse, tenancyv1alpha1.NoEligibleClusterReason, 1)), PhaseQueued},
		{"budget exhausted is a refusal", newClaim(withReady(metav1.ConditionFalse, tenancyv1alpha1.BudgetExhaustedReason, 1)), PhaseRefused},
		{"released by the tenant", newClaim(withReady(metav1.ConditionFalse, tenancyv1alpha1.ReleasedReason, 1)), PhaseDeleting},
		{"being deleted, even if expired", newClaim(expired(), deleting()), PhaseDeleting},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Classify(tc.claim).Phase; got != tc.want {
				t.Errorf("Classify() = %s, want %s", got, tc.want)
			}
		})
	}
}

func TestDecideExisting(t *testing.T) {
	ready := []claimOpt{withClass("ci"), provisioned(), withReady(metav1.ConditionTrue, tenancyv1alpha1.ProvisionedReason, 1)}
	for _, tc := range []struct {
		name      string
		existing  *tenancyv1alpha1.NamespaceClaim
		ifExists  string
		class     string
		owned     bool
		want      Action
		wantError bool
	}{
		{"none", nil, IfExistsUse, "ci", true, ActionCreate, false},
		{"none, fail", nil, IfExistsFail, "", true, ActionCreate, false},
		{"live, use", newClaim(ready...), IfExistsUse, "ci", true, ActionUse, false},
		{"live, use, no class asked", newClaim(ready...), IfExistsUse, "", true, ActionUse, false},
		{"live, use, another class", newClaim(ready...), IfExistsUse, "other", true, "", true},
		{"live, recreate", newClaim(ready...), IfExistsRecreate, "other", true, ActionRecreate, false},
		{"live, fail", newClaim(ready...), IfExistsFail, "ci", true, "", true},
		{"expired, use: recreated, the name is reusable", newClaim(withClass("ci"), expired()), IfExistsUse, "ci", true, ActionRecreate, false},
		{"expired, another class: recreated", newClaim(withClass("ci"), expired()), IfExistsUse, "other", true, ActionRecreate, false},
		{"expired, fail", newClaim(expired()), IfExistsFail, "", true, "", true},
		{"deleting, use", newClaim(deleting()), IfExistsUse, "", true, ActionWaitGone, false},
		{"deleting, recreate", newClaim(deleting()), IfExistsRecreate, "", true, ActionWaitGone, false},
		{"live, another's, default: refused", newClaim(ready...), IfExistsOwn, "ci", false, "", true},
		{"live, own, default: used", newClaim(ready...), IfExistsOwn, "ci", true, ActionUse, false},
		{"live, another's, use given explicitly", newClaim(ready...), IfExistsUse, "ci", false, ActionUse, false},
		{"expired, another's, default: refused", newClaim(expired()), IfExistsOwn, "", false, "", true},
		{"deleting, another's, default: waited for, then claimed anew", newClaim(deleting()), IfExistsOwn, "", false, ActionWaitGone, false},
		{"refused, use: waited for (and reported)", newClaim(withReady(metav1.ConditionFalse, tenancyv1alpha1.TTLExceedsMaximumReason, 1)), IfExistsUse, "", true, ActionUse, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := DecideExisting(tc.existing, tc.ifExists, tc.class, tc.owned)
			if (err != nil) != tc.wantError {
				t.Fatalf("DecideExisting() error = %v, want error %v", err, tc.wantError)
			}
			if err != nil && ExitCode(err) != ExitExists {
				t.Errorf("error %v maps to exit code %d, want %d", err, ExitCode(err), ExitExists)
			}
			if got != tc.want {
				t.Errorf("DecideExisting() = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestOwned(t *testing.T) {
	stamped := newClaim()
	stamped.UID = "u1"
	stamped.Spec.Creator = &tenancyv1alpha1.ClaimCreator{Username: "system:serviceaccount:ci:a"}
	unstamped := newClaim()
	unstamped.UID = "u2"
	for _, tc := range []struct {
		name      string
		claim     *tenancyv1alpha1.NamespaceClaim
		username  string
		recordUID types.UID
		want      bool
	}{
		{"stamped with the caller", stamped, "system:serviceaccount:ci:a", "", true},
		{"stamped with another pipeline", stamped, "system:serviceaccount:ci:b", "", false},
		{"stamped, caller unknown", stamped, "", "", false},
		{"unstamped, the caller's record holds its UID", unstamped, "system:serviceaccount:ci:a", "u2", true},
		{"unstamped, the record holds another UID (a claim recreated by another)", unstamped, "system:serviceaccount:ci:a", "u9", false},
		{"unstamped, no record", unstamped, "system:serviceaccount:ci:a", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Owned(tc.claim, tc.username, tc.recordUID); got != tc.want {
				t.Errorf("Owned() = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestExplain(t *testing.T) {
	deletingClaim := newClaim(provisioned(), deleting())
	deletingClaim.Finalizers = []string{tenancyv1alpha1.ClaimFinalizer}
	for _, tc := range []struct {
		name  string
		claim *tenancyv1alpha1.NamespaceClaim
		want  []string
	}{
		{"refused", newClaim(withReady(metav1.ConditionFalse, tenancyv1alpha1.TTLExceedsMaximumReason, 1)),
			[]string{"ci/pr-1: Refused", "reason:       TTLExceedsMaximum", "who must act: " + ActorPipeline, "shorter --ttl", "Ready=False TTLExceedsMaximum: m"}},
		{"stale condition", newClaim(withReady(metav1.ConditionTrue, tenancyv1alpha1.ProvisionedReason, 0)),
			[]string{"Pending", "(for generation 0 of 1)"}},
		{"idle", newClaim(provisioned(), idleUntil(time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC), time.Hour)),
			[]string{"lifecycle:    Idle (last activity 2026-11-26T10:00:00Z; deleted for idleness at 2026-11-26T11:00:00Z"}},
		{"active", newClaim(provisioned(), podsActive()),
			[]string{"lifecycle:    Active (a Pod is Pending or Running: the idle clock is stopped)"}},
		{"keep refused", newClaim(withReady(metav1.ConditionFalse, tenancyv1alpha1.KeepExceedsMaximumReason, 1)),
			[]string{"Refused", "shorter --keep"}},
		{"deletion held by the finalizer", deletingClaim,
			[]string{"Deleting", "blocked by finalizers tenancy.nsclaim.dev/namespace", "once namespace ci-pr-1 is gone"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Explain(tc.claim)
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("Explain() =\n%s\nwant it to contain %q", got, w)
				}
			}
		})
	}
}

func idleUntil(last time.Time, idle time.Duration) claimOpt {
	return func(c *tenancyv1alpha1.NamespaceClaim) {
		c.Status.Phase = tenancyv1alpha1.ClaimPhaseIdle
		c.Status.LastActivity = &metav1.Time{Time: last}
		c.Status.IdleExpiresAt = &metav1.Time{Time: last.Add(idle)}
	}
}

func podsActive() claimOpt {
	return func(c *tenancyv1alpha1.NamespaceClaim) {
		c.Status.Phase = tenancyv1alpha1.ClaimPhaseActive
		c.Status.PodsActive = true
	}
}

func TestSecretOfClaim(t *testing.T) {
	claim := newClaim(provisioned())
	claim.UID = "c1"
	for _, tc := range []struct {
		name   string
		labels map[string]string
		ok     bool
	}{
		{"the operator's, of this claim", map[string]string{tenancyv1alpha1.ClaimUIDLabel: "c1"}, true},
		{"of another claim", map[string]string{tenancyv1alpha1.ClaimUIDLabel: "c2"}, false},
		{"unlabelled (made by someone else)", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := SecretOfClaim(tc.labels, claim)
			if (err == nil) != tc.ok {
				t.Fatalf("SecretOfClaim() = %v, want ok %v", err, tc.ok)
			}
			if err != nil && ExitCode(err) != ExitExists {
				t.Errorf("exit %d, want %d", ExitCode(err), ExitExists)
			}
		})
	}
}

func TestProgressLine(t *testing.T) {
	got := ProgressLine("ci/a", State{Phase: PhasePending, Reason: tenancyv1alpha1.PendingReason, Message: "waiting for the quota"})
	if want := "namespaceclaim ci/a: Pending (Pending: waiting for the quota)"; got != want {
		t.Errorf("ProgressLine() = %q, want %q", got, want)
	}
}

func TestQueuePosition(t *testing.T) {
	for _, tc := range []struct {
		msg    string
		budget string
		pos    int
		ok     bool
	}{
		{"Waiting in NamespaceBudget payments at position 3: requested: requests.cpu=2, available: 1", "payments", 3, true},
		{"Waiting in NamespaceBudget b-1 at position 12: claims created before it are admitted first (StrictFIFO)", "b-1", 12, true},
		{"Waiting for the operator", "", 0, false},
	} {
		budget, pos, ok := QueuePosition(tc.msg)
		if budget != tc.budget || pos != tc.pos || ok != tc.ok {
			t.Errorf("QueuePosition(%q) = %q %d %v, want %q %d %v", tc.msg, budget, pos, ok, tc.budget, tc.pos, tc.ok)
		}
	}
	claim := newClaim(withReady(metav1.ConditionFalse, tenancyv1alpha1.QueuedReason, 1))
	claim.Status.Conditions[0].Message = "Waiting in NamespaceBudget payments at position 2: requested: claims=1, available: 0"
	if got := Explain(claim); !strings.Contains(got, "queue:        position 2 for NamespaceBudget payments") || !strings.Contains(got, ": Queued\n") {
		t.Fatalf("Explain of a queued claim:\n%s", got)
	}
}
