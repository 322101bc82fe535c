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

package monitoring

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
)

func TestDefinitionsFollowNamingRules(t *testing.T) {
	g := NewWithT(t)
	seen := map[string]bool{}
	for _, d := range Definitions {
		g.Expect(seen[d.Name]).To(BeFalse(), "duplicate %s", d.Name)
		seen[d.Name] = true
		g.Expect(d.Name).To(HavePrefix("nsclaim_"))
		g.Expect(d.Help).NotTo(BeEmpty(), d.Name)
		switch d.Kind {
		case Counter:
			g.Expect(d.Name).To(HaveSuffix("_total"))
		case Histogram:
			g.Expect(d.Name).To(HaveSuffix("_seconds"))
			g.Expect(d.Buckets).NotTo(BeEmpty(), d.Name)
		case Gauge:
			g.Expect(d.Name).NotTo(HaveSuffix("_total"))
		default:
			t.Errorf("%s: unknown kind %q", d.Name, d.Kind)
		}
		if d.Kind != Histogram {
			g.Expect(d.Buckets).To(BeEmpty(), d.Name)
		}
	}
}

// TestEveryDefinitionHasOneCollector checks that the table and the collectors agree: each
// instrumented definition is described by exactly one collector with its labels, and the collected
// one by NewClaimCollector.
func TestEveryDefinitionHasOneCollector(t *testing.T) {
	g := NewWithT(t)
	descs := map[string]string{}
	all := append([]prometheus.Collector{NewClaimCollector(nil), NewPoolCollector(nil), NewBudgetCollector(nil), NewFleetCollector(nil)}, instrumented...)
	for _, c := range all {
		ch := make(chan *prometheus.Desc, 10)
		c.Describe(ch)
		close(ch)
		for d := range ch {
			s := d.String()
			name := strings.SplitN(strings.TrimPrefix(s, `Desc{fqName: "`), `"`, 2)[0]
			g.Expect(descs).NotTo(HaveKey(name))
			descs[name] = s
		}
	}
	g.Expect(descs).To(HaveLen(len(Definitions)))
	for _, d := range Definitions {
		g.Expect(descs).To(HaveKey(d.Name))
		labels := "variableLabels: {" + strings.Join(d.Labels, ",") + "}"
		g.Expect(descs[d.Name]).To(ContainSubstring(labels), d.Name)
	}
}

func TestMetricsDocIsGenerated(t *testing.T) {
	got, err := os.ReadFile(filepath.Join("..", "..", "docs", "metrics.md"))
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(Markdown()) {
		t.Fatal("docs/metrics.md is out of date: run `make metrics-docs`")
	}
}

// claimOpt changes a test claim.
type claimOpt func(*tenancyv1alpha1.NamespaceClaim)

func newClaim(name string, opts ...claimOpt) *tenancyv1alpha1.NamespaceClaim {
	c := &tenancyv1alpha1.NamespaceClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ci"}}
	for _, o := range opts {
		o(c)
	}
	return c
}

func withClass(class string) claimOpt {
	return func(c *tenancyv1alpha1.NamespaceClaim) { c.Status.ClassName = class }
}

func withReady(status metav1.ConditionStatus, reason string) claimOpt {
	return func(c *tenancyv1alpha1.NamespaceClaim) {
		c.Status.Conditions = append(c.Status.Conditions, metav1.Condition{Type: tenancyv1alpha1.ReadyCondition, Status: status, Reason: reason})
	}
}

func deleting() claimOpt {
	return func(c *tenancyv1alpha1.NamespaceClaim) {
		now := metav1.NewTime(time.Unix(1e9, 0))
		c.DeletionTimestamp = &now
		c.Finalizers = []string{tenancyv1alpha1.ClaimFinalizer}
	}
}

func TestClaimState(t *testing.T) {
	for _, tc := range []struct {
		name  string
		claim *tenancyv1alpha1.NamespaceClaim
		want  string
	}{
		{"no conditions", newClaim("a"), StatePending},
		{"ready", newClaim("a", withReady(metav1.ConditionTrue, tenancyv1alpha1.ProvisionedReason)), StateReady},
		{"unknown", newClaim("a", withReady(metav1.ConditionUnknown, tenancyv1alpha1.ProvisioningReason)), StatePending},
		{"provisioning", newClaim("a", withReady(metav1.ConditionFalse, tenancyv1alpha1.ProvisioningReason)), StatePending},
		{"internal error", newClaim("a", withReady(metav1.ConditionFalse, tenancyv1alpha1.InternalErrorReason)), StatePending},
		{"class not found", newClaim("a", withReady(metav1.ConditionFalse, tenancyv1alpha1.ClassNotFoundReason)), StateRefused},
		{"excess permissions", newClaim("a", withReady(metav1.ConditionFalse, tenancyv1alpha1.ExcessPermissionsReason)), StateRefused},
		{"expired", newClaim("a", withReady(metav1.ConditionFalse, tenancyv1alpha1.ExpiredReason)), StateExpired},
		{"released", newClaim("a", withReady(metav1.ConditionFalse, tenancyv1alpha1.ReleasedReason)), StateReleased},
		{"ready but deleting", newClaim("a", withReady(metav1.ConditionTrue, tenancyv1alpha1.ProvisionedReason), deleting()), StateTerminating},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ClaimState(tc.claim); got != tc.want {
				t.Errorf("ClaimState() = %s, want %s", got, tc.want)
			}
		})
	}
}

