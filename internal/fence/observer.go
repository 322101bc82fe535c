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

package fence

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	"github.com/nsclaim/nsclaim-operator/internal/fence/instruction"
	"github.com/nsclaim/nsclaim-operator/internal/monitoring"
	"github.com/nsclaim/nsclaim-operator/internal/olmcondition"
)

// IntactCondition is the OperatorCondition type that reports the admission fence.
const IntactCondition = "FenceIntact"

// Reasons of the FenceIntact condition (and of the Events that go with it).
const (
	// IntactReason: this release's fence is installed as shipped (status True).
	IntactReason = "Intact"
	// BrokenReason: the fence is missing or altered (status False).
	BrokenReason = "FenceMissingOrAltered"
	// PreviousReason: only the previous release's fence is installed, still accepted for the
	// grace (status False: it does not cover this release's rights).
	PreviousReason = "PreviousReleaseFence"
	// PreviousExpiredReason: only the previous release's fence is installed and its grace is
	// over (status False; nothing is provisioned, as without a fence).
	PreviousExpiredReason = "PreviousFenceGraceExpired"
)

// DefaultPreviousGrace is how long the previous release's fence is accepted after the operator
// first saw it (--previous-fence-grace, NSCLAIM_PREVIOUS_FENCE_GRACE).
const DefaultPreviousGrace = time.Hour

// Observer reports each fence check: the nsclaim_admission_fence_intact and
// nsclaim_admission_fence_previous_accepted gauges always, and on a change of state a log line, an Event
// on the operator's namespace and the FenceIntact condition of the OperatorCondition (where OLM runs the
// operator). Only this release's fence is intact: the previous release's (accepted during an upgrade,
// for previousGrace after the observer first saw it) is reported as not intact, with reason
// PreviousReleaseFence. With required (--require-fence, the default) it is also the claim reconciler's
// fence gate (namespaceclaim.FenceGate, FenceCurrent and FenceIntactEvents; cmd/ wires it): nothing is
// provisioned until a check found this release's fence, or the previous release's within its grace.
// Without it the operator keeps working, with RBAC as the only limit.
type Observer struct {
	recorder  recorder.EventRecorder
	reporter  *olmcondition.Reporter
	namespace string
	required  bool
	log       logr.Logger
	// accepts names the fences accepted: this release's, then the previous release's.
	accepts []string
	// previousGrace is how long the previous release's fence is accepted after the observer first saw
	// it; 0 accepts it not at all.
	previousGrace time.Duration
	// now is the observer's clock; time.Now when nil.
	now func() time.Time
	// intact receives an event (coalesced) each time a check finds the fence intact after it was not
	// (or at the first check), so claims held by the fence go on at once.
	intact chan event.GenericEvent

	mu   sync.Mutex
	last *Status
	// previousSince is when a check first found only the previous release's fence; zero until then.
	// It is never reset, so a process grants the grace once: the previous fence removed and applied
	// again does not start a new one.
	previousSince time.Time
	// reported is the state the last observe reported (fenceUnchecked before the first): a grace that
	// ended between two checks is a change the next check reports.
	reported fenceState
}

// NewObserver returns the observer of the admission fence: rec records its Events on namespace (the
// operator's), required says whether the claim reconciler waits for the fence (--require-fence),
// previousGrace is how long the previous release's fence is accepted, and log gets a line at each change.
// Runnable starts its checks.
func NewObserver(rec recorder.EventRecorder, namespace string, required bool, previousGrace time.Duration, log logr.Logger) *Observer {
	return &Observer{recorder: rec, namespace: namespace, required: required, previousGrace: previousGrace, log: log,
		intact: make(chan event.GenericEvent, 1)}
}

// Runnable returns the leader's check of the admission fence, reported to o and to reporter (the
// OperatorCondition): once right at start, within a second of any change of the fence's objects
// (watched by name through cfg), and every interval as a backstop; this release's fence and the
// previous release's (for the observer's grace) are accepted.
func (o *Observer) Runnable(c client.Reader, cfg *rest.Config, reporter *olmcondition.Reporter, interval time.Duration) (manager.Runnable, error) {
	want, err := Shipped()
	if err != nil {
		return nil, fmt.Errorf("loading the shipped admission fence: %w", err)
	}
	previous, err := Previous()
	if err != nil {
		return nil, fmt.Errorf("loading the previous release's admission fence: %w", err)
	}
	o.accepts = []string{want.Release, previous.Release}
	o.reporter = reporter
	return NewRunnable(c, want, interval, o.observe, WithWatch(cfg), AlsoAccept(previous)), nil
}

