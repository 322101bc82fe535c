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
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
	"github.com/nsclaim/nsclaim-operator/internal/claimpolicy"
)

// wantRefusal fails unless ref is the refusal reason (none when reason is ""), its message holding
// every fragment.
func wantRefusal(t *testing.T, ref *claimpolicy.Refusal, reason string, fragments ...string) {
	t.Helper()
	if reason == "" {
		if ref != nil {
			t.Fatalf("refused: %v", ref)
		}
		return
	}
	if ref == nil || ref.Reason != reason {
		t.Fatalf("got %v, want refusal %s", ref, reason)
	}
	for _, f := range fragments {
		if !strings.Contains(ref.Message, f) {
			t.Errorf("refusal message %q does not contain %q", ref.Message, f)
		}
	}
}

func dur(d time.Duration) *metav1.Duration { return &metav1.Duration{Duration: d} }

func TestIdleTTL(t *testing.T) {
	lifetime := func(idle, maxKeep *metav1.Duration) *tenancyv1alpha1.NamespaceClass {
		return &tenancyv1alpha1.NamespaceClass{ObjectMeta: metav1.ObjectMeta{Name: "ci"},
			Spec: tenancyv1alpha1.NamespaceClassSpec{Lifetime: tenancyv1alpha1.LifetimeSpec{IdleTTL: idle, MaxKeep: maxKeep}}}
	}
	keep := func(d *metav1.Duration) *tenancyv1alpha1.NamespaceClaim {
		return &tenancyv1alpha1.NamespaceClaim{Spec: tenancyv1alpha1.NamespaceClaimSpec{Keep: d}}
	}
	tests := []struct {
		name      string
		claim     *tenancyv1alpha1.NamespaceClaim
		class     *tenancyv1alpha1.NamespaceClass
		want      time.Duration
		enabled   bool
		reason    string
		fragments []string
	}{
		{name: "no idle TTL: off, keep ignored", claim: keep(dur(900 * time.Hour)), class: lifetime(nil, nil)},
		{name: "class idle TTL", claim: keep(nil), class: lifetime(dur(time.Hour), nil), want: time.Hour, enabled: true},
		{name: "keep within maxKeep", claim: keep(dur(8 * time.Hour)), class: lifetime(dur(time.Hour), dur(8*time.Hour)), want: 8 * time.Hour, enabled: true},
		{name: "keep shorter than idle TTL", claim: keep(dur(10 * time.Minute)), class: lifetime(dur(time.Hour), nil), want: 10 * time.Minute, enabled: true},
		{name: "keep beyond maxKeep is refused, class idle TTL holds", claim: keep(dur(9 * time.Hour)), class: lifetime(dur(time.Hour), dur(8*time.Hour)),
			want: time.Hour, enabled: true, reason: tenancyv1alpha1.KeepExceedsMaximumReason, fragments: []string{"spec.keep 9h0m0s", "8h0m0s", `"ci"`, "lifetime.maxKeep"}},
		{name: "without maxKeep, idle TTL bounds keep", claim: keep(dur(2 * time.Hour)), class: lifetime(dur(time.Hour), nil),
			want: time.Hour, enabled: true, reason: tenancyv1alpha1.KeepExceedsMaximumReason, fragments: []string{"spec.keep 2h0m0s", "lifetime.idleTTL, as it sets no lifetime.maxKeep"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, enabled, ref := IdleTTL(tt.claim, tt.class)
			wantRefusal(t, ref, tt.reason, tt.fragments...)
			if got != tt.want || enabled != tt.enabled {
				t.Errorf("IdleTTL = %s, %v; want %s, %v", got, enabled, tt.want, tt.enabled)
			}
		})
	}
}

