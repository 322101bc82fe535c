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

package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	"github.com/nsclaim/nsclaim-operator/internal/controller/namespaceclaim"
	"github.com/nsclaim/nsclaim-operator/internal/fence"
	"github.com/nsclaim/nsclaim-operator/internal/monitoring"
	"github.com/nsclaim/nsclaim-operator/internal/olmcondition"
)

// FenceIntactCondition is the OperatorCondition type that reports the admission fence.
const FenceIntactCondition = "FenceIntact"

// fenceObserver reports each fence check: the nsclaim_fence_intact gauge always, and on a change of
// state a log line, an Event on the operator's namespace and the FenceIntact condition of the
// OperatorCondition (where OLM runs the operator). With required (--require-fence, the default) it is
// also the claim reconciler's namespaceclaim.FenceGate: nothing is provisioned until a check found the
// fence intact. Without it the operator keeps working, with RBAC as the only limit.
type fenceObserver struct {
	recorder  recorder.EventRecorder
	reporter  *olmcondition.Reporter
	namespace string
	required  bool
	// accepts names the fences accepted: this release's, then the previous release's.
	accepts []string
	// intact receives an event (coalesced) each time a check finds the fence intact after it was not
	// (or at the first check), so claims held by the fence go on at once.
	intact chan event.GenericEvent

	mu   sync.Mutex
	last *fence.Status
}

var (
	_ namespaceclaim.FenceGate         = &fenceObserver{}
	_ namespaceclaim.FenceIntactEvents = &fenceObserver{}
)

// FenceIntactEvents implements namespaceclaim.FenceIntactEvents.
func (o *fenceObserver) FenceIntactEvents() <-chan event.GenericEvent { return o.intact }

// FenceProblem implements namespaceclaim.FenceGate: checked is false until the first check completed;
// problem lists what is wrong with the fence, empty when it is intact. Safe for concurrent use.
func (o *fenceObserver) FenceProblem() (checked bool, problem string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.last == nil {
		return false, ""
	}
	if o.last.Intact {
		return true, ""
	}
	if len(o.last.Problems) == 0 {
		return true, "the admission fence is not intact" + o.versions(*o.last)
	}
	return true, strings.Join(o.last.Problems, "; ") + o.versions(*o.last)
}

// own is the release whose fence this operator ships.
func (o *fenceObserver) own() string {
	if len(o.accepts) == 0 {
		return "of this operator"
	}
	return o.accepts[0]
}

// intactMessage describes an intact fence: which release's fence it matches and how its objects are
// labelled, and, when that is not this release's own, that applying this release's fence.yaml brings it
// up to date (it is accepted meanwhile, as during an upgrade).
func (o *fenceObserver) intactMessage(st fence.Status) string {
	msg := "The admission fence is installed as shipped: it matches the fence of release " + st.Release
	if len(st.Found) > 0 {
		msg += " (objects labelled " + fence.VersionLabel + "=" + strings.Join(st.Found, ", ") + ")"
	}
	if st.Release != o.own() || len(st.Found) != 1 || st.Found[0] != o.own() {
		msg += "; accepted, as during an upgrade: apply fence.yaml of release " + o.own() + " to bring it up to date"
	}
	return msg
}

// versions says which releases' fence objects were found and which the operator accepts.
func (o *fenceObserver) versions(st fence.Status) string {
	found := "none of its objects"
	if len(st.Found) > 0 {
		found = "objects labelled " + fence.VersionLabel + "=" + strings.Join(st.Found, ", ")
	}
	return fmt.Sprintf(" (found %s; this operator accepts the fence of release %s)", found, strings.Join(o.accepts, " or "))
}

func (o *fenceObserver) observe(st fence.Status) {
	monitoring.SetFenceIntact(st.Intact)
	o.mu.Lock()
	changed := o.last == nil || o.last.Intact != st.Intact || strings.Join(o.last.Problems, ";") != strings.Join(st.Problems, ";") ||
		o.last.Release != st.Release || strings.Join(o.last.Found, ",") != strings.Join(st.Found, ",")
	o.last = &st
	o.mu.Unlock()
	if changed && st.Intact && o.intact != nil {
		select {
		case o.intact <- event.GenericEvent{Object: &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: o.namespace}}}:
		default: // one pending event already makes every held claim go on
		}
	}
	if !changed {
		return
	}
	status, reason, msg := metav1.ConditionTrue, "Intact", o.intactMessage(st)
	evType := corev1.EventTypeNormal
	if !st.Intact {
		status, reason, msg = metav1.ConditionFalse, "FenceMissingOrAltered", "The admission fence is missing or altered (see docs/security.md): "+strings.Join(st.Problems, "; ")+o.versions(st)
		evType = corev1.EventTypeWarning
		if o.required {
			msg += ". Provisioning is stopped until an admin applies fence.yaml of release " + o.own() + " (kubectl apply --server-side -f fence.yaml;" +
				" or kustomize build config/fence of that release | kubectl apply --server-side -f -)" +
				" or opts out with NSCLAIM_REQUIRE_FENCE=false"
			setupLog.Info("Admission fence is not intact; provisioning is stopped until it is applied as shipped (or NSCLAIM_REQUIRE_FENCE=false)", "problems", st.Problems)
		} else {
			msg += ". nsclaim keeps provisioning with RBAC as the only limit (NSCLAIM_REQUIRE_FENCE=false)"
			setupLog.Info("Admission fence is not intact; nsclaim keeps working, with RBAC as the only limit (NSCLAIM_REQUIRE_FENCE=false)", "problems", st.Problems)
		}
	} else {
		setupLog.Info("Admission fence is intact", "release", st.Release, "found", st.Found)
	}
	if o.recorder != nil && o.namespace != "" {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: o.namespace}}
		o.recorder.Eventf(ns, nil, evType, reason, "CheckFence", "%s", msg)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := o.reporter.Set(ctx, FenceIntactCondition, status, reason, msg); err != nil {
		setupLog.Error(err, "Cannot set the FenceIntact condition on the OperatorCondition")
	}
}
