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

package budget

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
)

var t0 = time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)

type claimOpt func(*tenancyv1alpha1.NamespaceClaim)

func newClaim(name string, opts ...claimOpt) *tenancyv1alpha1.NamespaceClaim {
	c := &tenancyv1alpha1.NamespaceClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "team-a", UID: types.UID(name), CreationTimestamp: metav1.NewTime(t0)}}
	for _, o := range opts {
		o(c)
	}
	return c
}

func createdAt(d time.Duration) claimOpt {
	return func(c *tenancyv1alpha1.NamespaceClaim) { c.CreationTimestamp = metav1.NewTime(t0.Add(d)) }
}
func inNamespace(ns string) claimOpt {
	return func(c *tenancyv1alpha1.NamespaceClaim) { c.Namespace = ns }
}
func holding(ns string) claimOpt {
	return func(c *tenancyv1alpha1.NamespaceClaim) { c.Status.Namespace = ns }
}
func activeAt(d time.Duration) claimOpt {
	return func(c *tenancyv1alpha1.NamespaceClaim) { at := metav1.NewTime(t0.Add(d)); c.Status.LastActivity = &at }
}
func byCreator(user string, extra map[string][]string) claimOpt {
	return func(c *tenancyv1alpha1.NamespaceClaim) {
		c.Spec.Creator = &tenancyv1alpha1.ClaimCreator{Username: user, Extra: extra}
	}
}
func deleting() claimOpt {
	return func(c *tenancyv1alpha1.NamespaceClaim) { now := metav1.NewTime(t0); c.DeletionTimestamp = &now }
}

func cpu(q string) corev1.ResourceList {
	return corev1.ResourceList{"requests.cpu": resource.MustParse(q)}
}

func ptr[T any](v T) *T { return &v }

func budget(claims int32, resources corev1.ResourceList, opts ...func(*tenancyv1alpha1.NamespaceBudget)) *tenancyv1alpha1.NamespaceBudget {
	b := &tenancyv1alpha1.NamespaceBudget{ObjectMeta: metav1.ObjectMeta{Name: "payments"}, Spec: tenancyv1alpha1.NamespaceBudgetSpec{
		Limits: tenancyv1alpha1.BudgetLimits{Resources: resources}, Queueing: tenancyv1alpha1.BudgetQueueingStrictFIFO, OnExhausted: tenancyv1alpha1.BudgetExhaustedQueue}}
	if claims >= 0 {
		b.Spec.Limits.Claims = ptr(claims)
	}
	for _, o := range opts {
		o(b)
	}
	return b
}

