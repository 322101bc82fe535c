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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Below, the creator rule compares field by field, an absent uid, groups or extra equal to an empty one: the
// stamp writes `uid: ""`, `groups: []` and `extra: {}` for an identity without them, and a client that
// reads the claim into these Go types and updates it sends them absent (omitempty).

// NamespaceClaimSpec is what a pipeline asks for.
// +kubebuilder:validation:XValidation:rule="has(self.className) == has(oldSelf.className) && (!has(self.className) || self.className == oldSelf.className)",message="className is immutable"
// +kubebuilder:validation:XValidation:rule="has(self.namespaceName) == has(oldSelf.namespaceName) && (!has(self.namespaceName) || self.namespaceName == oldSelf.namespaceName)",message="namespaceName is immutable"
// +kubebuilder:validation:XValidation:rule="has(self.credentialsSecretName) == has(oldSelf.credentialsSecretName) && (!has(self.credentialsSecretName) || self.credentialsSecretName == oldSelf.credentialsSecretName)",message="credentialsSecretName is immutable"
// +kubebuilder:validation:XValidation:rule="has(self.preferredCluster) == has(oldSelf.preferredCluster) && (!has(self.preferredCluster) || self.preferredCluster == oldSelf.preferredCluster)",message="preferredCluster is immutable"
// +kubebuilder:validation:XValidation:rule="has(self.creator) == has(oldSelf.creator) && (!has(self.creator) || (self.creator.username == oldSelf.creator.username && (has(self.creator.uid) && size(self.creator.uid) > 0) == (has(oldSelf.creator.uid) && size(oldSelf.creator.uid) > 0) && (!has(self.creator.uid) || size(self.creator.uid) == 0 || self.creator.uid == oldSelf.creator.uid) && (has(self.creator.groups) ? self.creator.groups : []) == (has(oldSelf.creator.groups) ? oldSelf.creator.groups : []) && (has(self.creator.extra) ? self.creator.extra : {}) == (has(oldSelf.creator.extra) ? oldSelf.creator.extra : {})))",message="creator is recorded by the API server when the claim is created and is immutable"
type NamespaceClaimSpec struct {
	// className names the NamespaceClass to use; unset means the default class. Immutable.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Class Name",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:text"}
	ClassName string `json:"className,omitempty"`

	// namespaceName is the wanted namespace name, put after the class's prefix. Unset means one
	// derived from the claim's namespace and name. Immutable.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",message="namespaceName must be a DNS-1123 label: lower case letters, digits and '-', starting and ending with a letter or digit"
	// +kubebuilder:validation:XValidation:rule="!self.startsWith('kube-') && !(self in ['default', 'kube-system', 'kube-public', 'kube-node-lease'])",message="namespaceName must not be a system namespace or start with kube-"
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Namespace Name",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:text"}
	NamespaceName string `json:"namespaceName,omitempty"`

	// ttl is how long the namespace lives, counted from the claim's creation; unset means the class's
	// defaultTTL. It may be raised (up to the class's maxTTL) before the claim expires.
	// +optional
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1m') && duration(self) <= duration('8760h')",message="ttl must be between 1m and 8760h"
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="TTL",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:text"}
	TTL *metav1.Duration `json:"ttl,omitempty"`

	// keep is how long the namespace may stay idle (no Pod Pending or Running, no heartbeat) before it
	// is deleted, replacing the class's lifetime.idleTTL for this claim; unset means idleTTL. The class's
	// lifetime.maxKeep bounds it (a keep beyond is refused with KeepExceedsMaximum). It never moves the
	// hard TTL (spec.ttl): the earlier of the two ends the claim. A class without idleTTL ignores it.
	// +optional
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1m') && duration(self) <= duration('8760h')",message="keep must be between 1m and 8760h"
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Keep While Idle",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:text"}
	Keep *metav1.Duration `json:"keep,omitempty"`

	// labels are added to the namespace; the class must allow each key.
	// +optional
	// +kubebuilder:validation:MaxProperties=16
	// +kubebuilder:validation:XValidation:rule="self.all(k, !k.startsWith('tenancy.nsclaim.dev/') && !k.startsWith('pod-security.kubernetes.io/') && !k.startsWith('kubernetes.io/'))",message="labels must not use the reserved prefixes tenancy.nsclaim.dev/, pod-security.kubernetes.io/ and kubernetes.io/"
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Namespace Labels",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:label"}
	Labels map[string]string `json:"labels,omitempty"`

	// credentialsSecretName is the Secret, next to the claim, that receives the credentials; unset
	// means "<claim name>-kubeconfig". A Secret of that name that nsclaim did not make for this claim
	// is never read or changed (the claim reports SecretConflict). Immutable.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*$')",message="credentialsSecretName must be a DNS-1123 subdomain"
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Credentials Secret Name",xDescriptors={"urn:alm:descriptor:io.kubernetes:Secret"}
	CredentialsSecretName string `json:"credentialsSecretName,omitempty"`

	// creator is the identity that created the claim, recorded by the API server's admission (the
	// nsclaim-operator-stamp-creator MutatingAdmissionPolicy of config/fence replaces whatever the creator
	// sends). Classes of credentials mode Requester bind it. Immutable.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Creator",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:advanced"}
	Creator *ClaimCreator `json:"creator,omitempty"`

	// preferredCluster names the member cluster a fleet hub should place the claim on; honoured only
	// when that cluster is eligible, otherwise ignored (docs/fleet.md). Immutable.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*$')",message="preferredCluster must be a DNS-1123 subdomain (a member's kubeconfig Secret name)"
	PreferredCluster string `json:"preferredCluster,omitempty"`
}