func TestClaimCollectorCountsByClassAndState(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := tenancyv1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	objs := []*tenancyv1alpha1.NamespaceClaim{
		newClaim("a", withClass("ci"), withReady(metav1.ConditionTrue, tenancyv1alpha1.ProvisionedReason)),
		newClaim("b", withClass("ci"), withReady(metav1.ConditionTrue, tenancyv1alpha1.ProvisionedReason)),
		newClaim("c", withClass("ci"), deleting()),
		newClaim("d", withClass("dev"), withReady(metav1.ConditionFalse, tenancyv1alpha1.ClaimLimitExceededReason)),
		newClaim("e", withReady(metav1.ConditionFalse, tenancyv1alpha1.ClassNotFoundReason)),
	}
	b := fake.NewClientBuilder().WithScheme(scheme)
	for _, o := range objs {
		b = b.WithObjects(o)
	}
	c := newClaimCollector(b.Build(), func() time.Time { return time.Unix(1e9+120, 0) }) // deleting() is at 1e9
	want := `# HELP nsclaim_claims ` + lookup(ClaimsName).Help + `
# TYPE nsclaim_claims gauge
nsclaim_claims{class="",state="Refused"} 1
nsclaim_claims{class="ci",state="Ready"} 2
nsclaim_claims{class="ci",state="Terminating"} 1
nsclaim_claims{class="dev",state="Refused"} 1
# HELP nsclaim_oldest_claim_wait_seconds ` + lookup(OldestWaitName).Help + `
# TYPE nsclaim_oldest_claim_wait_seconds gauge
nsclaim_oldest_claim_wait_seconds{class="ci",state="Terminating"} 120
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want)); err != nil {
		t.Fatal(err)
	}
}

func TestClaimCollectorCountsByPhase(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := tenancyv1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	phase := func(p tenancyv1alpha1.ClaimPhase) func(*tenancyv1alpha1.NamespaceClaim) {
		return func(c *tenancyv1alpha1.NamespaceClaim) { c.Status.Phase = p }
	}
	b := fake.NewClientBuilder().WithScheme(scheme)
	for _, o := range []*tenancyv1alpha1.NamespaceClaim{
		newClaim("a", withClass("ci"), phase(tenancyv1alpha1.ClaimPhaseIdle)),
		newClaim("b", withClass("ci"), phase(tenancyv1alpha1.ClaimPhaseIdle)),
		newClaim("c", withClass("ci"), phase(tenancyv1alpha1.ClaimPhaseActive)),
		newClaim("d", withClass("dev"), phase(tenancyv1alpha1.ClaimPhaseExpired)),
		newClaim("e", withClass("dev")),
	} {
		b = b.WithObjects(o)
	}
	want := `# HELP nsclaim_claims_by_phase ` + lookup(ClaimsByPhaseName).Help + `
# TYPE nsclaim_claims_by_phase gauge
nsclaim_claims_by_phase{class="ci",phase="Active"} 1
nsclaim_claims_by_phase{class="ci",phase="Idle"} 2
nsclaim_claims_by_phase{class="dev",phase="Expired"} 1
`
	if err := testutil.CollectAndCompare(NewClaimCollector(b.Build()), strings.NewReader(want), ClaimsByPhaseName); err != nil {
		t.Fatal(err)
	}
}

func TestInstrumentation(t *testing.T) {
	g := NewWithT(t)
	Register()
	Register()
	g.Expect(testutil.ToFloat64(refusals.WithLabelValues(tenancyv1alpha1.ClassNotFoundReason))).To(BeZero())
	Refused(tenancyv1alpha1.ClassNotFoundReason)
	g.Expect(testutil.ToFloat64(refusals.WithLabelValues(tenancyv1alpha1.ClassNotFoundReason))).To(Equal(1.0))
	CredentialIssued("ci", false)
	CredentialIssued("ci", true)
	CredentialIssued("ci", true)
	g.Expect(testutil.ToFloat64(credentialsIssued.WithLabelValues("ci", KindIssue))).To(Equal(1.0))
	g.Expect(testutil.ToFloat64(credentialsIssued.WithLabelValues("ci", KindRenewal))).To(Equal(2.0))
	ObserveProvisioned("ci", 1500*time.Millisecond)
	g.Expect(testutil.CollectAndCount(provisioningDuration)).To(Equal(1))
	g.Expect(testutil.CollectAndCount(fenceIntact)).To(BeZero(), "the fence gauge is absent until set")
	g.Expect(testutil.CollectAndCount(fencePrevious)).To(BeZero(), "the previous-fence gauge is absent until set")
	SetFenceIntact(true, false)
	g.Expect(testutil.ToFloat64(fenceIntact)).To(Equal(1.0))
	g.Expect(testutil.ToFloat64(fencePrevious)).To(BeZero())
	SetFenceIntact(false, true)
	g.Expect(testutil.ToFloat64(fenceIntact)).To(BeZero())
	g.Expect(testutil.ToFloat64(fencePrevious)).To(Equal(1.0))
}

func deletingAt(t time.Time) claimOpt {
	return func(c *tenancyv1alpha1.NamespaceClaim) {
		at := metav1.NewTime(t)
		c.DeletionTimestamp = &at
		c.Finalizers = []string{tenancyv1alpha1.ClaimFinalizer}
	}
}

func createdAt(t time.Time) claimOpt {
	return func(c *tenancyv1alpha1.NamespaceClaim) { c.CreationTimestamp = metav1.NewTime(t) }
}

func withReadyAt(status metav1.ConditionStatus, reason string, at time.Time) claimOpt {
	return func(c *tenancyv1alpha1.NamespaceClaim) {
		c.Status.Conditions = append(c.Status.Conditions, metav1.Condition{Type: tenancyv1alpha1.ReadyCondition, Status: status, Reason: reason, LastTransitionTime: metav1.NewTime(at)})
	}
}

// TestOldestWait: the age of the oldest Pending claim per class, from its creation or its Ready
// condition's last transition, and of the oldest Terminating one from its deletion; Ready and refused
// claims do not count, however many.
func TestOldestWait(t *testing.T) {
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	ago := func(d time.Duration) time.Time { return now.Add(-d) }
	for _, tc := range []struct {
		name   string
		claims []*tenancyv1alpha1.NamespaceClaim
		want   map[ClassState]time.Duration
	}{
		{"none", nil, map[ClassState]time.Duration{}},
		{"new claim without conditions counts from creation", []*tenancyv1alpha1.NamespaceClaim{
			newClaim("a", withClass("ci"), createdAt(ago(3*time.Minute))),
		}, map[ClassState]time.Duration{{"ci", StatePending}: 3 * time.Minute}},
		{"the oldest of several per class", []*tenancyv1alpha1.NamespaceClaim{
			newClaim("a", withClass("ci"), createdAt(ago(time.Minute))),
			newClaim("b", withClass("ci"), createdAt(ago(20*time.Minute)), withReadyAt(metav1.ConditionFalse, tenancyv1alpha1.PendingReason, ago(20*time.Minute))),
			newClaim("c", withClass("dev"), createdAt(ago(2*time.Minute)), withReadyAt(metav1.ConditionFalse, tenancyv1alpha1.InternalErrorReason, ago(2*time.Minute))),
		}, map[ClassState]time.Duration{{"ci", StatePending}: 20 * time.Minute, {"dev", StatePending}: 2 * time.Minute}},
		{"a claim that was Ready counts from when it stopped being Ready", []*tenancyv1alpha1.NamespaceClaim{
			newClaim("a", withClass("ci"), createdAt(ago(48*time.Hour)), withReadyAt(metav1.ConditionFalse, tenancyv1alpha1.PendingReason, ago(90*time.Second))),
		}, map[ClassState]time.Duration{{"ci", StatePending}: 90 * time.Second}},
		{"Ready and refused claims do not wait; a terminating one waits since its deletion", []*tenancyv1alpha1.NamespaceClaim{
			newClaim("a", withClass("ci"), createdAt(ago(time.Hour)), withReadyAt(metav1.ConditionTrue, tenancyv1alpha1.ProvisionedReason, ago(time.Hour))),
			newClaim("b", withClass("ci"), createdAt(ago(time.Hour)), withReadyAt(metav1.ConditionFalse, tenancyv1alpha1.ClaimLimitExceededReason, ago(time.Hour))),
			newClaim("c", withClass("ci"), createdAt(ago(time.Hour)), deletingAt(ago(40*time.Minute))),
			newClaim("d", withClass("ci"), createdAt(ago(time.Hour)), deletingAt(ago(time.Minute))),
		}, map[ClassState]time.Duration{{"ci", StateTerminating}: 40 * time.Minute}},
		{"a clock behind the API server's never gives a negative age", []*tenancyv1alpha1.NamespaceClaim{
			newClaim("a", withClass("ci"), createdAt(now.Add(time.Second))),
		}, map[ClassState]time.Duration{{"ci", StatePending}: 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			claims := make([]tenancyv1alpha1.NamespaceClaim, 0, len(tc.claims))
			for _, c := range tc.claims {
				claims = append(claims, *c)
			}
			if got := OldestWait(claims, now); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("OldestPending() = %v, want %v", got, tc.want)
			}
		})
	}
}