// fenceState is what the last check means for the operator.
type fenceState int

const (
	fenceUnchecked       fenceState = iota // no check completed yet
	fenceCurrent                           // this release's fence is intact
	fencePrevious                          // only the previous release's, within its grace
	fencePreviousExpired                   // only the previous release's, its grace over
	fenceBroken                            // missing or altered
)

// stateLocked is the state of the last check at the time at; o.mu must be held.
func (o *Observer) stateLocked(at time.Time) fenceState {
	switch {
	case o.last == nil:
		return fenceUnchecked
	case !o.last.Intact:
		return fenceBroken
	case o.last.Release == o.own():
		return fenceCurrent
	case !o.previousSince.IsZero() && at.Before(o.previousSince.Add(o.previousGrace)):
		return fencePrevious
	}
	return fencePreviousExpired
}

func (o *Observer) clock() time.Time {
	if o.now != nil {
		return o.now()
	}
	return time.Now()
}

// FenceIsCurrent implements the claim reconciler's FenceCurrent: the last check found this release's own fence
// intact (not the previous release's, accepted during an upgrade). Safe for concurrent use.
func (o *Observer) FenceIsCurrent() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.stateLocked(o.clock()) == fenceCurrent
}

// FenceIntactEvents implements the claim reconciler's FenceIntactEvents.
func (o *Observer) FenceIntactEvents() <-chan event.GenericEvent { return o.intact }

// FenceProblem implements the claim reconciler's FenceGate: checked is false until the first check completed;
// problem lists what is wrong with the fence, empty when it is intact or when it is the previous
// release's within its grace (which ends at its deadline, not only at the next check). Safe for
// concurrent use.
func (o *Observer) FenceProblem() (checked bool, problem string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	switch o.stateLocked(o.clock()) {
	case fenceUnchecked:
		return false, ""
	case fenceCurrent, fencePrevious:
		return true, ""
	case fencePreviousExpired:
		return true, o.expiredProblemLocked()
	}
	if len(o.last.Problems) == 0 {
		return true, "the admission fence is not intact" + o.versions(*o.last)
	}
	return true, strings.Join(o.last.Problems, "; ") + o.versions(*o.last)
}

// expiredProblemLocked says that the previous release's fence is no longer accepted; o.mu must be held.
func (o *Observer) expiredProblemLocked() string {
	return fmt.Sprintf("only the admission fence of release %s is installed, which does not cover the rights of release %s;"+
		" it was accepted for %s (NSCLAIM_PREVIOUS_FENCE_GRACE) after the operator first saw it at %s, and no longer is",
		o.last.Release, o.own(), o.previousGrace, o.previousSince.UTC().Format(time.RFC3339)) + o.versions(*o.last)
}

// own is the release whose fence this operator ships.
func (o *Observer) own() string {
	if len(o.accepts) == 0 {
		return "of this operator"
	}
	return o.accepts[0]
}

// intactMessage describes an intact fence: which release's fence it matches and how its objects are
// labelled, and, when that is not this release's own, that applying this release's fence.yaml brings it
// up to date (it is accepted meanwhile, as during an upgrade).
func (o *Observer) intactMessage(st Status) string {
	msg := "The admission fence is installed as shipped: it matches the fence of release " + st.Release
	if len(st.Found) > 0 {
		msg += " (objects labelled " + VersionLabel + "=" + strings.Join(st.Found, ", ") + ")"
	}
	if st.Release != o.own() || len(st.Found) != 1 || st.Found[0] != o.own() {
		msg += "; accepted, as during an upgrade: apply fence.yaml of release " + o.own() + " to bring it up to date"
	}
	return msg
}

// versions says which releases' fence objects were found and which the operator accepts.
func (o *Observer) versions(st Status) string {
	found := "none of its objects"
	if len(st.Found) > 0 {
		found = "objects labelled " + VersionLabel + "=" + strings.Join(st.Found, ", ")
	}
	return fmt.Sprintf(" (found %s; this operator accepts the fence of release %s)", found, strings.Join(o.accepts, " or "))
}