// ClaimCreator is the authenticated identity of the request that created a claim.
type ClaimCreator struct {
	// username is the creator's username as authenticated by the API server.
	// +required
	// +kubebuilder:validation:MaxLength=1024
	Username string `json:"username"`

	// uid is the creator's UID as authenticated, if any.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	UID string `json:"uid,omitempty"`

	// groups are the creator's groups as authenticated.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=256
	// +kubebuilder:validation:items:MaxLength=1024
	Groups []string `json:"groups,omitempty"`

	// extra is the authenticator's extra information about the creator.
	// +optional
	// +kubebuilder:validation:MaxProperties=64
	Extra map[string][]string `json:"extra,omitempty"`
}

// IssuedToken records one token issued for a claim, by the credential ID the API server writes into the
// audit log of every request made with it.
type IssuedToken struct {
	// credentialID is the token's ID (its `jti` claim). The API server records it as the user extra
	// `authentication.kubernetes.io/credential-id` (value `JTI=<credentialID>`) in the audit log.
	// +required
	// +kubebuilder:validation:MaxLength=128
	CredentialID string `json:"credentialID"`

	// issuedAt is when the token was issued.
	// +required
	IssuedAt metav1.Time `json:"issuedAt"`

	// expiresAt is when the token expires.
	// +required
	ExpiresAt metav1.Time `json:"expiresAt"`
}

