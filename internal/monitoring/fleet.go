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
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
)

// NewFleetCollector returns a collector of FleetClaimsName from the hub's NamespaceClaims in r (the
// manager's cache) at every scrape: a member with no claim left has no series. Registered in hub mode
// only.
func NewFleetCollector(r client.Reader) prometheus.Collector {
	return newListCollector(r, "NamespaceClaims (fleet)", func(claims *tenancyv1alpha1.NamespaceClaimList, d []*prometheus.Desc, ch chan<- prometheus.Metric) {
		type key struct{ cluster, class string }
		counts := map[key]int{}
		for i := range claims.Items {
			if st := &claims.Items[i].Status; st.Cluster != "" {
				counts[key{st.Cluster, st.ClassName}]++
			}
		}
		for k, n := range counts {
			gauge(ch, d[0], float64(n), k.cluster, k.class)
		}
	}, FleetClaimsName)
}
