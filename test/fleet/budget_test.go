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

package fleet

import (
	"context"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
	"github.com/nsclaim/nsclaim-operator/internal/controller/fleet"
)

// budgetAcrossFleet: a NamespaceBudget of two claims on the hub covers the requester namespace; two
// claims placed on two different members use it up, so a third, preferring a third member with room,
// waits (Queued, never placed, no mirror anywhere) until one of the two is released, and is placed
// then: one allocation ledger for the fleet, the hub admits and then places.
func (e *env) budgetAcrossFleet(t *testing.T) {
	ctx := context.Background()
	two := int32(2)
	b := &tenancyv1alpha1.NamespaceBudget{ObjectMeta: metav1.ObjectMeta{Name: "fleet-team"}, Spec: tenancyv1alpha1.NamespaceBudgetSpec{
		Requesters: tenancyv1alpha1.BudgetRequesters{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": requesterNS}}},
		Limits:     tenancyv1alpha1.BudgetLimits{Claims: &two}}}
	must(t, e.hubAdmin.Create(ctx, b))
	three := names("budget", 3)
	t.Cleanup(func() {
		if err := e.hubAdmin.Delete(ctx, b); err != nil && !apierrors.IsNotFound(err) {
			t.Error(err)
		}
	})
	t.Cleanup(func() { e.release(t, three...) })
	for i, m := range members[:2] {
		e.claim(t, three[i], "ci", m)
		if counts := e.placed(t, three[i:i+1]); counts[m] != 1 {
			t.Fatalf("%s placed %v, want %s (preferred, eligible, within the budget)", three[i], counts, m)
		}
	}
	e.claim(t, three[2], "ci", "m3")
	msg := e.readyReason(t, three[2], tenancyv1alpha1.QueuedReason)
	if !strings.Contains(msg, "NamespaceBudget fleet-team") || !strings.Contains(msg, "claims=1, available: 0") {
		t.Errorf("Queued message does not name the budget and what it lacks: %q", msg)
	}
	c, err := e.get(ctx, three[2])
	must(t, err)
	if c.Status.Cluster != "" {
		t.Fatalf("%s was placed on %s beyond its budget", three[2], c.Status.Cluster)
	}
	for _, m := range members {
		err := e.admins[m].Get(ctx, client.ObjectKey{Namespace: memberNS, Name: fleet.MirrorName(requesterNS, three[2])}, &tenancyv1alpha1.NamespaceClaim{})
		if !apierrors.IsNotFound(err) {
			t.Errorf("%s, queued on the hub, has a mirror on %s (err %v)", three[2], m, err)
		}
	}
	e.release(t, three[0])
	if counts := e.placed(t, three[2:]); counts["m3"] != 1 {
		t.Errorf("%s placed %v once the budget had room, want m3", three[2], counts)
	}
}
