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

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// BudgetQueueing is the order in which a budget admits the claims waiting for it.
// +kubebuilder:validation:Enum=StrictFIFO;BestEffortFIFO
type BudgetQueueing string

const (
	// BudgetQueueingStrictFIFO admits claims in claim order (creation time, then name): a claim that
	// fits waits while an older one does not fit.
	BudgetQueueingStrictFIFO BudgetQueueing = "StrictFIFO"
	// BudgetQueueingBestEffortFIFO admits any waiting claim that fits, oldest first.
	BudgetQueueingBestEffortFIFO BudgetQueueing = "BestEffortFIFO"
)

// BudgetExhaustedPolicy is what a budget does with a claim that does not fit.
// +kubebuilder:validation:Enum=Queue;Reject;EvictIdle
type BudgetExhaustedPolicy string

const (
	// BudgetExhaustedQueue keeps the claim waiting (Ready=False, reason Queued) until it fits.
	BudgetExhaustedQueue BudgetExhaustedPolicy = "Queue"
	// BudgetExhaustedReject refuses the claim (reason BudgetExhausted).
	BudgetExhaustedReject BudgetExhaustedPolicy = "Reject"
	// BudgetExhaustedEvictIdle deletes the least recently active claim of the same requester whose class
	// has an idle TTL, and queues the claim until the evicted namespace is gone.
	BudgetExhaustedEvictIdle BudgetExhaustedPolicy = "EvictIdle"
)

// BudgetRequesters selects the claims a budget covers: those made in a requester namespace the selector
// matches, or (keyless claims, made through a request) whose creator one of creators matches.
// +kubebuilder:validation:XValidation:rule="has(self.namespaceSelector) || (has(self.creators) && size(self.creators) > 0)",message="requesters needs a namespaceSelector or at least one creators entry"
type BudgetRequesters struct {
	// namespaceSelector selects the requester namespaces by their labels. An empty selector matches
	// every namespace.
	// +optional
	NamespaceSelector *metav1.LabelSelector `json:"namespaceSelector,omitempty"`

	// creators match the authenticated creator of a keyless claim (spec.creator): by username, or by one
	// value of one of its extra fields (a repository claim of a workload identity).
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	Creators []BudgetCreator `json:"creators,omitempty"`
}

// BudgetCreator matches a claim's creator: username, or extra[extraKey] containing extraValue.
// +kubebuilder:validation:XValidation:rule="has(self.username) != (has(self.extraKey) && has(self.extraValue))",message="a creators entry sets either username, or both extraKey and extraValue"
// +kubebuilder:validation:XValidation:rule="has(self.extraKey) == has(self.extraValue)",message="creators extraKey and extraValue go together"
type BudgetCreator struct {
	// username is the creator's username exactly, e.g. "github:repo:org/payments:ref:refs/heads/main".
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	Username string `json:"username,omitempty"`

	// extraKey names an extra field of the creator, e.g. "repository".
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	ExtraKey string `json:"extraKey,omitempty"`

	// extraValue is the value extraKey must contain, e.g. "org/payments".
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	ExtraValue string `json:"extraValue,omitempty"`
}

// BudgetLimits caps what the claims a budget covers may hold together: a number of claims, and per
// resource the sum of their classes' ResourceQuota hard.
// +kubebuilder:validation:XValidation:rule="has(self.claims) || (has(self.resources) && size(self.resources) > 0)",message="limits needs claims or at least one resources entry"
type BudgetLimits struct {
	// claims is the most claims that may hold a namespace at once (a Terminating one included).
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100000
	Claims *int32 `json:"claims,omitempty"`

	// resources caps, per ResourceQuota resource name (e.g. requests.cpu), the sum of the hard values of
	// the classes of the claims that hold a namespace. A class that sets no hard value for a capped
	// resource cannot be admitted by this budget.
	// +optional
	// +kubebuilder:validation:MaxProperties=32
	// +kubebuilder:validation:XValidation:rule="self.all(k, k.matches('^[a-z0-9]([-a-z0-9./]*[a-z0-9])?$') && size(k) <= 253)",message="limits.resources keys must be ResourceQuota resource names such as requests.cpu"
	Resources corev1.ResourceList `json:"resources,omitempty"`
}

