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

package claimpolicy

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
)

// wantRefusal fails t unless ref is nil when reason is empty, or has reason and a message holding
// every one of fragments.
func wantRefusal(t *testing.T, ref *Refusal, reason string, fragments ...string) {
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

func TestResolveClassEdges(t *testing.T) {
	classes := []tenancyv1alpha1.NamespaceClass{class("c", asDefault), class("a", asDefault), class("b", asDefault), class("n", nil)}
	tests := []struct {
		name      string
		claim     tenancyv1alpha1.NamespaceClaim
		classes   []tenancyv1alpha1.NamespaceClass
		want      string
		reason    string
		fragments []string
	}{
		{name: "ambiguous defaults are listed sorted", classes: classes,
			reason: tenancyv1alpha1.AmbiguousDefaultClassReason, fragments: []string{"(a, b, c)", "spec.className is unset"}},
		{name: "a named class wins over ambiguous defaults", claim: tenancyv1alpha1.NamespaceClaim{Spec: tenancyv1alpha1.NamespaceClaimSpec{ClassName: "n"}}, classes: classes, want: "n"},
		{name: "a named class that is missing is not replaced by the default", claim: tenancyv1alpha1.NamespaceClaim{Spec: tenancyv1alpha1.NamespaceClaimSpec{ClassName: "x"}},
			classes: []tenancyv1alpha1.NamespaceClass{class("a", asDefault)}, reason: tenancyv1alpha1.ClassNotFoundReason, fragments: []string{`spec.className: NamespaceClass "x" does not exist`}},
		{name: "no classes at all", reason: tenancyv1alpha1.ClassNotFoundReason, fragments: []string{"no NamespaceClass is marked default"}},
		{name: "status.className without a namespace is not binding yet", claim: tenancyv1alpha1.NamespaceClaim{
			Spec: tenancyv1alpha1.NamespaceClaimSpec{ClassName: "n"}, Status: tenancyv1alpha1.NamespaceClaimStatus{ClassName: "gone"}}, classes: classes, want: "n"},
		{name: "a held claim whose class is gone names its namespace", claim: tenancyv1alpha1.NamespaceClaim{
			Spec: tenancyv1alpha1.NamespaceClaimSpec{ClassName: "n"}, Status: tenancyv1alpha1.NamespaceClaimStatus{ClassName: "gone", Namespace: "ns-1"}}, classes: classes,
			reason: tenancyv1alpha1.ClassNotFoundReason, fragments: []string{`"gone"`, "namespace ns-1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ref := ResolveClass(&tt.claim, tt.classes)
			wantRefusal(t, ref, tt.reason, tt.fragments...)
			if tt.reason == "" && (got == nil || got.Name != tt.want) {
				t.Fatalf("got %v, want class %s", got, tt.want)
			}
			if tt.reason != "" && got != nil {
				t.Fatalf("refused, yet class %s", got.Name)
			}
		})
	}
}

func TestCheckAccess(t *testing.T) {
	withSelector := func(sel *metav1.LabelSelector) tenancyv1alpha1.NamespaceClass {
		return class("ci", func(c *tenancyv1alpha1.NamespaceClass) { c.Spec.Access.RequesterNamespaceSelector = sel })
	}
	team := &metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}}
	expr := &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "tier", Operator: metav1.LabelSelectorOpIn, Values: []string{"ci", "dev"}}}}
	notProd := &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "env", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"prod"}}}}
	invalid := &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "tier", Operator: "Near"}}}
	tests := []struct {
		name     string
		class    tenancyv1alpha1.NamespaceClass
		labels   map[string]string
		reason   string
		fragment string
	}{
		{name: "no selector admits every namespace", class: withSelector(nil)},
		{name: "an empty selector admits every namespace", class: withSelector(&metav1.LabelSelector{})},
		{name: "matching labels", class: withSelector(team), labels: map[string]string{"team": "a", "other": "x"}},
		{name: "other value", class: withSelector(team), labels: map[string]string{"team": "b"},
			reason: tenancyv1alpha1.ClassNotAllowedReason, fragment: "access.requesterNamespaceSelector"},
		{name: "no labels", class: withSelector(team), reason: tenancyv1alpha1.ClassNotAllowedReason, fragment: `NamespaceClass "ci" does not admit`},
		{name: "expression in", class: withSelector(expr), labels: map[string]string{"tier": "dev"}},
		{name: "expression not in", class: withSelector(expr), labels: map[string]string{"tier": "prod"}, reason: tenancyv1alpha1.ClassNotAllowedReason},
		{name: "NotIn admits an unlabelled namespace", class: withSelector(notProd)},
		{name: "NotIn refuses prod", class: withSelector(notProd), labels: map[string]string{"env": "prod"}, reason: tenancyv1alpha1.ClassNotAllowedReason},
		{name: "an invalid selector refuses and says so", class: withSelector(invalid), labels: map[string]string{"tier": "ci"},
			reason: tenancyv1alpha1.ClassNotAllowedReason, fragment: "invalid access.requesterNamespaceSelector"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantRefusal(t, CheckAccess(&tt.class, tt.labels), tt.reason, tt.fragment)
		})
	}
}

