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
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/kubernetes"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
	"github.com/nsclaim/nsclaim-operator/test/invariants"
)

// TestClaimLimitHoldsUnderABurst: a requester namespace creates a burst of claims at once against a
// class that allows 3, cold and with a pool to hand out from. Never more than 3 of its namespaces exist;
// exactly 3 claims become Ready and the others wait with ClaimLimitExceeded. Deleting a Ready claim
// admits exactly one waiting claim, woken by its namespace's deletion (not by the minute's re-check).
func TestClaimLimitHoldsUnderABurst(t *testing.T) {
	requireEnvtest(t)
	t.Parallel()
	const limit, burst = 3, 10
	cases := []struct {
		name string
		opts []classOpt
	}{
		{"cold", nil},
		{"from a pool", []classOpt{withPool(2)}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			t.Cleanup(func() { checkInvariants(t) })
			g := NewWithT(t)
			class := newClass(t, append([]classOpt{withLimit(limit)}, tc.opts...)...)
			if tc.opts != nil {
				waitPoolReady(t, class, 2)
			}
			req := newRequesterNamespace(t, nil)
			peak := watchPeak(t, req)

			claims := make([]*tenancyv1alpha1.NamespaceClaim, burst)
			var wg sync.WaitGroup
			errs := make([]error, burst)
			start := make(chan struct{})
			for i := range claims {
				claims[i] = &tenancyv1alpha1.NamespaceClaim{}
				claims[i].Name, claims[i].Namespace = fmt.Sprintf("burst-%d", i), req
				claims[i].Spec.ClassName = class.Name
				wg.Go(func() {
					<-start
					errs[i] = k8s.Create(context.Background(), claims[i])
				})
			}
			close(start)
			wg.Wait()
			for i, err := range errs {
				g.Expect(err).NotTo(HaveOccurred(), "creating claim %d", i)
			}
			ready, waiting := limitOutcome(t, claims, limit)
			g.Expect(peak()).To(BeNumerically("<=", limit), "more namespaces than the limit existed at once")

			g.Expect(k8s.Delete(context.Background(), ready[0])).To(Succeed())
			remaining := append(ready[1:], waiting...)
			_, waiting = limitOutcome(t, remaining, limit)
			g.Expect(waiting).To(HaveLen(burst - limit - 1))
			g.Expect(peak()).To(BeNumerically("<=", limit), "more namespaces than the limit existed at once after a deletion")
		})
	}
}

// limitOutcome waits until exactly limit of claims are Ready (Provisioned) and the others wait with
// ClaimLimitExceeded, within less than the minute a refused claim waits to be checked again, and
// returns both groups.
func limitOutcome(t *testing.T, claims []*tenancyv1alpha1.NamespaceClaim, limit int) (ready, waiting []*tenancyv1alpha1.NamespaceClaim) {
	t.Helper()
	NewWithT(t).Eventually(func(g Gomega) {
		ready, waiting = nil, nil
		for _, c := range claims {
			rc := meta.FindStatusCondition(getClaim(g, c).Status.Conditions, tenancyv1alpha1.ReadyCondition)
			g.Expect(rc).NotTo(BeNil(), "claim %s has no Ready condition", c.Name)
			switch rc.Reason {
			case tenancyv1alpha1.ProvisionedReason:
				ready = append(ready, c)
			case tenancyv1alpha1.ClaimLimitExceededReason:
				waiting = append(waiting, c)
			}
		}
		g.Expect(ready).To(HaveLen(limit))
		g.Expect(waiting).To(HaveLen(len(claims) - limit))
	}).WithTimeout(45 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())
	return ready, waiting
}

// watchPeak watches the namespaces made for the claims of requesterNamespace, and returns a function
// that reports the most that existed at once (not being deleted) so far.
func watchPeak(t *testing.T, requesterNamespace string) func() int {
	t.Helper()
	cs, err := kubernetes.NewForConfig(cfg)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	live, err := invariants.WatchLiveNamespaces(ctx, cs, requesterNamespace)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	return live.Peak
}
