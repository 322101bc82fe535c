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
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/operator-framework/api/crds"
	apiv2 "github.com/operator-framework/api/pkg/operators/v2"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/nsclaim/nsclaim-operator/internal/monitoring"
	"github.com/nsclaim/nsclaim-operator/internal/olmcondition"
	"github.com/nsclaim/nsclaim-operator/internal/testenv"
)

// fakeClock is a settable clock for the observer.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time { return c.t }

var (
	checkedAt = time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	current   = Status{Intact: true, Release: "0.4.0", Found: []string{"0.4.0"}}
	previous  = Status{Intact: true, Release: "0.3.0", Found: []string{"0.3.0"}}
	missing   = Status{Problems: []string{"ValidatingAdmissionPolicy nsclaim-operator-fence is missing"}}
)

// TestFenceStates: what a sequence of checks means over time. The previous release's fence is never
// current (sleep and the pools stop), provisions only for the grace counted from the first check that
// saw it, and a grace is given once per process: removing the fence and applying the previous one again
// does not start a new one.
func TestFenceStates(t *testing.T) {
	type step struct {
		after       time.Duration // since checkedAt
		check       *Status       // nil: no new check, only time passes
		wantState   fenceState
		wantProblem bool
	}
	for _, tc := range []struct {
		name  string
		grace time.Duration
		steps []step
	}{
		{"this release's fence", time.Hour, []step{
			{0, &current, fenceCurrent, false},
			{48 * time.Hour, nil, fenceCurrent, false},
		}},
		{"the previous release's, within and after its grace", time.Hour, []step{
			{0, &previous, fencePrevious, false},
			{59 * time.Minute, &previous, fencePrevious, false},
			{time.Hour, nil, fencePreviousExpired, true},
			{2 * time.Hour, &previous, fencePreviousExpired, true},
		}},
		{"the grace runs from the first check that saw the previous fence", time.Hour, []step{
			{0, &missing, fenceBroken, true},
			{30 * time.Minute, &previous, fencePrevious, false},
			{89 * time.Minute, nil, fencePrevious, false},
			{90 * time.Minute, nil, fencePreviousExpired, true},
		}},
		{"no second grace after the fence was removed", time.Hour, []step{
			{0, &previous, fencePrevious, false},
			{10 * time.Minute, &missing, fenceBroken, true},
			{2 * time.Hour, &previous, fencePreviousExpired, true},
		}},
		{"the upgrade completed within the grace", time.Hour, []step{
			{0, &previous, fencePrevious, false},
			{20 * time.Minute, &current, fenceCurrent, false},
			{3 * time.Hour, nil, fenceCurrent, false},
		}},
		{"grace 0 never accepts the previous fence", 0, []step{
			{0, &previous, fencePreviousExpired, true},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := &fakeClock{t: checkedAt}
			o := &Observer{accepts: []string{"0.4.0", "0.3.0"}, previousGrace: tc.grace, now: clk.now, required: true}
			for i, s := range tc.steps {
				clk.t = checkedAt.Add(s.after)
				if s.check != nil {
					o.observe(*s.check)
				}
				o.mu.Lock()
				state := o.stateLocked(clk.t)
				o.mu.Unlock()
				checked, problem := o.FenceProblem()
				if state != s.wantState || !checked || (problem != "") != s.wantProblem || o.FenceIsCurrent() != (s.wantState == fenceCurrent) {
					t.Errorf("step %d (+%s): state %d, FenceProblem %t %q, FenceIsCurrent %t; want state %d, a problem %t",
						i, s.after, state, checked, problem, o.FenceIsCurrent(), s.wantState, s.wantProblem)
				}
			}
		})
	}
}

// TestPreviousFenceReportedNotIntact, against a real API server holding an OperatorCondition: while only
// the previous release's fence is in force the gauge is 0, the previous-fence gauge 1 and FenceIntact
// False (reason PreviousReleaseFence); when its grace is over the next check turns the reason to
// PreviousFenceGraceExpired and the previous-fence gauge to 0; this release's fence turns all three to
// intact.
func TestPreviousFenceReportedNotIntact(t *testing.T) {
	g := NewWithT(t)
	cfg := testenv.Start(t, &envtest.Environment{CRDs: []*apiextensionsv1.CustomResourceDefinition{crds.OperatorCondition()}})
	scheme := runtime.NewScheme()
	g.Expect(apiv2.AddToScheme(scheme)).To(Succeed())
	g.Expect(corev1.AddToScheme(scheme)).To(Succeed())
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	g.Expect(err).NotTo(HaveOccurred())
	ctx := context.Background()
	key := types.NamespacedName{Namespace: "operators", Name: "nsclaim-operator.v0.4.0"}
	g.Expect(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: key.Namespace}})).To(Succeed())
	g.Expect(c.Create(ctx, &apiv2.OperatorCondition{ObjectMeta: metav1.ObjectMeta{Name: key.Name, Namespace: key.Namespace}})).To(Succeed())
	monitoring.Register()

	clk := &fakeClock{t: checkedAt}
	o := &Observer{accepts: []string{"0.4.0", "0.3.0"}, previousGrace: time.Hour, now: clk.now, required: true,
		reporter: olmcondition.NewReporterFor(c, key)}
	condition := func() *metav1.Condition {
		var oc apiv2.OperatorCondition
		g.Expect(c.Get(ctx, key, &oc)).To(Succeed())
		return meta.FindStatusCondition(oc.Spec.Conditions, IntactCondition)
	}

	o.observe(previous)
	cond := condition()
	g.Expect(cond).NotTo(BeNil())
	g.Expect(cond.Status).To(Equal(metav1.ConditionFalse))
	g.Expect(cond.Reason).To(Equal(PreviousReason))
	g.Expect(cond.Message).To(ContainSubstring("claims are provisioned only until 2026-11-27T13:00:00Z"))
	g.Expect(gauge(t, monitoring.FenceIntactName)).To(Equal(0.0))
	g.Expect(gauge(t, monitoring.FencePreviousName)).To(Equal(1.0))

	clk.t = checkedAt.Add(time.Hour)
	o.observe(previous)
	cond = condition()
	g.Expect(cond.Status).To(Equal(metav1.ConditionFalse))
	g.Expect(cond.Reason).To(Equal(PreviousExpiredReason))
	g.Expect(cond.Message).To(ContainSubstring("Provisioning is stopped"))
	g.Expect(gauge(t, monitoring.FenceIntactName)).To(Equal(0.0))
	g.Expect(gauge(t, monitoring.FencePreviousName)).To(Equal(0.0))

	o.observe(current)
	cond = condition()
	g.Expect(cond.Status).To(Equal(metav1.ConditionTrue))
	g.Expect(cond.Reason).To(Equal(IntactReason))
	g.Expect(gauge(t, monitoring.FenceIntactName)).To(Equal(1.0))
	g.Expect(gauge(t, monitoring.FencePreviousName)).To(Equal(0.0))
}

// gauge reads the one value of the unlabelled gauge name from controller-runtime's registry, where the
// manager serves it.
func gauge(t *testing.T, name string) float64 {
	t.Helper()
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() == name && f.GetType() == dto.MetricType_GAUGE && len(f.GetMetric()) == 1 {
			return f.GetMetric()[0].GetGauge().GetValue()
		}
	}
	t.Fatalf("gauge %s is not registered or has no single value", name)
	return 0
}