func TestTTL(t *testing.T) {
	lifetime := func(def, maxTTL time.Duration) tenancyv1alpha1.NamespaceClass {
		return class("ci", func(c *tenancyv1alpha1.NamespaceClass) {
			if def != 0 {
				c.Spec.Lifetime.DefaultTTL = &metav1.Duration{Duration: def}
			}
			if maxTTL != 0 {
				c.Spec.Lifetime.MaxTTL = &metav1.Duration{Duration: maxTTL}
			}
		})
	}
	asked := func(d time.Duration) *metav1.Duration { return &metav1.Duration{Duration: d} }
	tests := []struct {
		name   string
		class  tenancyv1alpha1.NamespaceClass
		ttl    *metav1.Duration
		want   time.Duration
		reason string
	}{
		{name: "nothing set: the built-in default", class: lifetime(0, 0), want: DefaultTTL},
		{name: "the class's default", class: lifetime(2*time.Hour, 0), want: 2 * time.Hour},
		{name: "a class default above its max is capped", class: lifetime(10*time.Hour, 3*time.Hour), want: 3 * time.Hour},
		{name: "the built-in default is capped by a smaller max", class: lifetime(0, time.Hour), want: time.Hour},
		{name: "the built-in default stays under a larger max", class: lifetime(0, 48*time.Hour), want: DefaultTTL},
		{name: "a zero class default means the built-in one", class: lifetime(0, 0), want: DefaultTTL},
		{name: "asked below the max", class: lifetime(time.Hour, 5*time.Hour), ttl: asked(4 * time.Hour), want: 4 * time.Hour},
		{name: "asked exactly the max", class: lifetime(time.Hour, 5*time.Hour), ttl: asked(5 * time.Hour), want: 5 * time.Hour},
		{name: "asked above the max", class: lifetime(time.Hour, 5*time.Hour), ttl: asked(5*time.Hour + time.Second), reason: tenancyv1alpha1.TTLExceedsMaximumReason},
		{name: "asked above the built-in max", class: lifetime(0, 0), ttl: asked(DefaultMaxTTL + time.Minute), reason: tenancyv1alpha1.TTLExceedsMaximumReason},
		{name: "extension up to the built-in max", class: lifetime(0, 0), ttl: asked(DefaultMaxTTL), want: DefaultMaxTTL},
		{name: "asked below the class's default", class: lifetime(10*time.Hour, 20*time.Hour), ttl: asked(time.Minute), want: time.Minute},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			claim := &tenancyv1alpha1.NamespaceClaim{Spec: tenancyv1alpha1.NamespaceClaimSpec{TTL: tt.ttl}}
			got, ref := TTL(claim, &tt.class)
			wantRefusal(t, ref, tt.reason, "spec.ttl", "lifetime.maxTTL", `"ci"`)
			if got != tt.want {
				t.Fatalf("TTL = %s, want %s", got, tt.want)
			}
		})
	}
}

