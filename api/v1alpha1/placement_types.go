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

package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// PlacementStrategy chooses among the eligible member clusters of a fleet hub (docs/fleet.md).
// +kubebuilder:validation:Enum=LeastAllocated;Packed
type PlacementStrategy string

const (
	// PlacementLeastAllocated puts a claim on the eligible cluster with the lowest share of its cap in
	// use (the lowest count when no cap is set); ties go to the first name.
	PlacementLeastAllocated PlacementStrategy = "LeastAllocated"
	// PlacementPacked puts a claim on the first eligible cluster by name, so clusters fill one after
	// the other up to their cap.
	PlacementPacked PlacementStrategy = "Packed"
)

// PlacementSpec says where a fleet hub (--fleet-hub) places the claims of a class. A single-cluster
// operator ignores it.
type PlacementSpec struct {
	// clusterSelector selects the member clusters by the labels of their kubeconfig Secrets on the hub;
	// unset selects every member.
	// +optional
	ClusterSelector *metav1.LabelSelector `json:"clusterSelector,omitempty"`

	// maxClaimsPerCluster is how many claims of this class one member cluster holds at most; 0 (the
	// default) means no cap. Per-cluster caps (the member Secret's fleet.nsclaim.dev/max-claims
	// annotation) apply too.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100000
	MaxClaimsPerCluster int32 `json:"maxClaimsPerCluster,omitempty"`

	// strategy chooses among the eligible clusters: LeastAllocated (the default) or Packed.
	// +optional
	// +kubebuilder:default=LeastAllocated
	Strategy PlacementStrategy `json:"strategy,omitempty"`
}