// observe reports the check st (see Observer).
func (o *Observer) observe(st Status) {
	now := o.clock()
	o.mu.Lock()
	before := o.reported
	changed := o.last == nil || o.last.Intact != st.Intact || strings.Join(o.last.Problems, ";") != strings.Join(st.Problems, ";") ||
		o.last.Release != st.Release || strings.Join(o.last.Found, ",") != strings.Join(st.Found, ",")
	o.last = &st
	if st.Intact && st.Release != o.own() && o.previousSince.IsZero() {
		o.previousSince = now
	}
	state := o.stateLocked(now)
	o.reported = state
	status, reason, msg := o.conditionLocked(state, st)
	o.mu.Unlock()
	monitoring.SetFenceIntact(state == fenceCurrent, state == fencePrevious)
	changed = changed || state != before
	if changed && (state == fenceCurrent || state == fencePrevious) && o.intact != nil {
		select {
		case o.intact <- event.GenericEvent{Object: &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: o.namespace}}}:
		default: // one pending event already makes every held claim go on
		}
	}
	if !changed {
		return
	}
	evType := corev1.EventTypeWarning
	switch state {
	case fenceCurrent:
		evType = corev1.EventTypeNormal
		o.log.Info("Admission fence is intact", "release", st.Release, "found", st.Found)
	case fencePrevious:
		o.log.Info("Only the previous release's admission fence is in force: reported as not intact; claims are provisioned until its grace ends, the pools and sleep are stopped",
			"release", st.Release, "found", st.Found, "graceEnds", o.previousSince.Add(o.previousGrace).UTC().Format(time.RFC3339))
	default:
		if o.required {
			o.log.Info("Admission fence is not intact; provisioning is stopped until it is applied as shipped (or NSCLAIM_REQUIRE_FENCE=false)", "problems", st.Problems, "reason", reason)
		} else {
			o.log.Info("Admission fence is not intact; nsclaim keeps working, with RBAC as the only limit (NSCLAIM_REQUIRE_FENCE=false)", "problems", st.Problems, "reason", reason)
		}
	}
	if o.recorder != nil && o.namespace != "" {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: o.namespace}}
		o.recorder.Eventf(ns, nil, evType, reason, "CheckFence", "%s", msg)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := o.reporter.Set(ctx, IntactCondition, status, reason, msg); err != nil {
		o.log.Error(err, "Cannot set the FenceIntact condition on the OperatorCondition")
	}
}

// conditionLocked is the FenceIntact condition for state, st being the last check; o.mu must be held.
// Only this release's fence makes it True.
func (o *Observer) conditionLocked(state fenceState, st Status) (metav1.ConditionStatus, string, string) {
	apply := instruction.InstructionFor(instruction.PartValidating, "", o.own())
	switch state {
	case fenceCurrent:
		return metav1.ConditionTrue, IntactReason, o.intactMessage(st)
	case fencePrevious:
		return metav1.ConditionFalse, PreviousReason, o.intactMessage(st) +
			". It does not cover the rights release " + o.own() + " adds, which fence.yaml of release " + o.own() + " brings with it:" +
			" the warm pools and sleep are stopped, and claims are provisioned only until " +
			o.previousSince.Add(o.previousGrace).UTC().Format(time.RFC3339) + " (NSCLAIM_PREVIOUS_FENCE_GRACE " + o.previousGrace.String() +
			" after the operator first saw this fence); then nothing is provisioned until an admin applies it"
	}
	reason, msg := BrokenReason, "The admission fence is missing or altered (see docs/security.md): "+strings.Join(st.Problems, "; ")+o.versions(st)
	if state == fencePreviousExpired {
		reason, msg = PreviousExpiredReason, "The admission fence is not this release's (see docs/security.md): "+o.expiredProblemLocked()
	}
	if o.required {
		return metav1.ConditionFalse, reason, msg + ". Provisioning is stopped until an admin " + apply + " or opts out with NSCLAIM_REQUIRE_FENCE=false"
	}
	return metav1.ConditionFalse, reason, msg + ". nsclaim keeps provisioning with RBAC as the only limit (NSCLAIM_REQUIRE_FENCE=false)"
}