func TestCovers(t *testing.T) {
	team := &metav1.LabelSelector{MatchLabels: map[string]string{"team": "payments"}}
	repo := []tenancyv1alpha1.BudgetCreator{{ExtraKey: "repository", ExtraValue: "org/payments"}, {Username: "alice"}}
	cases := []struct {
		name    string
		sel     *metav1.LabelSelector
		creator []tenancyv1alpha1.BudgetCreator
		claim   *tenancyv1alpha1.NamespaceClaim
		labels  map[string]string
		want    bool
	}{
		{name: "requester namespace labelled", sel: team, claim: newClaim("a"), labels: map[string]string{"team": "payments"}, want: true},
		{name: "other team", sel: team, claim: newClaim("a"), labels: map[string]string{"team": "search"}},
		{name: "no labels", sel: team, claim: newClaim("a")},
		{name: "keyless claim of the repository", creator: repo, claim: newClaim("a", byCreator("ci", map[string][]string{"repository": {"org/payments"}})), want: true},
		{name: "keyless claim of another repository", creator: repo, claim: newClaim("a", byCreator("ci", map[string][]string{"repository": {"org/search"}}))},
		{name: "keyless claim by username", creator: repo, claim: newClaim("a", byCreator("alice", nil)), want: true},
		{name: "claim without creator and creators only", creator: repo, claim: newClaim("a")},
		{name: "selector misses, creator matches", sel: team, creator: repo, claim: newClaim("a", byCreator("alice", nil)), labels: map[string]string{"team": "x"}, want: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := budget(1, nil)
			b.Spec.Requesters = tenancyv1alpha1.BudgetRequesters{NamespaceSelector: tc.sel, Creators: tc.creator}
			if got := Covers(b, tc.claim, tc.labels); got != tc.want {
				t.Fatalf("Covers = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestChargeOf(t *testing.T) {
	class := &tenancyv1alpha1.NamespaceClass{Spec: tenancyv1alpha1.NamespaceClassSpec{ResourceQuota: &corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{
		"requests.cpu": resource.MustParse("2"), "requests.memory": resource.MustParse("4Gi")}}}}
	cases := []struct {
		name          string
		claim         *tenancyv1alpha1.NamespaceClaim
		class         *tenancyv1alpha1.NamespaceClass
		wantRequester string
		wantCPU       string
		wantLen       int
	}{
		{name: "quota class", claim: newClaim("a"), class: class, wantRequester: "namespace:team-a", wantCPU: "2", wantLen: 2},
		{name: "class without quota", claim: newClaim("a"), class: &tenancyv1alpha1.NamespaceClass{}, wantRequester: "namespace:team-a", wantCPU: "0"},
		{name: "keyless claim is charged to its creator", claim: newClaim("a", byCreator("repo:org/p", nil)), class: class, wantRequester: "user:repo:org/p", wantCPU: "2", wantLen: 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := ChargeOf(tc.claim, tc.class)
			q := c.Resources["requests.cpu"]
			if c.Requester != tc.wantRequester || q.String() != tc.wantCPU || len(c.Resources) != tc.wantLen {
				t.Fatalf("ChargeOf = %+v, want requester %s cpu %s and %d resources", c, tc.wantRequester, tc.wantCPU, tc.wantLen)
			}
		})
	}
}

func TestFits(t *testing.T) {
	a := func(q string) Charge { return Charge{Requester: "namespace:a", Resources: cpu(q)} }
	b := func(q string) Charge { return Charge{Requester: "namespace:b", Resources: cpu(q)} }
	perRequester := func(n int32) func(*tenancyv1alpha1.NamespaceBudget) {
		return func(b *tenancyv1alpha1.NamespaceBudget) {
			b.Spec.PerRequester = &tenancyv1alpha1.BudgetLimits{Claims: ptr(n)}
		}
	}
	cases := []struct {
		name    string
		budget  *tenancyv1alpha1.NamespaceBudget
		counted []Charge
		charge  Charge
		want    bool
		wantMsg string
	}{
		{name: "empty budget", budget: budget(2, cpu("4")), charge: a("2"), want: true},
		{name: "last claim", budget: budget(2, nil), counted: []Charge{b("1")}, charge: a("1"), want: true},
		{name: "no claim left", budget: budget(2, nil), counted: []Charge{b("1"), b("1")}, charge: a("1"), wantMsg: "requested: claims=1, available: 0"},
		{name: "cpu exactly fits", budget: budget(-1, cpu("4")), counted: []Charge{b("2")}, charge: a("2"), want: true},
		{name: "cpu short", budget: budget(-1, cpu("3")), counted: []Charge{b("2")}, charge: a("2"), wantMsg: "requested: requests.cpu=2, available: 1"},
		{name: "cpu overdrawn shows zero", budget: budget(-1, cpu("1")), counted: []Charge{b("2")}, charge: a("1"), wantMsg: "requested: requests.cpu=1, available: 0"},
		{name: "class without the capped resource", budget: budget(-1, cpu("1")), counted: []Charge{b("1")}, charge: Charge{Requester: "namespace:a"}, want: true},
		{name: "per requester full", budget: budget(10, nil, perRequester(1)), counted: []Charge{a("1"), b("1")}, charge: a("1"), wantMsg: "requested: claims=1, available for namespace:a: 0"},
		{name: "per requester of another", budget: budget(10, nil, perRequester(1)), counted: []Charge{b("1")}, charge: a("1"), want: true},
		{name: "claims and cpu short", budget: budget(1, cpu("1")), counted: []Charge{b("1")}, charge: a("1"), wantMsg: "requested: claims=1, requests.cpu=1, available: 0, 0"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, msg := Fits(tc.budget, tc.counted, tc.charge)
			if got != tc.want || msg != tc.wantMsg {
				t.Fatalf("Fits = %v %q, want %v %q", got, msg, tc.want, tc.wantMsg)
			}
		})
	}
}

func TestUsageAndAvailable(t *testing.T) {
	charges := []Charge{{Requester: "x", Resources: cpu("1500m")}, {Requester: "y", Resources: cpu("1")}, {Requester: "x", Resources: cpu("500m")}}
	u := Usage(charges, "")
	if got := u.Resources["requests.cpu"]; u.Claims != 3 || got.String() != "3" {
		t.Fatalf("Usage = %d claims %s cpu, want 3 and 3", u.Claims, got.String())
	}
	if ux := Usage(charges, "x"); ux.Claims != 2 {
		t.Fatalf("Usage of x = %d claims, want 2", ux.Claims)
	}
	av := Available(tenancyv1alpha1.BudgetLimits{Claims: ptr(int32(2)), Resources: cpu("5")}, u)
	if got := av.Resources["requests.cpu"]; av.Claims != 0 || got.String() != "2" {
		t.Fatalf("Available = %d claims %s cpu, want 0 and 2", av.Claims, got.String())
	}
	if av := Available(tenancyv1alpha1.BudgetLimits{Resources: cpu("5")}, u); av.Claims != -1 {
		t.Fatalf("Available claims without a claims limit = %d, want -1", av.Claims)
	}
}

func TestOrderAndPosition(t *testing.T) {
	first := newClaim("z", createdAt(0))
	sameTimeA := newClaim("a", createdAt(time.Second))
	sameTimeB := newClaim("b", createdAt(time.Second))
	last := newClaim("c", createdAt(time.Minute))
	waiting := []*tenancyv1alpha1.NamespaceClaim{last, sameTimeB, first, sameTimeA}
	cases := []struct {
		claim *tenancyv1alpha1.NamespaceClaim
		want  int
	}{{first, 1}, {sameTimeA, 2}, {sameTimeB, 3}, {last, 4}, {newClaim("new", createdAt(time.Hour)), 5}}
	for _, tc := range cases {
		if got := Position(tc.claim, waiting); got != tc.want {
			t.Errorf("Position(%s) = %d, want %d", tc.claim.Name, got, tc.want)
		}
	}
	if !Before(newClaim("a", inNamespace("n1")), newClaim("a", inNamespace("n2"))) {
		t.Fatal("same time and name: the namespace must decide")
	}
}

// TestRoomForTheLine: a StrictFIFO claim goes before its turn only when the whole line ahead of it
// fits beside it, in the limits and in its requester's perRequester limits.
func TestRoomForTheLine(t *testing.T) {
	a := func(q string) Charge { return Charge{Requester: "namespace:a", Resources: cpu(q)} }
	b := func(q string) Charge { return Charge{Requester: "namespace:b", Resources: cpu(q)} }
	cases := []struct {
		name    string
		budget  *tenancyv1alpha1.NamespaceBudget
		counted []Charge
		ahead   []Charge
		charge  Charge
		want    bool
	}{
		{name: "room for all", budget: budget(10, cpu("10")), counted: []Charge{a("2")}, ahead: []Charge{a("2"), b("2")}, charge: a("2"), want: true},
		{name: "no line", budget: budget(2, nil), counted: []Charge{a("1")}, charge: a("1"), want: true},
		{name: "exactly full with the line", budget: budget(4, nil), counted: []Charge{a("1")}, ahead: []Charge{a("1"), b("1")}, charge: b("1"), want: true},
		{name: "claims: the line takes the last slot", budget: budget(3, nil), counted: []Charge{a("1")}, ahead: []Charge{a("1"), b("1")}, charge: b("1"), want: false},
		{name: "cpu: the line takes what is left", budget: budget(-1, cpu("4")), counted: []Charge{a("1")}, ahead: []Charge{b("2")}, charge: a("2"), want: false},
		{name: "does not fit even alone", budget: budget(-1, cpu("4")), counted: []Charge{a("3")}, charge: a("2"), want: false},
		{name: "perRequester: the requester's own line ahead fills it", budget: budget(10, nil, func(x *tenancyv1alpha1.NamespaceBudget) {
			x.Spec.PerRequester = &tenancyv1alpha1.BudgetLimits{Claims: ptr(int32(2))}
		}), counted: []Charge{a("1")}, ahead: []Charge{a("1")}, charge: a("1"), want: false},
		{name: "perRequester: another requester's line does not count", budget: budget(10, nil, func(x *tenancyv1alpha1.NamespaceBudget) {
			x.Spec.PerRequester = &tenancyv1alpha1.BudgetLimits{Claims: ptr(int32(2))}
		}), counted: []Charge{a("1")}, ahead: []Charge{b("1"), b("1")}, charge: a("1"), want: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := RoomForTheLine(tc.budget, tc.counted, tc.ahead, tc.charge); got != tc.want {
				t.Errorf("RoomForTheLine = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestDecide(t *testing.T) {
	with := func(q tenancyv1alpha1.BudgetQueueing, e tenancyv1alpha1.BudgetExhaustedPolicy, wait time.Duration) *tenancyv1alpha1.NamespaceBudget {
		return budget(1, nil, func(b *tenancyv1alpha1.NamespaceBudget) {
			b.Spec.Queueing, b.Spec.OnExhausted = q, e
			if wait > 0 {
				b.Spec.MaxQueueWait = &metav1.Duration{Duration: wait}
			}
		})
	}
	strict, best := tenancyv1alpha1.BudgetQueueingStrictFIFO, tenancyv1alpha1.BudgetQueueingBestEffortFIFO
	queue, reject, evict := tenancyv1alpha1.BudgetExhaustedQueue, tenancyv1alpha1.BudgetExhaustedReject, tenancyv1alpha1.BudgetExhaustedEvictIdle
	cases := []struct {
		name     string
		budget   *tenancyv1alpha1.NamespaceBudget
		position int
		fits     bool
		waited   time.Duration
		want     Decision
	}{
		{name: "first and fits", budget: with(strict, queue, 0), position: 1, fits: true, want: Admit},
		{name: "strict: fits behind an older claim", budget: with(strict, queue, 0), position: 2, fits: true, want: Queue},
		{name: "best effort: fits behind an older claim", budget: with(best, queue, 0), position: 2, fits: true, want: Admit},
		{name: "does not fit: queue", budget: with(strict, queue, 0), position: 1, want: Queue},
		{name: "does not fit: reject", budget: with(strict, reject, 0), position: 1, want: Reject},
		{name: "reject policy, fits but must wait its turn", budget: with(strict, reject, 0), position: 2, fits: true, want: Queue},
		{name: "does not fit: evict", budget: with(best, evict, 0), position: 1, want: Evict},
		{name: "evict policy, waiting its turn evicts nothing", budget: with(strict, evict, 0), position: 3, fits: true, want: Queue},
		{name: "waited too long", budget: with(strict, queue, time.Minute), position: 1, waited: time.Minute, want: Reject},
		{name: "waited not long enough", budget: with(strict, queue, time.Minute), position: 1, waited: 59 * time.Second, want: Queue},
		{name: "fits after a long wait", budget: with(strict, queue, time.Minute), position: 1, fits: true, waited: time.Hour, want: Admit},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := Decide(tc.budget, tc.position, tc.fits, tc.waited); got != tc.want {
				t.Fatalf("Decide = %s, want %s", got, tc.want)
			}
		})
	}
}

// TestJudge: the fit, the room for the line and the queue decision together, as the claim phase and
// the fleet hub both ask; and the refusal's reason and message.
func TestJudge(t *testing.T) {
	a := func(q string) Charge { return Charge{Requester: "namespace:a", Resources: cpu(q)} }
	reject := func(b *tenancyv1alpha1.NamespaceBudget) { b.Spec.OnExhausted = tenancyv1alpha1.BudgetExhaustedReject }
	cases := []struct {
		name       string
		budget     *tenancyv1alpha1.NamespaceBudget
		counted    []Charge
		ahead      []Charge
		aheadKnown bool
		position   int
		want       Decision
		whyHas     string
	}{
		{name: "first and fits", budget: budget(2, nil), counted: []Charge{a("1")}, position: 1, want: Admit},
		{name: "behind a line it has room for", budget: budget(4, nil), counted: []Charge{a("1")}, ahead: []Charge{a("1")}, aheadKnown: true, position: 2, want: Admit},
		{name: "behind a line, the line not known", budget: budget(4, nil), counted: []Charge{a("1")}, ahead: []Charge{a("1")}, position: 2, want: Queue},
		{name: "behind a line that takes the last slot", budget: budget(3, nil), counted: []Charge{a("1")}, ahead: []Charge{a("1"), a("1")}, aheadKnown: true, position: 3, want: Queue},
		{name: "does not fit", budget: budget(1, nil), counted: []Charge{a("1")}, position: 1, want: Queue, whyHas: "claims"},
		{name: "does not fit, Reject", budget: budget(1, nil, reject), counted: []Charge{a("1")}, position: 1, want: Reject, whyHas: "claims"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, why := Judge(tc.budget, tc.counted, tc.ahead, tc.aheadKnown, a("1"), tc.position, 0)
			if got != tc.want {
				t.Fatalf("Judge = %s (%q), want %s", got, why, tc.want)
			}
			if !strings.Contains(why, tc.whyHas) {
				t.Errorf("why = %q, want it to name %q", why, tc.whyHas)
			}
		})
	}
	b := budget(1, nil, reject)
	if reason, msg := Rejection(b, time.Second, "full"); reason != tenancyv1alpha1.BudgetExhaustedReason || !strings.Contains(msg, "onExhausted: Reject") {
		t.Errorf("Rejection without maxQueueWait = %s %q", reason, msg)
	}
	b.Spec.MaxQueueWait = &metav1.Duration{Duration: time.Minute}
	if reason, msg := Rejection(b, 2*time.Minute, "full"); reason != tenancyv1alpha1.QueueWaitExceededReason || !strings.Contains(msg, "maxQueueWait (1m0s)") {
		t.Errorf("Rejection past maxQueueWait = %s %q", reason, msg)
	}
}

func TestVictim(t *testing.T) {
	me := newClaim("new", createdAt(time.Hour))
	cases := []struct {
		name       string
		candidates []Candidate
		want       string
	}{
		{name: "least recently active of the requester", candidates: []Candidate{
			{Claim: newClaim("busy", holding("ns1"), activeAt(50*time.Minute)), IdleTTL: true},
			{Claim: newClaim("quiet", holding("ns2"), activeAt(10*time.Minute)), IdleTTL: true},
		}, want: "quiet"},
		{name: "never another requester's", candidates: []Candidate{
			{Claim: newClaim("theirs", inNamespace("team-b"), holding("ns1")), IdleTTL: true},
		}},
		{name: "never a class without idle TTL", candidates: []Candidate{
			{Claim: newClaim("kept", holding("ns1")), IdleTTL: false},
			{Claim: newClaim("idle", holding("ns2"), activeAt(30*time.Minute)), IdleTTL: true},
		}, want: "idle"},
		{name: "never one being deleted or holding nothing", candidates: []Candidate{
			{Claim: newClaim("going", holding("ns1"), deleting()), IdleTTL: true},
			{Claim: newClaim("waiting"), IdleTTL: true},
		}},
		{name: "never itself", candidates: []Candidate{{Claim: newClaim("new", createdAt(time.Hour), holding("ns")), IdleTTL: true}}},
		{name: "no activity: creation time counts", candidates: []Candidate{
			{Claim: newClaim("old", holding("ns1"), createdAt(time.Minute)), IdleTTL: true},
			{Claim: newClaim("newer", holding("ns2"), activeAt(2*time.Minute)), IdleTTL: true},
		}, want: "old"},
		{name: "keyless requester is its creator", candidates: []Candidate{
			{Claim: newClaim("same-ns-other-creator", holding("ns1"), byCreator("bob", nil)), IdleTTL: true},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := Victim(me, tc.candidates)
			switch {
			case tc.want == "" && got != nil:
				t.Fatalf("Victim = %s, want none", got.Name)
			case tc.want != "" && (got == nil || got.Name != tc.want):
				t.Fatalf("Victim = %v, want %s", got, tc.want)
			}
		})
	}
}

func TestQueuedMessage(t *testing.T) {
	got := QueuedMessage("payments", 3, "requested: requests.cpu=2, available: 1")
	want := "Waiting in NamespaceBudget payments at position 3: requested: requests.cpu=2, available: 1"
	if got != want {
		t.Fatalf("QueuedMessage = %q, want %q", got, want)
	}
}

func TestStatus(t *testing.T) {
	now := t0.Add(time.Hour)
	charges := []Charge{{Requester: "a", Resources: cpu("2")}, {Requester: "b", Resources: cpu("1")}}
	cases := []struct {
		name       string
		budget     *tenancyv1alpha1.NamespaceBudget
		allocated  []Charge
		queued     []*tenancyv1alpha1.NamespaceClaim
		wantReason string
		wantAvail  int32
		wantCPU    string
		wantOldest *time.Time
	}{
		{name: "room left", budget: budget(3, cpu("4")), allocated: charges, wantReason: tenancyv1alpha1.BudgetAvailableReason, wantAvail: 1, wantCPU: "1"},
		{name: "full", budget: budget(2, cpu("4")), allocated: charges, wantReason: tenancyv1alpha1.BudgetExhaustedReason, wantCPU: "1"},
		{name: "claims wait", budget: budget(3, cpu("3")), allocated: charges, wantReason: tenancyv1alpha1.BudgetExhaustedReason, wantAvail: 1, wantCPU: "0",
			queued: []*tenancyv1alpha1.NamespaceClaim{newClaim("late", createdAt(time.Minute)), newClaim("early", createdAt(time.Second))}, wantOldest: ptr(t0.Add(time.Second))},
		{name: "no claims limit", budget: budget(-1, cpu("8")), allocated: charges, wantReason: tenancyv1alpha1.BudgetAvailableReason, wantCPU: "5"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st := Status(tc.budget, tc.allocated, tc.queued, now)
			ready := st.Conditions[0]
			cpuLeft := st.Available.Resources["requests.cpu"]
			if ready.Reason != tc.wantReason || st.Available.Claims != tc.wantAvail || cpuLeft.String() != tc.wantCPU || st.Allocated.Claims != 2 || st.Queued != int32(len(tc.queued)) {
				t.Fatalf("Status = %+v", st)
			}
			if (tc.wantOldest == nil) != (st.OldestQueuedSince == nil) || (tc.wantOldest != nil && !st.OldestQueuedSince.Time.Equal(*tc.wantOldest)) {
				t.Fatalf("oldestQueuedSince = %v, want %v", st.OldestQueuedSince, tc.wantOldest)
			}
		})
	}
}