func TestHeartbeat(t *testing.T) {
	created := time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)
	now := created.Add(2 * time.Hour)
	claim := func(v *string) *tenancyv1alpha1.NamespaceClaim {
		c := &tenancyv1alpha1.NamespaceClaim{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(created)}}
		if v != nil {
			c.Annotations = map[string]string{tenancyv1alpha1.HeartbeatAnnotation: *v}
		}
		return c
	}
	s := func(v string) *string { return &v }
	tests := []struct {
		name string
		v    *string
		want time.Time
		ok   bool
	}{
		{name: "none"},
		{name: "not RFC 3339", v: s("an hour ago")},
		{name: "empty", v: s("")},
		{name: "before the claim's creation counts for nothing", v: s(created.Add(-time.Second).Format(time.RFC3339))},
		{name: "at creation", v: s(created.Format(time.RFC3339)), want: created, ok: true},
		{name: "in the past", v: s(now.Add(-time.Minute).Format(time.RFC3339)), want: now.Add(-time.Minute), ok: true},
		{name: "within the skew counts as now", v: s(now.Add(HeartbeatSkew).Format(time.RFC3339)), want: now, ok: true},
		{name: "in the future beyond the skew counts for nothing", v: s(now.Add(HeartbeatSkew + time.Second).Format(time.RFC3339))},
		{name: "far in the future counts for nothing", v: s(now.Add(1000 * time.Hour).Format(time.RFC3339))},
		{name: "other time zone", v: s("2026-11-26T12:30:00+02:00"), want: created.Add(30 * time.Minute), ok: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := Heartbeat(claim(tt.v), now)
			if ok != tt.ok || !got.Equal(tt.want) {
				t.Errorf("Heartbeat = %s, %v; want %s, %v", got, ok, tt.want, tt.ok)
			}
		})
	}
}

func TestIdleActivity(t *testing.T) {
	t0 := time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)
	now := t0.Add(3 * time.Hour)
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	tests := []struct {
		name string
		in   ActivityInput
		want Activity
	}{
		{name: "first observation starts the clock now",
			in:   ActivityInput{Now: now, IdleTTL: time.Hour},
			want: Activity{LastActivity: now, IdleExpiresAt: now.Add(time.Hour)}},
		{name: "first observation with Pods: active, no idle expiry",
			in:   ActivityInput{Now: now, ActivePods: 2, IdleTTL: time.Hour},
			want: Activity{LastActivity: now, Active: true}},
		{name: "idle: the clock keeps its start",
			in:   ActivityInput{Now: now, Observed: true, LastActivity: at(time.Hour), IdleTTL: time.Hour},
			want: Activity{LastActivity: at(time.Hour), IdleExpiresAt: at(2 * time.Hour)}},
		{name: "active: nothing moves while Pods run",
			in:   ActivityInput{Now: now, Observed: true, LastActivity: at(time.Hour), WasActive: true, ActivePods: 1, IdleTTL: time.Hour},
			want: Activity{LastActivity: at(time.Hour), Active: true}},
		{name: "the last Pod ended: the clock starts when that is seen",
			in:   ActivityInput{Now: now, Observed: true, LastActivity: at(time.Hour), WasActive: true, IdleTTL: time.Hour},
			want: Activity{LastActivity: now, IdleExpiresAt: now.Add(time.Hour)}},
		{name: "a Pod appears: active",
			in:   ActivityInput{Now: now, Observed: true, LastActivity: at(time.Hour), ActivePods: 1, IdleTTL: time.Hour},
			want: Activity{LastActivity: at(time.Hour), Active: true}},
		{name: "a newer heartbeat restarts the clock",
			in:   ActivityInput{Now: now, Observed: true, LastActivity: at(time.Hour), Heartbeat: at(150 * time.Minute), IdleTTL: time.Hour},
			want: Activity{LastActivity: at(150 * time.Minute), IdleExpiresAt: at(210 * time.Minute)}},
		{name: "an older heartbeat changes nothing",
			in:   ActivityInput{Now: now, Observed: true, LastActivity: at(time.Hour), Heartbeat: at(30 * time.Minute), IdleTTL: time.Hour},
			want: Activity{LastActivity: at(time.Hour), IdleExpiresAt: at(2 * time.Hour)}},
		{name: "a heartbeat while active is recorded",
			in:   ActivityInput{Now: now, Observed: true, LastActivity: at(time.Hour), WasActive: true, ActivePods: 3, Heartbeat: at(2 * time.Hour), IdleTTL: time.Hour},
			want: Activity{LastActivity: at(2 * time.Hour), Active: true}},
		{name: "no idle TTL: activity recorded, no idle expiry",
			in:   ActivityInput{Now: now, Observed: true, LastActivity: at(time.Hour), WasActive: true},
			want: Activity{LastActivity: now}},
		{name: "past the idle TTL the expiry is in the past",
			in:   ActivityInput{Now: now, Observed: true, LastActivity: at(0), IdleTTL: time.Hour},
			want: Activity{LastActivity: at(0), IdleExpiresAt: at(time.Hour)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := IdleActivity(tt.in)
			if !got.LastActivity.Equal(tt.want.LastActivity) || got.Active != tt.want.Active || !got.IdleExpiresAt.Equal(tt.want.IdleExpiresAt) {
				t.Errorf("IdleActivity = %+v; want %+v", got, tt.want)
			}
		})
	}
}