// NamespaceClaimStatus is what the operator observed and did.
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.cluster) || (has(self.cluster) && self.cluster == oldSelf.cluster)",message="cluster is never changed or removed once set"
type NamespaceClaimStatus struct {
	// observedGeneration is the generation last fully reconciled.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Observed Generation",xDescriptors={"urn:alm:descriptor:text"}
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// conditions: Ready summarises NamespaceReady, CredentialsReady and PermissionsVerified;
	// Expired is set once the TTL has passed.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +patchStrategy=merge
	// +patchMergeKey=type
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Conditions",xDescriptors={"urn:alm:descriptor:io.kubernetes.conditions"}
	Conditions []metav1.Condition `json:"conditions,omitempty" patchStrategy:"merge" patchMergeKey:"type"`

	// className is the class in use (the default class when the spec names none).
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Class Name",xDescriptors={"urn:alm:descriptor:text"}
	ClassName string `json:"className,omitempty"`

	// namespace is the name of the namespace provisioned for this claim.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Namespace",xDescriptors={"urn:alm:descriptor:io.kubernetes:Namespace"}
	Namespace string `json:"namespace,omitempty"`

	// credentialsSecretName is the Secret, next to the claim, holding kubeconfig, token, ca.crt and
	// namespace.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Credentials Secret",xDescriptors={"urn:alm:descriptor:io.kubernetes:Secret"}
	CredentialsSecretName string `json:"credentialsSecretName,omitempty"`

	// expiresAt is when the namespace will be deleted by its hard TTL (spec.ttl from the claim's
	// creation); idleExpiresAt may end it sooner.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Expires At",xDescriptors={"urn:alm:descriptor:text"}
	ExpiresAt *metav1.Time `json:"expiresAt,omitempty"`

	// phase is the claim's lifecycle phase, for people: Pending, Active (Ready, and a Pod Pending or
	// Running in the namespace), Idle (Ready, nothing running: the idle clock runs, see idleExpiresAt),
	// Sleeping (Ready, its workloads scaled down, see sleep), Refused, Expired or Terminating.
	// Conditions remain the contract for programs.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Phase",xDescriptors={"urn:alm:descriptor:io.kubernetes.phase"}
	Phase ClaimPhase `json:"phase,omitempty"`

	// podsActive is true while the operator sees a Pod Pending or Running (or Unknown) in the
	// namespace: the idle clock is stopped.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Pods Active",xDescriptors={"urn:alm:descriptor:text"}
	PodsActive bool `json:"podsActive,omitempty"`

	// lastActivity is when the idle clock last started: when the operator first saw the namespace, when
	// it saw the last Pod Pending or Running there end, or the latest heartbeat it accepted (never later
	// than when it read it), whichever is latest.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Last Activity",xDescriptors={"urn:alm:descriptor:text"}
	LastActivity *metav1.Time `json:"lastActivity,omitempty"`

	// idleExpiresAt is when the namespace will be deleted for idleness if nothing happens in it before
	// (lastActivity plus spec.keep or the class's lifetime.idleTTL). Unset
	// while a Pod is Pending or Running there, and when the class has no idleTTL. The earlier of
	// expiresAt and idleExpiresAt ends the claim.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Idle Expires At",xDescriptors={"urn:alm:descriptor:text"}
	IdleExpiresAt *metav1.Time `json:"idleExpiresAt,omitempty"`

	// sleep is set while the namespace sleeps (phase Sleeping; the class's lifetime.sleepAfter): when
	// it fell asleep and what the operator scaled down, so that a wake restores exactly that. Only the
	// operator writes it; the tenant cannot change the record (docs/lifecycle.md).
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Sleep",xDescriptors={"urn:alm:descriptor:text"}
	Sleep *SleepStatus `json:"sleep,omitempty"`

	// seeds lists the class's seeds copied into the namespace and the source UID each was copied from.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=16
	Seeds []SeedStatus `json:"seeds,omitempty"`

	// tokenExpiresAt is when the current token expires; a new one is issued before then.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Token Expires At",xDescriptors={"urn:alm:descriptor:text"}
	TokenExpiresAt *metav1.Time `json:"tokenExpiresAt,omitempty"`
	// tokenServiceAccountUID is the UID of the ServiceAccount the current token was issued for; a
	// recreated ServiceAccount invalidates the token, and a new one is issued. The operator keeps this
	// record here because it never reads Secrets.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Token ServiceAccount UID",xDescriptors={"urn:alm:descriptor:text"}
	TokenServiceAccountUID string `json:"tokenServiceAccountUID,omitempty"`

	// issuedTokens lists the tokens issued for this claim, newest first (at most 10), by credential ID,
	// so that an admin can join every API request made with the claim's credentials to the claim.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=10
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Issued Tokens",xDescriptors={"urn:alm:descriptor:text"}
	IssuedTokens []IssuedToken `json:"issuedTokens,omitempty"`

	// boundUser is, for a claim of a class of credentials mode Requester, the username bound in the
	// namespace (the claim's creator); empty in mode Token.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Bound User",xDescriptors={"urn:alm:descriptor:text"}
	BoundUser string `json:"boundUser,omitempty"`

	// cluster is, on a fleet hub, the member cluster the claim was placed on; written once, before
	// anything is made there, and never changed (docs/fleet.md).
	// +optional
	// +kubebuilder:validation:MaxLength=253
	Cluster string `json:"cluster,omitempty"`
}

// SleepStatus records a sleeping namespace: when it fell asleep and what the operator scaled down or
// suspended there.
type SleepStatus struct {
	// since is when the operator put the namespace to sleep.
	// +required
	Since metav1.Time `json:"since"`

	// workloads are the Deployments and StatefulSets the operator scaled to 0 and the CronJobs it
	// suspended, each with its UID and the value it had. A wake restores those values onto the objects
	// of the same UID only, and only while each is as the operator's own write left it (its generation
	// and the value written); an object replaced under the same name, changed by someone else while
	// asleep, or created while asleep, is left alone.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=256
	Workloads []SleptWorkload `json:"workloads,omitempty"`

	// reapplied counts the times the operator scaled a recorded object back to 0 (or suspended it
	// again) while the namespace slept, because something (a GitOps controller, the tenant) restored
	// it.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Reapplied int32 `json:"reapplied,omitempty"`
}

