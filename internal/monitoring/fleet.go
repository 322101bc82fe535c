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
	"context"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
)

// fleetCollector reports FleetClaimsName from the hub's claims when scraped.
type fleetCollector struct {
	reader client.Reader
	desc   *prometheus.Desc
}

// NewFleetCollector returns a collector of FleetClaimsName that lists the hub's NamespaceClaims from r
// (the manager's cache) at every scrape: a member with no claim left has no series. Registered in hub
// mode only.
func NewFleetCollector(r client.Reader) prometheus.Collector {
	d := lookup(FleetClaimsName)
	return &fleetCollector{reader: r, desc: prometheus.NewDesc(d.Name, d.Help, d.Labels, nil)}
}

// Describe implements prometheus.Collector.
func (c *fleetCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

// Collect implements prometheus.Collector.
func (c *fleetCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), collectTimeout)
	defer cancel()
	var claims tenancyv1alpha1.NamespaceClaimList
	if err := c.reader.List(ctx, &claims, client.UnsafeDisableDeepCopy); err != nil {
		logf.Log.WithName("monitoring").Error(err, "Listing NamespaceClaims for fleet metrics")
		return
	}
	type key struct{ cluster, class string }
	counts := map[key]int{}
	for i := range claims.Items {
		if st := &claims.Items[i].Status; st.Cluster != "" {
			counts[key{st.Cluster, st.ClassName}]++
		}
	}
	for k, n := range counts {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(n), k.cluster, k.class)
	}
}
