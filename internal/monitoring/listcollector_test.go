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
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
)

// TestListCollectors: what the pool, budget and fleet collectors report from the objects in the cache,
// and that an object without what a metric reads (a class without a pool, a budget with nothing
// queued, a claim not placed) leaves no series.
func TestListCollectors(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := tenancyv1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1e9, 0)
	placed := func(name, cluster, class string) *tenancyv1alpha1.NamespaceClaim {
		c := newClaim(name)
		c.Status.Cluster, c.Status.ClassName = cluster, class
		return c
	}
	for _, tc := range []struct {
		name      string
		objects   []client.Object
		collector func(client.Reader) prometheus.Collector
		metric    string
		want      string
	}{{
		name: "pool",
		objects: []client.Object{
			&tenancyv1alpha1.NamespaceClass{ObjectMeta: metav1.ObjectMeta{Name: "ci"}, Status: tenancyv1alpha1.NamespaceClassStatus{Pool: &tenancyv1alpha1.PoolStatus{Ready: 3, Creating: 2}}},
			&tenancyv1alpha1.NamespaceClass{ObjectMeta: metav1.ObjectMeta{Name: "no-pool"}},
		},
		collector: NewPoolCollector, metric: PoolNamespacesName,
		want: `nsclaim_pool_namespaces{class="ci",state="creating"} 2
nsclaim_pool_namespaces{class="ci",state="ready"} 3
`,
	}, {
		name: "budget",
		objects: []client.Object{
			&tenancyv1alpha1.NamespaceBudget{ObjectMeta: metav1.ObjectMeta{Name: "team-a"},
				Status: tenancyv1alpha1.NamespaceBudgetStatus{Queued: 4, OldestQueuedSince: &metav1.Time{Time: now.Add(-90 * time.Second)}}},
			&tenancyv1alpha1.NamespaceBudget{ObjectMeta: metav1.ObjectMeta{Name: "team-b"},
				Status: tenancyv1alpha1.NamespaceBudgetStatus{OldestQueuedSince: &metav1.Time{Time: now.Add(-time.Hour)}}},
		},
		collector: func(r client.Reader) prometheus.Collector {
			return newBudgetCollector(r, func() time.Time { return now })
		},
		metric: BudgetOldestWaitName,
		want: `nsclaim_budget_oldest_wait_seconds{budget="team-a"} 90
`,
	}, {
		name: "budget queued",
		objects: []client.Object{
			&tenancyv1alpha1.NamespaceBudget{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}, Status: tenancyv1alpha1.NamespaceBudgetStatus{Queued: 4}},
			&tenancyv1alpha1.NamespaceBudget{ObjectMeta: metav1.ObjectMeta{Name: "team-b"}},
		},
		collector: NewBudgetCollector, metric: BudgetQueuedName,
		want: `nsclaim_budget_queued_claims{budget="team-a"} 4
nsclaim_budget_queued_claims{budget="team-b"} 0
`,
	}, {
		name:      "fleet",
		objects:   []client.Object{placed("a", "m1", "ci"), placed("b", "m1", "ci"), placed("c", "m2", "dev"), newClaim("waiting")},
		collector: NewFleetCollector, metric: FleetClaimsName,
		want: `nsclaim_fleet_claims{class="ci",cluster="m1"} 2
nsclaim_fleet_claims{class="dev",cluster="m2"} 1
`,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			r := fake.NewClientBuilder().WithScheme(scheme).WithObjects(tc.objects...).WithStatusSubresource(tc.objects...).Build()
			d := lookup(tc.metric)
			want := "# HELP " + d.Name + " " + d.Help + "\n# TYPE " + d.Name + " gauge\n" + tc.want
			if err := testutil.CollectAndCompare(tc.collector(r), strings.NewReader(want), tc.metric); err != nil {
				t.Fatal(err)
			}
		})
	}
}
