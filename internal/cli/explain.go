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
	"fmt"
	"strings"
	"time"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
)

// Explain describes a claim for a person: its phase, the Ready reason with who must act, every
// condition, and what holds a deletion.
func Explain(claim *tenancyv1alpha1.NamespaceClaim) string {
	var b strings.Builder
	st := Classify(claim)
	fmt.Fprintf(&b, "namespaceclaim %s/%s: %s\n", claim.Namespace, claim.Name, st.Phase)
	if st.Reason != "" {
		g := GuidanceFor(st.Reason)
		fmt.Fprintf(&b, "  reason:       %s\n  message:      %s\n  who must act: %s\n  what to do:   %s\n", st.Reason, st.Message, g.Actor, g.Action)
	}
	if st.Phase == PhaseQueued {
		if budget, pos, ok := QueuePosition(st.Message); ok {
			fmt.Fprintf(&b, "  queue:        position %d for NamespaceBudget %s\n", pos, budget)
		}
	}
	fmt.Fprintf(&b, "  namespace:    %s\n  class:        %s\n  expires:      %s\n", orNone(claim.Status.Namespace), orNone(claim.Status.ClassName), Expiry(claim))
	if claim.Status.Phase != "" || claim.Status.IdleExpiresAt != nil {
		fmt.Fprintf(&b, "  lifecycle:    %s\n", Lifecycle(claim))
	}
	if claim.Status.BoundUser != "" {
		fmt.Fprintf(&b, "  bound user:   %s (keyless)\n", claim.Status.BoundUser)
	} else if claim.Status.CredentialsSecretName != "" {
		fmt.Fprintf(&b, "  credentials:  Secret %s\n", claim.Status.CredentialsSecretName)
	}
	if claim.DeletionTimestamp != nil {
		fmt.Fprintf(&b, "  deletion:     requested %s; blocked by finalizers %s", claim.DeletionTimestamp.UTC().Format(time.RFC3339), strings.Join(claim.Finalizers, ", "))
		for _, f := range claim.Finalizers {
			if f == tenancyv1alpha1.ClaimFinalizer {
				fmt.Fprintf(&b, " (%s: the operator removes it once namespace %s is gone)", f, orNone(claim.Status.Namespace))
			}
		}
		b.WriteString("\n")
	}
	b.WriteString("  conditions:\n")
	for _, c := range claim.Status.Conditions {
		stale := ""
		if c.ObservedGeneration < claim.Generation {
			stale = fmt.Sprintf(" (for generation %d of %d)", c.ObservedGeneration, claim.Generation)
		}
		fmt.Fprintf(&b, "    %s=%s %s%s: %s\n", c.Type, c.Status, c.Reason, stale, c.Message)
	}
	return b.String()
}

// QueuePosition reads a Queued claim's Ready message ("Waiting in NamespaceBudget NAME at position N:
// ..."): the budget and the position, and whether the message had them.
func QueuePosition(message string) (budget string, position int, ok bool) {
	if _, err := fmt.Sscanf(message, "Waiting in NamespaceBudget %s at position %d:", &budget, &position); err != nil {
		return "", 0, false
	}
	return budget, position, true
}

// orNone is s, or "(none)" when empty.
func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

// Expiry is the claim's status.expiresAt in RFC 3339, or "unknown".
func Expiry(claim *tenancyv1alpha1.NamespaceClaim) string {
	if claim.Status.ExpiresAt == nil {
		return "unknown"
	}
	return claim.Status.ExpiresAt.UTC().Format(time.RFC3339)
}

// Lifecycle describes the claim's activity: its phase, since when it is idle and when it idles out.
func Lifecycle(claim *tenancyv1alpha1.NamespaceClaim) string {
	st := claim.Status
	out := orNone(string(st.Phase))
	switch {
	case st.Sleep != nil:
		var scaled, suspended int
		for _, w := range st.Sleep.Workloads {
			if w.Kind == tenancyv1alpha1.WorkloadCronJob {
				suspended++
			} else {
				scaled++
			}
		}
		out += fmt.Sprintf(" (asleep since %s: %d Deployment(s) and StatefulSet(s) scaled to 0, %d CronJob(s) suspended; kubectl nsclaim wake restores them",
			st.Sleep.Since.UTC().Format(time.RFC3339), scaled, suspended)
		if st.IdleExpiresAt != nil {
			out += fmt.Sprintf("; deleted for idleness at %s unless woken first", st.IdleExpiresAt.UTC().Format(time.RFC3339))
		}
		out += ")"
	case st.PodsActive:
		out += " (a Pod is Pending or Running: the idle clock is stopped)"
	case st.IdleExpiresAt != nil && st.LastActivity != nil:
		out += fmt.Sprintf(" (last activity %s; deleted for idleness at %s unless a Pod runs or a heartbeat comes first)",
			st.LastActivity.UTC().Format(time.RFC3339), st.IdleExpiresAt.UTC().Format(time.RFC3339))
	}
	return out
}

// HeartbeatRecorded reports whether the operator recorded a heartbeat sent at at: lastActivity at or
// after it (the operator's clock may lag by a second, or something newer happened since). With awake,
// the namespace must also no longer sleep (kubectl nsclaim wake).
func HeartbeatRecorded(claim *tenancyv1alpha1.NamespaceClaim, at time.Time, awake bool) bool {
	st := claim.Status
	if st.LastActivity == nil || st.LastActivity.Time.Before(at.Add(-time.Second)) {
		return false
	}
	return !awake || st.Sleep == nil
}
