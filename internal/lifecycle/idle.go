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

package lifecycle

import (
	"fmt"
	"time"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
	"github.com/nsclaim/nsclaim-operator/internal/claimpolicy"
)

// IdleTTL returns how long the claim's namespace may stay idle: spec.keep, else the class's
// lifetime.idleTTL. enabled is false when the class sets no idleTTL (then spec.keep is ignored). It
// refuses a spec.keep above the class's lifetime.maxKeep (its idleTTL when it sets no maxKeep), and then
// returns the class's idleTTL, so a namespace the claim holds keeps idling out by the class.
func IdleTTL(claim *tenancyv1alpha1.NamespaceClaim, class *tenancyv1alpha1.NamespaceClass) (ttl time.Duration, enabled bool, refusal *claimpolicy.Refusal) {
	l := class.Spec.Lifetime
	if l.IdleTTL == nil || l.IdleTTL.Duration <= 0 {
		return 0, false, nil
	}
	idle := l.IdleTTL.Duration
	if claim.Spec.Keep == nil {
		return idle, true, nil
	}
	maxKeep, field := idle, "lifetime.idleTTL, as it sets no lifetime.maxKeep"
	if l.MaxKeep != nil && l.MaxKeep.Duration > 0 {
		maxKeep, field = l.MaxKeep.Duration, "lifetime.maxKeep"
	}
	if keep := claim.Spec.Keep.Duration; keep > maxKeep {
		return idle, true, &claimpolicy.Refusal{Reason: tenancyv1alpha1.KeepExceedsMaximumReason, Message: fmt.Sprintf(
			"spec.keep %s exceeds the maximum %s of NamespaceClass %q (%s)", keep, maxKeep, class.Name, field)}
	}
	return claim.Spec.Keep.Duration, true, nil
}

// HeartbeatSkew is how far in the future a heartbeat may be dated (the pipeline's clock may run ahead of
// the operator's); such a heartbeat counts as now. A heartbeat dated later is ignored.
const HeartbeatSkew = time.Minute

// Heartbeat reads the claim's heartbeat annotation (RFC 3339). It is bounded to what the operator can
// vouch for: a time later than now by more than HeartbeatSkew counts for nothing (an annotation that
// stays on the claim would otherwise restart the idle clock at every reconcile, until that time), one
// within the skew counts as now, and a time before the claim's creation counts for nothing. ok is false
// when there is none, it does not parse, or it counts for nothing.
func Heartbeat(claim *tenancyv1alpha1.NamespaceClaim, now time.Time) (at time.Time, ok bool) {
	v, found := claim.Annotations[tenancyv1alpha1.HeartbeatAnnotation]
	if !found {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339, v)
	if err != nil || t.Before(claim.CreationTimestamp.Time) || t.After(now.Add(HeartbeatSkew)) {
		return time.Time{}, false
	}
	if t.After(now) {
		t = now
	}
	return t, true
}

// ActivityInput is what one reconcile knows about a held namespace's activity.
type ActivityInput struct {
	// Now is the reconcile's time.
	Now time.Time
	// Observed is set when the claim's status already records activity (status.lastActivity).
	Observed bool
	// LastActivity is status.lastActivity; WasActive is status.podsActive.
	LastActivity time.Time
	WasActive    bool
	// ActivePods is the number of Pods Pending, Running or Unknown in the namespace now.
	ActivePods int
	// Heartbeat is the accepted heartbeat (see Heartbeat); zero when there is none.
	Heartbeat time.Time
	// IdleTTL is the idle TTL (see IdleTTL); zero when the class has none.
	IdleTTL time.Duration
}

// Activity is the activity to record and the idle expiry it implies.
type Activity struct {
	// LastActivity is when the idle clock last started.
	LastActivity time.Time
	// Active is set while a Pod is Pending or Running: the idle clock is stopped.
	Active bool
	// IdleExpiresAt is when the namespace idles out; zero while Active or without an idle TTL.
	IdleExpiresAt time.Time
}

// IdleActivity decides a held namespace's activity. The idle clock starts at the latest of: the first
// time the operator observes the claim's activity (so a claim made before idle TTLs existed, or a class
// that gains one, gets a whole idle TTL), the moment it observes that the last active Pod ended, and an
// accepted heartbeat. While a Pod is active the clock is stopped and nothing is rewritten; a heartbeat
// then still moves LastActivity (it is recorded, and counts once the Pods end).
func IdleActivity(in ActivityInput) Activity {
	last := in.LastActivity
	later := func(t time.Time) {
		if t.After(last) {
			last = t
		}
	}
	if !in.Observed || (in.WasActive && in.ActivePods == 0) {
		later(in.Now)
	}
	later(in.Heartbeat)
	out := Activity{LastActivity: last, Active: in.ActivePods > 0}
	if !out.Active && in.IdleTTL > 0 {
		out.IdleExpiresAt = last.Add(in.IdleTTL)
	}
	return out
}
