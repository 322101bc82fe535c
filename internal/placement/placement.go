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

// Package placement is a fleet hub's choice of a member cluster for a claim, pure: which members are
// eligible (Ready, reachable, selected by the class, fence intact, under every cap) and which of them
// takes the claim (LeastAllocated or Packed, ties to the first name, the claim's preferredCluster when
// it is eligible). It holds no client: the hub's fleet reconciler gathers the facts (docs/fleet.md).
package placement

import (
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/labels"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
)

// Member is what the hub knows of one member cluster when it places a claim.
type Member struct {
	// Name is the member's name: its kubeconfig Secret's name on the hub.
	Name string
	// Labels are the kubeconfig Secret's labels, matched by the class's clusterSelector.
	Labels map[string]string
	// NotReady, when set, says why the member takes no new claim (marked NotReady, or its API server
	// does not answer its readiness check).
	NotReady string
	// FenceNotIntact, when set, says how the member's admission fence is missing or altered.
	FenceNotIntact string
	// MaxClaims is the member's own cap on the claims the hub places there (all classes); 0 means none.
	MaxClaims int32
	// Placed is how many claims the hub has placed there (all classes, not yet gone).
	Placed int32
	// PlacedOfClass is how many claims of the class being placed the hub has placed there.
	PlacedOfClass int32
}

// Request is what is being placed: the class's placement and the claim's preferred cluster.
type Request struct {
	// Selector selects the members by label; nil selects every member.
	Selector labels.Selector
	// MaxPerCluster is the class's cap per member; 0 means none.
	MaxPerCluster int32
	// Strategy is LeastAllocated (also when empty) or Packed.
	Strategy tenancyv1alpha1.PlacementStrategy
	// Preferred is the claim's spec.preferredCluster; honoured only when eligible.
	Preferred string
}

// Decision is the outcome: the chosen member, or none and why.
type Decision struct {
	// Cluster is the chosen member's name; empty when no member is eligible.
	Cluster string
	// Ineligible has one line per member that may not take the claim, sorted by name.
	Ineligible []string
}

// Message is the NoEligibleCluster message: one line per member saying why not.
func (d Decision) Message() string {
	if len(d.Ineligible) == 0 {
		return "no member cluster is registered on the hub (kubeconfig Secrets labelled for the fleet)"
	}
	return "no member cluster may take the claim:\n" + strings.Join(d.Ineligible, "\n")
}

// Why says why m may not take a claim of req; empty when it may.
func Why(req Request, m Member) string {
	switch {
	case m.NotReady != "":
		return fmt.Sprintf("%s: NotReady: %s", m.Name, m.NotReady)
	case req.Selector != nil && !req.Selector.Matches(labels.Set(m.Labels)):
		return fmt.Sprintf("%s: not selected by the class's spec.placement.clusterSelector (%s)", m.Name, req.Selector)
	case m.FenceNotIntact != "":
		return fmt.Sprintf("%s: fence not intact: %s", m.Name, m.FenceNotIntact)
	case m.MaxClaims > 0 && m.Placed >= m.MaxClaims:
		return fmt.Sprintf("%s: full: %d of its %d claims placed", m.Name, m.Placed, m.MaxClaims)
	case req.MaxPerCluster > 0 && m.PlacedOfClass >= req.MaxPerCluster:
		return fmt.Sprintf("%s: full for this class: %d of spec.placement.maxClaimsPerCluster %d", m.Name, m.PlacedOfClass, req.MaxPerCluster)
	}
	return ""
}

// Choose places one claim among members. The result does not depend on the order of members.
func Choose(req Request, members []Member) Decision {
	sorted := append([]Member(nil), members...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	var d Decision
	var eligible []Member
	for _, m := range sorted {
		if why := Why(req, m); why != "" {
			d.Ineligible = append(d.Ineligible, why)
			continue
		}
		eligible = append(eligible, m)
	}
	if len(eligible) == 0 {
		return d
	}
	for _, m := range eligible {
		if m.Name == req.Preferred {
			d.Cluster = m.Name
			return d
		}
	}
	if req.Strategy == tenancyv1alpha1.PlacementPacked {
		d.Cluster = eligible[0].Name
		return d
	}
	best := eligible[0]
	for _, m := range eligible[1:] {
		if less(req, m, best) {
			best = m
		}
	}
	d.Cluster = best.Name
	return d
}

// less: a has a lower share of its capacity in use than b (compared exactly, by cross-multiplying);
// equal shares keep the earlier name (the caller walks names in order).
func less(req Request, a, b Member) bool {
	ua, ca := usage(req, a)
	ub, cb := usage(req, b)
	return int64(ua)*int64(cb) < int64(ub)*int64(ca)
}

// usage is the claims counted against m and the capacity they count against: the member's own cap on
// all its claims, else the class's cap on the class's claims, else the member's claims against a
// capacity of 1 (so uncapped members are compared by count).
func usage(req Request, m Member) (used, capacity int32) {
	switch {
	case m.MaxClaims > 0:
		return m.Placed, m.MaxClaims
	case req.MaxPerCluster > 0:
		return m.PlacedOfClass, req.MaxPerCluster
	}
	return m.Placed, 1
}