func TestRenewalBounds(t *testing.T) {
	creds := func(tokenTTL, renewBefore time.Duration) tenancyv1alpha1.NamespaceClass {
		return class("ci", func(c *tenancyv1alpha1.NamespaceClass) {
			if tokenTTL != 0 {
				c.Spec.Credentials.TokenTTL = &metav1.Duration{Duration: tokenTTL}
			}
			if renewBefore != 0 {
				c.Spec.Credentials.RenewBefore = &metav1.Duration{Duration: renewBefore}
			}
		})
	}
	tests := []struct {
		name                  string
		class                 tenancyv1alpha1.NamespaceClass
		wantTTL, wantRenewBef time.Duration
	}{
		{"defaults", creds(0, 0), DefaultTokenTTL, DefaultRenewBefore},
		{"class values", creds(4*time.Hour, 30*time.Minute), 4 * time.Hour, 30 * time.Minute},
		{"renewBefore capped at half the token lifetime", creds(time.Hour, 50*time.Minute), time.Hour, 30 * time.Minute},
		{"default renewBefore capped by a short token", creds(30*time.Minute, 0), 30 * time.Minute, 15 * time.Minute},
		{"renewBefore exactly half", creds(time.Hour, 30*time.Minute), time.Hour, 30 * time.Minute},
		{"renewBefore with the default token", creds(0, 10*time.Minute), DefaultTokenTTL, 10 * time.Minute},
		{"a negative duration means the default", creds(-time.Hour, -time.Minute), DefaultTokenTTL, DefaultRenewBefore},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := TokenTTL(&tt.class); got != tt.wantTTL {
				t.Errorf("TokenTTL = %s, want %s", got, tt.wantTTL)
			}
			if got := RenewBefore(&tt.class); got != tt.wantRenewBef {
				t.Errorf("RenewBefore = %s, want %s", got, tt.wantRenewBef)
			}
		})
	}
}

func TestTokenOnlyOnce(t *testing.T) {
	tests := []struct {
		name        string
		annotations map[string]string
		want        bool
		refused     bool
	}{
		{name: "no annotations"},
		{name: "other annotations", annotations: map[string]string{"a": "b"}},
		{name: "multiple-times", annotations: map[string]string{tenancyv1alpha1.TokenPolicyAnnotation: tenancyv1alpha1.TokenPolicyMultipleTimes}},
		{name: "only-once", annotations: map[string]string{tenancyv1alpha1.TokenPolicyAnnotation: tenancyv1alpha1.TokenPolicyOnlyOnce}, want: true},
		{name: "empty value", annotations: map[string]string{tenancyv1alpha1.TokenPolicyAnnotation: ""}, refused: true},
		{name: "wrong case", annotations: map[string]string{tenancyv1alpha1.TokenPolicyAnnotation: "Only-Once"}, refused: true},
		{name: "padded", annotations: map[string]string{tenancyv1alpha1.TokenPolicyAnnotation: " only-once"}, refused: true},
		{name: "other word", annotations: map[string]string{tenancyv1alpha1.TokenPolicyAnnotation: "never"}, refused: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			claim := &tenancyv1alpha1.NamespaceClaim{ObjectMeta: metav1.ObjectMeta{Annotations: tt.annotations}}
			got, ref := TokenOnlyOnce(claim)
			if got != tt.want {
				t.Errorf("only-once = %v, want %v", got, tt.want)
			}
			if !tt.refused {
				wantRefusal(t, ref, "")
				return
			}
			wantRefusal(t, ref, tenancyv1alpha1.InvalidTokenPolicyReason, tenancyv1alpha1.TokenPolicyAnnotation,
				`"`+tt.annotations[tenancyv1alpha1.TokenPolicyAnnotation]+`"`, tenancyv1alpha1.TokenPolicyOnlyOnce, tenancyv1alpha1.TokenPolicyMultipleTimes)
		})
	}
}

func TestCheckLabels(t *testing.T) {
	c := class("ci", func(c *tenancyv1alpha1.NamespaceClass) { c.Spec.AllowedClaimLabels = []string{"branch", "team"} })
	tests := []struct {
		name   string
		labels map[string]string
		bad    string
	}{
		{name: "none"},
		{name: "allowed", labels: map[string]string{"branch": "main", "team": "a"}},
		{name: "not allowed, listed sorted", labels: map[string]string{"zeta": "1", "branch": "x", "alpha": "2"}, bad: "alpha, zeta"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			claim := &tenancyv1alpha1.NamespaceClaim{Spec: tenancyv1alpha1.NamespaceClaimSpec{Labels: tt.labels}}
			ref := CheckLabels(claim, &c)
			if tt.bad == "" {
				wantRefusal(t, ref, "")
				return
			}
			wantRefusal(t, ref, tenancyv1alpha1.LabelNotAllowedReason, "spec.labels", "keys "+tt.bad+" (allowedClaimLabels)")
		})
	}
}

