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

package namespaceclaim

import (
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
	"github.com/nsclaim/nsclaim-operator/internal/claimstatus"
	"github.com/nsclaim/nsclaim-operator/internal/credentials"
	"github.com/nsclaim/nsclaim-operator/internal/monitoring"
)

// observedClass is the class label of the claims of TestProvisioningIsObservedOncePerClaim.
const observedClass = "observed-once"

// provisionedCount reads the sample count of nsclaim_provisioning_duration_seconds for observedClass.
func provisionedCount(g Gomega) uint64 {
	families, err := metrics.Registry.Gather()
	g.Expect(err).NotTo(HaveOccurred())
	for _, f := range families {
		if f.GetName() != monitoring.ProvisioningDurationName {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "class" && l.GetValue() == observedClass {
					return m.GetHistogram().GetSampleCount()
				}
			}
		}
	}
	return 0
}

// The provisioning duration is observed once per claim: also when NamespaceReady was True before Ready
// (the self-test waited for new RoleBindings), and not again for a stale cached copy of the claim or
// for a later return to Ready.
func TestProvisioningIsObservedOncePerClaim(t *testing.T) {
	g := NewWithT(t)
	monitoring.Register()
	r := &NamespaceClaimReconciler{}
	cond := func(c *tenancyv1alpha1.NamespaceClaim, typ string, ok bool, reason string) {
		st := metav1.ConditionFalse
		if ok {
			st = metav1.ConditionTrue
		}
		meta.SetStatusCondition(&c.Status.Conditions, metav1.Condition{Type: typ, Status: st, Reason: reason, Message: reason})
	}
	claim := &tenancyv1alpha1.NamespaceClaim{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ci", UID: types.UID("uid-1"),
		CreationTimestamp: metav1.NewTime(time.Unix(1000, 0))}, Status: tenancyv1alpha1.NamespaceClaimStatus{ClassName: observedClass}}
	// Waiting for the self-test: the namespace is ready, the claim is not.
	cond(claim, tenancyv1alpha1.NamespaceReadyCondition, true, tenancyv1alpha1.ProvisionedReason)
	cond(claim, tenancyv1alpha1.ReadyCondition, false, tenancyv1alpha1.PendingReason)
	pending := claim.DeepCopy()
	ready := claim.DeepCopy()
	cond(ready, tenancyv1alpha1.ReadyCondition, true, tenancyv1alpha1.ProvisionedReason)

	before := provisionedCount(g)
	r.emitEvents(&claimScope{claim: ready.DeepCopy(), now: time.Unix(1010, 0)}, pending)
	g.Expect(provisionedCount(g)).To(Equal(before+1), "the first Ready is observed although NamespaceReady was True before it")

	// A reconcile of a stale copy (still Pending in the cache) reaches Ready again.
	r.emitEvents(&claimScope{claim: ready.DeepCopy(), now: time.Unix(1011, 0)}, pending)
	g.Expect(provisionedCount(g)).To(Equal(before+1), "a stale copy does not observe it twice")

	// Another claim is observed on its own.
	other := ready.DeepCopy()
	other.UID = "uid-2"
	r.emitEvents(&claimScope{claim: other, now: time.Unix(1012, 0)}, pending)
	g.Expect(provisionedCount(g)).To(Equal(before + 2))

}

// A claim whose kubeconfig names an in-cluster-only address gets a Warning Event when it turns Ready
// with a token, telling who fixes it; with a reachable address, or in mode Requester (no kubeconfig),
// it gets none.
func TestInClusterOnlyServerIsReportedOnEachClaim(t *testing.T) {
	cases := []struct {
		name   string
		source credentials.ServerSource
		secret string
		want   bool
	}{
		{"in-cluster only, token", credentials.ServerInClusterOnly, "c-kubeconfig", true},
		{"published address, token", credentials.ServerClusterInfo, "c-kubeconfig", false},
		{"in-cluster only, mode Requester", credentials.ServerInClusterOnly, "", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			rec := events.NewFakeRecorder(10)
			r := &NamespaceClaimReconciler{Recorder: rec, Endpoint: credentials.Endpoint{Server: "https://10.96.0.1:443", Source: tc.source}}
			claim := &tenancyv1alpha1.NamespaceClaim{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ci", UID: "uid-warn"}}
			claim.Status.CredentialsSecretName = tc.secret
			before := claim.DeepCopy()
			meta.SetStatusCondition(&claim.Status.Conditions, metav1.Condition{Type: tenancyv1alpha1.ReadyCondition,
				Status: metav1.ConditionTrue, Reason: tenancyv1alpha1.ProvisionedReason, Message: "ready"})
			r.emitEvents(&claimScope{claim: claim, now: time.Now()}, before)
			close(rec.Events)
			var warnings []string
			for e := range rec.Events {
				if strings.Contains(e, claimstatus.KubeconfigServerInClusterOnlyReason) {
					warnings = append(warnings, e)
				}
			}
			if !tc.want {
				g.Expect(warnings).To(BeEmpty())
				return
			}
			g.Expect(warnings).To(HaveLen(1))
			g.Expect(warnings[0]).To(HavePrefix("Warning"))
			g.Expect(warnings[0]).To(ContainSubstring("NSCLAIM_KUBECONFIG_SERVER"))
			g.Expect(warnings[0]).To(ContainSubstring("https://10.96.0.1:443"))
		})
	}
}