// WorkloadKind is a kind of object that sleep scales down or suspends.
// +kubebuilder:validation:Enum=Deployment;StatefulSet;CronJob
type WorkloadKind string

const (
	// WorkloadDeployment is an apps/v1 Deployment, scaled through its scale subresource.
	WorkloadDeployment WorkloadKind = "Deployment"
	// WorkloadStatefulSet is an apps/v1 StatefulSet, scaled through its scale subresource.
	WorkloadStatefulSet WorkloadKind = "StatefulSet"
	// WorkloadCronJob is a batch/v1 CronJob, suspended with spec.suspend.
	WorkloadCronJob WorkloadKind = "CronJob"
)

// SleptWorkload is one object a sleep changed, and the value to restore.
type SleptWorkload struct {
	// kind is Deployment, StatefulSet or CronJob.
	// +required
	Kind WorkloadKind `json:"kind"`

	// name is the object's name in the claim's namespace.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`

	// uid is the object's UID when it was put to sleep; only the object with this UID is restored.
	// +required
	// +kubebuilder:validation:MaxLength=64
	UID string `json:"uid"`

	// replicas is the Deployment's or StatefulSet's replica count before it was scaled to 0.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Replicas *int32 `json:"replicas,omitempty"`

	// generation is the object's metadata.generation right after the operator's own last write to it
	// (the sleep's, or a re-application while asleep); 0 until that write is made. A wake restores
	// the object only while it still has this generation and the value the operator wrote (0
	// replicas, or suspended): an object whose spec anyone else changed since is left alone.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Generation int64 `json:"generation,omitempty"`
}

// ClaimPhase is a claim's lifecycle phase as shown by `kubectl get nsc`.
// +kubebuilder:validation:Enum=Pending;Active;Idle;Sleeping;Refused;Expired;Terminating
type ClaimPhase string

const (
	// ClaimPhasePending: the claim is not Ready yet (provisioning, or waiting).
	ClaimPhasePending ClaimPhase = "Pending"
	// ClaimPhaseActive: Ready, and a Pod is Pending or Running in the namespace: the idle clock is stopped.
	ClaimPhaseActive ClaimPhase = "Active"
	// ClaimPhaseIdle: Ready, and no Pod is Pending or Running in the namespace.
	ClaimPhaseIdle ClaimPhase = "Idle"
	// ClaimPhaseSleeping: Ready, and the namespace sleeps (status.sleep): its Deployments and
	// StatefulSets are scaled to 0 and its CronJobs suspended until a heartbeat wakes it.
	ClaimPhaseSleeping ClaimPhase = "Sleeping"
	// ClaimPhaseRefused: the operator will not go on until someone acts (see the Ready condition).
	ClaimPhaseRefused ClaimPhase = "Refused"
	// ClaimPhaseExpired: the hard TTL or the idle TTL ended; the namespace is deleted.
	ClaimPhaseExpired ClaimPhase = "Expired"
	// ClaimPhaseTerminating: the claim or its namespace is being deleted.
	ClaimPhaseTerminating ClaimPhase = "Terminating"
)

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=nsc;nsclaim,categories=nsclaim
// +kubebuilder:validation:XValidation:rule="self.metadata.name.size() <= 63 && self.metadata.name.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",message="metadata.name must be a DNS-1123 label of at most 63 characters"
// +kubebuilder:printcolumn:name="Namespace",type=string,JSONPath=`.status.namespace`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Class",type=string,JSONPath=`.status.className`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Expires",type=string,JSONPath=`.status.expiresAt`
// +kubebuilder:printcolumn:name="Idle Expires",type=string,JSONPath=`.status.idleExpiresAt`
// +kubebuilder:printcolumn:name="Message",type=string,priority=1,JSONPath=`.status.conditions[?(@.type=="Ready")].message`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +operator-sdk:csv:customresourcedefinitions:displayName="Namespace Claim",resources={{Namespace,v1},{Secret,v1},{ServiceAccount,v1},{RoleBinding,v1}}

// NamespaceClaim asks for a namespace of a NamespaceClass and receives credentials that work there only.
type NamespaceClaim struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is what the pipeline asks for.
	// +optional
	Spec NamespaceClaimSpec `json:"spec,omitempty"`

	// status is what the operator did.
	// +optional
	Status NamespaceClaimStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// NamespaceClaimList contains a list of NamespaceClaim.
type NamespaceClaimList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []NamespaceClaim `json:"items"`
}

func init() {
	SchemeBuilder.Register(&NamespaceClaim{}, &NamespaceClaimList{})
}