// sibling is a claim of class ci in namespace team-a, created at minute created of a fixed day.
func sibling(name string, created int, mut func(*tenancyv1alpha1.NamespaceClaim)) tenancyv1alpha1.NamespaceClaim {
	c := tenancyv1alpha1.NamespaceClaim{ObjectMeta: metav1.ObjectMeta{
		Name: name, Namespace: "team-a", UID: types.UID("uid-" + name),
		CreationTimestamp: metav1.NewTime(time.Date(2026, 1, 1, 0, created, 0, 0, time.UTC)),
	}}
	c.Spec.ClassName = "ci"
	if mut != nil {
		mut(&c)
	}
	return c
}

func holding(c *tenancyv1alpha1.NamespaceClaim) {
	c.Status.ClassName, c.Status.Namespace = "ci", "ci-"+c.Name
}

func expired(c *tenancyv1alpha1.NamespaceClaim) {
	c.Status.Conditions = []metav1.Condition{{Type: tenancyv1alpha1.ExpiredCondition, Status: metav1.ConditionTrue}}
}

func deleting(c *tenancyv1alpha1.NamespaceClaim) {
	now := metav1.NewTime(time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC))
	c.DeletionTimestamp = &now
}

// TestCheckClaimLimit decides, for each claim of a namespace, whether it may take a namespace under
// the class's limit: claims that hold one keep it, the others rank oldest first, and claims created in
// the same second rank by name, so every worker reaches the same answer.
func TestCheckClaimLimit(t *testing.T) {
	tests := []struct {
		name     string
		limit    int32
		claims   []tenancyv1alpha1.NamespaceClaim
		live     []string // names of the claims whose namespace the API server has (liveHolders)
		admitted string   // names of the claims not refused, in order
	}{
		{name: "no limit", limit: 0, claims: []tenancyv1alpha1.NamespaceClaim{sibling("a", 1, nil), sibling("b", 2, nil)}, admitted: "a,b"},
		{name: "oldest first", limit: 1, claims: []tenancyv1alpha1.NamespaceClaim{sibling("b", 1, nil), sibling("a", 2, nil)}, admitted: "b"},
		{name: "under the limit", limit: 3, claims: []tenancyv1alpha1.NamespaceClaim{sibling("a", 1, nil), sibling("b", 2, nil)}, admitted: "a,b"},
		{name: "a tie goes to the smaller name", limit: 1, claims: []tenancyv1alpha1.NamespaceClaim{sibling("b", 5, nil), sibling("a", 5, nil)}, admitted: "a"},
		{name: "ties rank by name, then the newer", limit: 2, claims: []tenancyv1alpha1.NamespaceClaim{
			sibling("c", 5, nil), sibling("b", 5, nil), sibling("a", 5, nil), sibling("d", 6, nil)}, admitted: "b,a"},
		{name: "a holder keeps its namespace when the limit is lowered", limit: 1, claims: []tenancyv1alpha1.NamespaceClaim{
			sibling("a", 1, nil), sibling("b", 2, holding), sibling("c", 3, holding)}, admitted: "b,c"},
		{name: "a newer holder outranks an older waiting claim", limit: 2, claims: []tenancyv1alpha1.NamespaceClaim{
			sibling("a", 1, nil), sibling("b", 2, nil), sibling("z", 9, holding)}, admitted: "a,z"},
		{name: "expired claims do not count", limit: 1, claims: []tenancyv1alpha1.NamespaceClaim{
			sibling("a", 1, func(c *tenancyv1alpha1.NamespaceClaim) { holding(c); expired(c) }), sibling("b", 2, nil)}, admitted: "a,b"},
		{name: "deleted claims do not count", limit: 1, claims: []tenancyv1alpha1.NamespaceClaim{
			sibling("a", 1, func(c *tenancyv1alpha1.NamespaceClaim) { holding(c); deleting(c) }), sibling("b", 2, nil)}, admitted: "a,b"},
		{name: "claims of another class do not count", limit: 1, claims: []tenancyv1alpha1.NamespaceClaim{
			sibling("a", 1, func(c *tenancyv1alpha1.NamespaceClaim) { c.Spec.ClassName = "other" }), sibling("b", 2, nil)}, admitted: "a,b"},
		{name: "a resolved class counts over spec", limit: 1, claims: []tenancyv1alpha1.NamespaceClaim{
			sibling("a", 1, func(c *tenancyv1alpha1.NamespaceClaim) { c.Spec.ClassName = ""; holding(c) }), sibling("b", 2, nil)}, admitted: "a"},
		// The cache lags: a claim whose status does not record its namespace yet, but whose namespace
		// exists, holds it. A newer claim that saw it only as waiting would have been admitted.
		{name: "a live namespace holds even when the cached claim does not say so", limit: 1, claims: []tenancyv1alpha1.NamespaceClaim{
			sibling("a", 1, nil), sibling("z", 9, nil)}, live: []string{"z"}, admitted: "z"},
		{name: "a live holder missing from the cache still counts", limit: 2, claims: []tenancyv1alpha1.NamespaceClaim{
			sibling("a", 1, nil), sibling("b", 2, nil)}, live: []string{"gone-from-cache"}, admitted: "a"},
		{name: "a live holder of a deleted claim counts until its namespace is being deleted", limit: 1, claims: []tenancyv1alpha1.NamespaceClaim{
			sibling("a", 1, func(c *tenancyv1alpha1.NamespaceClaim) { holding(c); deleting(c) }), sibling("b", 2, nil)}, live: []string{"a"}, admitted: "a"},
		{name: "a holder counted twice is one claim", limit: 2, claims: []tenancyv1alpha1.NamespaceClaim{
			sibling("a", 1, holding), sibling("b", 2, nil)}, live: []string{"a"}, admitted: "a,b"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var live []types.UID
			for _, n := range tt.live {
				live = append(live, types.UID("uid-"+n))
			}
			var admitted []string
			for i := range tt.claims {
				claim := &tt.claims[i]
				ref := CheckClaimLimit(claim, ClassOf(claim), tt.limit, tt.claims, live)
				if ref == nil {
					admitted = append(admitted, claim.Name)
					continue
				}
				wantRefusal(t, ref, tenancyv1alpha1.ClaimLimitExceededReason, "access.maxClaimsPerNamespace", `"ci"`)
			}
			if got := strings.Join(admitted, ","); got != tt.admitted {
				t.Fatalf("admitted %s, want %s", got, tt.admitted)
			}
		})
	}
}