// NamespaceBudgetSpec is a budget that the claims of some requesters share.
type NamespaceBudgetSpec struct {
	// requesters selects the claims this budget covers.
	// +required
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Requesters"
	Requesters BudgetRequesters `json:"requesters"`

	// limits caps what the covered claims hold together.
	// +required
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Limits"
	Limits BudgetLimits `json:"limits"`

	// perRequester caps what the claims of one requester (a requester namespace, or a keyless claim's
	// creator username) hold, within limits.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Per Requester",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:advanced"}
	PerRequester *BudgetLimits `json:"perRequester,omitempty"`

	// queueing is the admission order: StrictFIFO (claim order, no overtaking) or BestEffortFIFO (any
	// claim that fits, oldest first).
	// +optional
	// +kubebuilder:default=StrictFIFO
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Queueing",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:select:StrictFIFO","urn:alm:descriptor:com.tectonic.ui:select:BestEffortFIFO"}
	Queueing BudgetQueueing `json:"queueing,omitempty"`

	// onExhausted is what happens to a claim that does not fit: Queue, Reject or EvictIdle.
	// +optional
	// +kubebuilder:default=Queue
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="On Exhausted",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:select:Queue","urn:alm:descriptor:com.tectonic.ui:select:Reject","urn:alm:descriptor:com.tectonic.ui:select:EvictIdle"}
	OnExhausted BudgetExhaustedPolicy `json:"onExhausted,omitempty"`

	// maxQueueWait refuses a queued claim (reason QueueWaitExceeded) once it has waited this long.
	// Unset means a claim waits until it fits or is deleted.
	// +optional
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1s') && duration(self) <= duration('168h')",message="maxQueueWait must be between 1s and 168h"
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Max Queue Wait",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:text"}
	MaxQueueWait *metav1.Duration `json:"maxQueueWait,omitempty"`
}

// BudgetUsage is an amount of a budget: claims and resources.
type BudgetUsage struct {
	// claims is a number of claims.
	// +optional
	Claims int32 `json:"claims"`

	// resources is an amount per resource name.
	// +optional
	Resources corev1.ResourceList `json:"resources,omitempty"`
}

// NamespaceBudgetStatus is what the operator observed of a budget.
type NamespaceBudgetStatus struct {
	// observedGeneration is the generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// allocated is what the claims holding a namespace (Terminating and sleeping ones included) are
	// charged.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Allocated"
	Allocated BudgetUsage `json:"allocated,omitempty"`

	// available is limits minus allocated (never below zero), for the limits set.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Available"
	Available BudgetUsage `json:"available,omitempty"`

	// queued is the number of claims waiting for this budget.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Queued"
	Queued int32 `json:"queued"`

	// oldestQueuedSince is when the oldest waiting claim was created.
	// +optional
	OldestQueuedSince *metav1.Time `json:"oldestQueuedSince,omitempty"`

	// conditions: Ready (reason Available, or Exhausted when a claim waits or nothing more fits).
	// +optional
	// +listType=map
	// +listMapKey=type
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Conditions",xDescriptors={"urn:alm:descriptor:io.kubernetes.conditions"}
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=nsbudget,categories=nsclaim
// +kubebuilder:printcolumn:name="Claims",type=integer,JSONPath=`.status.allocated.claims`
// +kubebuilder:printcolumn:name="Max Claims",type=integer,JSONPath=`.spec.limits.claims`
// +kubebuilder:printcolumn:name="Queued",type=integer,JSONPath=`.status.queued`
// +kubebuilder:printcolumn:name="Queueing",type=string,JSONPath=`.spec.queueing`,priority=1
// +kubebuilder:printcolumn:name="On Exhausted",type=string,JSONPath=`.spec.onExhausted`,priority=1
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Message",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].message`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +operator-sdk:csv:customresourcedefinitions:displayName="Namespace Budget",resources={{NamespaceClaim,v1alpha1},{Namespace,v1}}

// NamespaceBudget caps what a team's claims hold together across its requester namespaces, classes and
// repositories, and queues the claims that do not fit (docs/budgets.md).
type NamespaceBudget struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec defines the budget.
	// +required
	Spec NamespaceBudgetSpec `json:"spec"`

	// status reports what the budget holds and queues.
	// +optional
	Status NamespaceBudgetStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// NamespaceBudgetList contains a list of NamespaceBudget.
type NamespaceBudgetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []NamespaceBudget `json:"items"`
}

// Condition reasons of a NamespaceBudget and of the claims it covers.
const (
	// BudgetAvailableReason: the budget admits the next claim that asks (NamespaceBudget Ready=True).
	BudgetAvailableReason = "Available"
	// BudgetExhaustedReason: on a budget, claims wait or nothing more fits (Ready=False); on a claim,
	// the budget (onExhausted Reject) refused it.
	BudgetExhaustedReason = "BudgetExhausted"
	// QueuedReason: the claim waits for a budget (a wait, not a refusal); the message has its position
	// and what it requests against what is available.
	QueuedReason = "Queued"
	// QueueWaitExceededReason: the claim waited longer than its budget's maxQueueWait and was refused.
	QueueWaitExceededReason = "QueueWaitExceeded"
	// AdmittedReason (an Event): the claim left a budget's queue.
	AdmittedReason = "Admitted"
	// EvictedReason (an Event): the claim was deleted to make room for a newer claim of its requester
	// (onExhausted EvictIdle).
	EvictedReason = "Evicted"
)

func init() {
	SchemeBuilder.Register(&NamespaceBudget{}, &NamespaceBudgetList{})
}