func TestCheckClaimLimitMessageCountsActiveClaims(t *testing.T) {
	claims := []tenancyv1alpha1.NamespaceClaim{sibling("a", 1, holding), sibling("b", 2, nil), sibling("c", 3, nil)}
	ref := CheckClaimLimit(&claims[2], "ci", 2, claims, nil)
	wantRefusal(t, ref, tenancyv1alpha1.ClaimLimitExceededReason, "already has 2 active claims", "maxClaimsPerNamespace is 2")
}

func TestIsExpiredAndClassOf(t *testing.T) {
	c := sibling("a", 1, nil)
	if IsExpired(&c) {
		t.Error("a claim without conditions is expired")
	}
	c.Status.Conditions = []metav1.Condition{{Type: tenancyv1alpha1.ExpiredCondition, Status: metav1.ConditionFalse}}
	if IsExpired(&c) {
		t.Error("Expired=False reads as expired")
	}
	expired(&c)
	if !IsExpired(&c) {
		t.Error("Expired=True reads as not expired")
	}
	if ClassOf(&c) != "ci" {
		t.Errorf("ClassOf = %s, want spec's ci", ClassOf(&c))
	}
	c.Status.ClassName = "resolved"
	if ClassOf(&c) != "resolved" {
		t.Errorf("ClassOf = %s, want status's resolved", ClassOf(&c))
	}
}
