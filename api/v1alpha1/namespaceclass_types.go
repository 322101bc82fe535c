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
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// NetworkPolicyPreset names a NetworkPolicy that a class installs in each namespace.
// +kubebuilder:validation:Enum=None;DenyFromOtherNamespaces
type NetworkPolicyPreset string

const (
	// NetworkPolicyNone installs no NetworkPolicy.
	NetworkPolicyNone NetworkPolicyPreset = "None"
	// NetworkPolicyDenyFromOtherNamespaces admits ingress only from Pods of the same namespace.
	NetworkPolicyDenyFromOtherNamespaces NetworkPolicyPreset = "DenyFromOtherNamespaces"
)

// PodSecurityLevel is a Pod Security Admission level.
// +kubebuilder:validation:Enum=privileged;baseline;restricted
type PodSecurityLevel string

const (
	// PodSecurityPrivileged is the unrestricted Pod Security level.
	PodSecurityPrivileged PodSecurityLevel = "privileged"
	// PodSecurityBaseline prevents known privilege escalations.
	PodSecurityBaseline PodSecurityLevel = "baseline"
	// PodSecurityRestricted enforces current Pod hardening best practice.
	PodSecurityRestricted PodSecurityLevel = "restricted"
)

// NamespaceClassSpec defines what a namespace of this class looks like, how long it lives, and who may
// ask for one.
// +kubebuilder:validation:XValidation:rule="!has(self.lifetime) || !has(self.lifetime.defaultTTL) || !has(self.lifetime.maxTTL) || duration(self.lifetime.defaultTTL) <= duration(self.lifetime.maxTTL)",message="lifetime.defaultTTL must not exceed lifetime.maxTTL"
// +kubebuilder:validation:XValidation:rule="!has(self.lifetime) || !has(self.lifetime.maxKeep) || has(self.lifetime.idleTTL)",message="lifetime.maxKeep bounds spec.keep, which replaces lifetime.idleTTL: set lifetime.idleTTL too"
// +kubebuilder:validation:XValidation:rule="!has(self.lifetime) || !has(self.lifetime.maxKeep) || !has(self.lifetime.idleTTL) || duration(self.lifetime.idleTTL) <= duration(self.lifetime.maxKeep)",message="lifetime.idleTTL must not exceed lifetime.maxKeep"
// +kubebuilder:validation:XValidation:rule="!has(self.lifetime) || !has(self.lifetime.sleepAfter) || !has(self.lifetime.idleTTL) || duration(self.lifetime.sleepAfter) < duration(self.lifetime.idleTTL)",message="lifetime.sleepAfter must be shorter than lifetime.idleTTL: a namespace sleeps before it idles out, so sleeping after the idle TTL would never happen"
// +kubebuilder:validation:XValidation:rule="!has(self.credentials) || !has(self.credentials.tokenTTL) || !has(self.credentials.renewBefore) || duration(self.credentials.renewBefore) < duration(self.credentials.tokenTTL)",message="credentials.renewBefore must be shorter than credentials.tokenTTL"
type NamespaceClassSpec struct {
	// default marks this class as the one used by claims that name no class. At most one class
	// should be the default; when several are, claims without a class are refused.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Default Class",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:booleanSwitch"}
	Default bool `json:"default,omitempty"`

	// clusterRole is the ClusterRole bound to the claim's identity inside its namespace. The operator
	// must hold `bind` on it (it ships with bind on edit, view and admin; see docs/security.md).
	// +optional
	// +kubebuilder:default=edit
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Cluster Role",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:text"}
	ClusterRole string `json:"clusterRole,omitempty"`

	// extraRoleBindings are further RoleBindings created in each namespace, for example a team group
	// with `view`.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=16
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Extra Role Bindings",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:advanced"}
	ExtraRoleBindings []ExtraRoleBinding `json:"extraRoleBindings,omitempty"`

	// resourceQuota, when set, becomes a ResourceQuota named nsclaim-quota in each namespace.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Resource Quota",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:advanced"}
	ResourceQuota *corev1.ResourceQuotaSpec `json:"resourceQuota,omitempty"`

	// limitRange, when set, becomes a LimitRange named nsclaim-limits in each namespace.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Limit Range",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:advanced"}
	LimitRange *corev1.LimitRangeSpec `json:"limitRange,omitempty"`

	// networkPolicy selects a NetworkPolicy preset installed in each namespace.
	// +optional
	// +kubebuilder:default=None
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Network Policy",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:select:None","urn:alm:descriptor:com.tectonic.ui:select:DenyFromOtherNamespaces"}
	NetworkPolicy NetworkPolicyPreset `json:"networkPolicy,omitempty"`

	// podSecurity is the Pod Security Admission level enforced (and warned and audited) in each
	// namespace.
	// +optional
	// +kubebuilder:default=baseline
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Pod Security Level",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:select:privileged","urn:alm:descriptor:com.tectonic.ui:select:baseline","urn:alm:descriptor:com.tectonic.ui:select:restricted"}
	PodSecurity PodSecurityLevel `json:"podSecurity,omitempty"`

	// namespaceLabels are added to each namespace. Keys of nsclaim and of Pod Security Admission are
	// reserved.
	// +optional
	// +kubebuilder:validation:MaxProperties=32
	// +kubebuilder:validation:XValidation:rule="self.all(k, !k.startsWith('tenancy.nsclaim.dev/') && !k.startsWith('pod-security.kubernetes.io/'))",message="namespaceLabels must not use the reserved prefixes tenancy.nsclaim.dev/ and pod-security.kubernetes.io/"
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Namespace Labels",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:label","urn:alm:descriptor:com.tectonic.ui:advanced"}
	NamespaceLabels map[string]string `json:"namespaceLabels,omitempty"`

	// namespaceAnnotations are added to each namespace. Keys of nsclaim are reserved.
	// +optional
	// +kubebuilder:validation:MaxProperties=32
	// +kubebuilder:validation:XValidation:rule="self.all(k, !k.startsWith('tenancy.nsclaim.dev/'))",message="namespaceAnnotations must not use the reserved prefix tenancy.nsclaim.dev/"
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Namespace Annotations",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:advanced"}
	NamespaceAnnotations map[string]string `json:"namespaceAnnotations,omitempty"`

	// allowedClaimLabels lists the label keys a claim may add to its namespace.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:MaxLength=317
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Allowed Claim Labels",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:advanced"}
	AllowedClaimLabels []string `json:"allowedClaimLabels,omitempty"`

	// naming controls how namespace names are derived.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Naming"
	Naming NamingSpec `json:"naming,omitempty"`

	// lifetime bounds how long a namespace lives.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Lifetime"
	Lifetime LifetimeSpec `json:"lifetime,omitempty"`

	// credentials controls the tokens handed to the claim.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Credentials",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:advanced"}
	Credentials CredentialsSpec `json:"credentials,omitempty"`

	// access limits who may use this class.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Access"
	Access AccessSpec `json:"access,omitempty"`

	// pool keeps namespaces of this class made ahead, so a claim is handed one at once instead of
	// waiting for a new one (docs/pool.md).
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Pool"
	Pool PoolSpec `json:"pool,omitempty"`

	// seeds are objects copied from the operator's seed namespace into each claimed namespace
	// (docs/seeds.md): at most 16, Secrets and ConfigMaps, no two copies of one kind with one name (the
	// rules read `as` as `__as__`, for as is a CEL keyword).
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:XValidation:rule="self.all(s, self.exists_one(t, t.kind == s.kind && (has(t.__as__) ? t.__as__ : t.name) == (has(s.__as__) ? s.__as__ : s.name)))",message="seeds must not name two copies of the same kind with the same name (as, or name when as is unset)"
	// +kubebuilder:validation:XValidation:rule="self.all(s, s.kind != 'ConfigMap' || (has(s.__as__) ? s.__as__ : s.name) != 'kube-root-ca.crt')",message="seeds must not copy over kube-root-ca.crt, which Kubernetes writes in every namespace"
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Seeds",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:advanced"}
	Seeds []Seed `json:"seeds,omitempty"`

	// placement says where a fleet hub places this class's claims (docs/fleet.md); ignored outside hub mode.
	// +optional
	Placement *PlacementSpec `json:"placement,omitempty"`
}

// PoolSpec sizes a class's warm pool. A pooled namespace is made like a claim's (Pod Security labels,
// quota, limit range, network policy, the tenant ServiceAccount) but bound to nobody, with no token and
// no Secret; a claim that does not set spec.namespaceName takes one and gets its name, the class's
// naming.prefix followed by random characters. A claim that sets spec.namespaceName never gets a pooled
// namespace.
type PoolSpec struct {
	// size is how many namespaces of this class the operator keeps ready for claims. 0 (the default)
	// turns the pool off and deletes the namespaces it holds.
	// +optional
	// +kubebuilder:validation:XValidation:rule="self >= 0 && self <= 100",message="pool.size must be between 0 (no pool) and 100"
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Pool Size",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:podCount"}
	Size int32 `json:"size,omitempty"`
}

// PoolStatus counts a class's pooled namespaces.
type PoolStatus struct {
	// ready counts the pooled namespaces a claim may be handed now.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Pool Ready",xDescriptors={"urn:alm:descriptor:text"}
	Ready int32 `json:"ready"`
	// creating counts the pooled namespaces kube-controller-manager has not made usable yet.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Pool Creating",xDescriptors={"urn:alm:descriptor:text"}
	Creating int32 `json:"creating"`
}

// ExtraRoleBinding is a RoleBinding that a class adds to each namespace.
type ExtraRoleBinding struct {
	// name is the RoleBinding's name, prefixed with `nsclaim-` in the namespace.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Name",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:text"}
	Name string `json:"name"`

	// clusterRole is the ClusterRole bound. The operator must hold `bind` on it.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Cluster Role",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:text"}
	ClusterRole string `json:"clusterRole"`

	// subjects receive the role in the namespace.
	// +required
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	// +listType=atomic
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Subjects"
	Subjects []rbacv1.Subject `json:"subjects"`
}

// NamingSpec controls how a claim's namespace name is derived.
type NamingSpec struct {
	// prefix is put in front of every namespace name of this class, for example `ci-`.
	// +optional
	// +kubebuilder:validation:MaxLength=30
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*)?$`
	// +kubebuilder:validation:XValidation:rule="!self.startsWith('kube-') && self != 'kube'",message="naming.prefix must not start with kube-: those names belong to Kubernetes"
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Namespace Prefix",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:text"}
	Prefix string `json:"prefix,omitempty"`
}

// LifetimeSpec bounds how long a namespace of a class lives.
type LifetimeSpec struct {
	// defaultTTL is the lifetime of a namespace whose claim names none.
	// +optional
	// +kubebuilder:default="24h"
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1m')",message="lifetime.defaultTTL must be at least 1m"
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Default TTL",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:text"}
	DefaultTTL *metav1.Duration `json:"defaultTTL,omitempty"`

	// maxTTL is the longest lifetime a claim may ask for.
	// +optional
	// +kubebuilder:default="168h"
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1m')",message="lifetime.maxTTL must be at least 1m"
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Maximum TTL",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:text"}
	MaxTTL *metav1.Duration `json:"maxTTL,omitempty"`

	// idleTTL deletes a namespace that has been idle this long: no Pod Pending or Running in it and
	// no heartbeat (docs/lifecycle.md). The idle clock starts when the operator first observes the
	// namespace, when it sees the last Pod Pending or Running there end, or at the last heartbeat,
	// whichever is latest. Unset means namespaces of this class never expire for idleness. The hard TTL (ttl, up to
	// maxTTL) always applies too: the earlier of the two wins.
	// +optional
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1m') && duration(self) <= duration('8760h')",message="lifetime.idleTTL must be between 1m and 8760h"
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Idle TTL",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:text"}
	IdleTTL *metav1.Duration `json:"idleTTL,omitempty"`

	// maxKeep is the longest idle time a claim may ask for with spec.keep (which replaces idleTTL for
	// that claim). Unset means a claim may not keep its namespace idle longer than idleTTL. It needs
	// idleTTL and must not be below it.
	// +optional
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1m') && duration(self) <= duration('8760h')",message="lifetime.maxKeep must be between 1m and 8760h"
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Maximum Keep",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:text"}
	MaxKeep *metav1.Duration `json:"maxKeep,omitempty"`

	// sleepAfter puts a namespace to sleep once it has been idle this long (no Pod Pending or Running,
	// no heartbeat; the same idle clock as idleTTL): its Deployments and StatefulSets are scaled to 0
	// and its CronJobs suspended, and the claim's phase is Sleeping. A heartbeat (kubectl nsclaim
	// heartbeat, extend or wake) wakes it: what was scaled down is scaled back to the recorded counts
	// (docs/lifecycle.md). Unset means namespaces of this class never sleep. It must be shorter than
	// idleTTL when both are set; the hard TTL and the idle TTL still end a sleeping namespace.
	// +optional
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1m') && duration(self) <= duration('8760h')",message="lifetime.sleepAfter must be between 1m and 8760h"
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Sleep After",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:text"}
	SleepAfter *metav1.Duration `json:"sleepAfter,omitempty"`
}

// CredentialsMode says what a claim of a class receives.
// +kubebuilder:validation:Enum=Token;Requester
type CredentialsMode string

const (
	// CredentialsModeToken: a ServiceAccount in the namespace is bound, and a kubeconfig with its token
	// is written to a Secret next to the claim.
	CredentialsModeToken CredentialsMode = "Token"
	// CredentialsModeRequester: the namespace's role binding names the identity that created the claim,
	// as the API server recorded it in the claim's spec.creator. No token is minted and no Secret is
	// written: the pipeline uses its own credentials (for example its CI provider's OIDC token).
	CredentialsModeRequester CredentialsMode = "Requester"
)

// CredentialsSpec controls what a claim receives: a token of a ServiceAccount (mode Token, with its
// lifetime), or a binding of the claim's creator (mode Requester).
// +kubebuilder:validation:XValidation:rule="!has(self.mode) || self.mode != 'Requester' || (has(self.requester) && has(self.requester.allowedUsernames) && size(self.requester.allowedUsernames) > 0)",message="credentials.requester.allowedUsernames is required when credentials.mode is Requester"
type CredentialsSpec struct {
	// mode is Token (the default: a ServiceAccount token in a kubeconfig Secret next to the claim) or
	// Requester (the namespace's role binding names the claim's creator as recorded by the API server
	// in spec.creator; no token, no Secret). Requester needs the creator-stamping admission policy of
	// config/fence (see docs/keyless.md); without it such claims are refused with CreatorNotStamped.
	// +optional
	// +kubebuilder:default=Token
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Credentials Mode",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:select:Token","urn:alm:descriptor:com.tectonic.ui:select:Requester"}
	Mode CredentialsMode `json:"mode,omitempty"`

	// requester says which creators may use a class of mode Requester, and which of their groups are
	// bound besides their username.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Requester",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:advanced"}
	Requester *RequesterCredentials `json:"requester,omitempty"`

	// tokenTTL is the lifetime requested for each token (the TokenRequest API's minimum is 10m).
	// +optional
	// +kubebuilder:default="1h"
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('10m') && duration(self) <= duration('48h')",message="credentials.tokenTTL must be between 10m and 48h"
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Token TTL",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:text"}
	TokenTTL *metav1.Duration `json:"tokenTTL,omitempty"`

	// renewBefore is how long before a token expires a new one is issued.
	// +optional
	// +kubebuilder:default="20m"
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1m')",message="credentials.renewBefore must be at least 1m"
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Renew Before",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:text"}
	RenewBefore *metav1.Duration `json:"renewBefore,omitempty"`
}

// RequesterCredentials admits creators to a class of credentials mode Requester.
type RequesterCredentials struct {
	// allowedUsernames are patterns of the usernames (as the API server authenticated them, for example
	// `github:repo:org/app:ref:*`) that may create claims of this class; `*` matches any run of
	// characters, everything else matches itself. A claim whose creator matches none is refused with
	// CreatorNotAdmitted.
	// +required
	// +listType=set
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=512
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Allowed Usernames",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:text"}
	AllowedUsernames []string `json:"allowedUsernames"`

	// bindGroups are groups that, when the creator carries them, are bound in the namespace too (with
	// the same role). Groups not listed here are never bound.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=512
	// +kubebuilder:validation:XValidation:rule="self.all(g, !g.startsWith('system:'))",message="credentials.requester.bindGroups must not name system: groups"
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Bind Groups",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:text"}
	BindGroups []string `json:"bindGroups,omitempty"`
}

// AccessSpec limits who may use a class.
type AccessSpec struct {
	// requesterNamespaceSelector selects the namespaces whose claims may use this class. Unset means
	// every namespace; an empty selector also matches every namespace.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Requester Namespace Selector",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:selector:core:v1:Namespace"}
	RequesterNamespaceSelector *metav1.LabelSelector `json:"requesterNamespaceSelector,omitempty"`

	// maxClaimsPerNamespace caps the active claims of this class in one requester namespace. Zero
	// means no cap.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=10000
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Max Claims per Namespace",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:number"}
	MaxClaimsPerNamespace int32 `json:"maxClaimsPerNamespace,omitempty"`
}

// NamespaceClassStatus reports whether the operator can provision namespaces of this class.
type NamespaceClassStatus struct {
	// observedGeneration is the generation the conditions were computed for.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Observed Generation",xDescriptors={"urn:alm:descriptor:text"}
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// conditions: Ready is True when the operator may bind every ClusterRole the class names and the
	// class's Pod Security level is allowed; False with a reason and a message naming the field
	// otherwise (ClusterRoleNotBindable, PodSecurityNotAllowed).
	// +optional
	// +listType=map
	// +listMapKey=type
	// +patchStrategy=merge
	// +patchMergeKey=type
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Conditions",xDescriptors={"urn:alm:descriptor:io.kubernetes.conditions"}
	Conditions []metav1.Condition `json:"conditions,omitempty" patchStrategy:"merge" patchMergeKey:"type"`

	// pool counts the class's pooled namespaces; unset when the class has no pool.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Pool"
	Pool *PoolStatus `json:"pool,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=nscls,categories=nsclaim
// +kubebuilder:printcolumn:name="Default",type=boolean,JSONPath=`.spec.default`
// +kubebuilder:printcolumn:name="Role",type=string,JSONPath=`.spec.clusterRole`
// +kubebuilder:printcolumn:name="Max TTL",type=string,JSONPath=`.spec.lifetime.maxTTL`
// +kubebuilder:printcolumn:name="Idle TTL",type=string,JSONPath=`.spec.lifetime.idleTTL`
// +kubebuilder:printcolumn:name="Pool",type=integer,JSONPath=`.spec.pool.size`,priority=1
// +kubebuilder:printcolumn:name="Pool Ready",type=integer,JSONPath=`.status.pool.ready`,priority=1
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +operator-sdk:csv:customresourcedefinitions:displayName="Namespace Class",resources={{Namespace,v1},{ServiceAccount,v1},{RoleBinding,v1},{Role,v1},{ResourceQuota,v1},{LimitRange,v1},{NetworkPolicy,v1}}

// NamespaceClass is an admin-defined template for namespaces that NamespaceClaims ask for.
type NamespaceClass struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec defines the class.
	// +required
	Spec NamespaceClassSpec `json:"spec"`

	// status reports whether the operator can provision namespaces of this class.
	// +optional
	Status NamespaceClassStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// NamespaceClassList contains a list of NamespaceClass.
type NamespaceClassList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []NamespaceClass `json:"items"`
}

func init() {
	SchemeBuilder.Register(&NamespaceClass{}, &NamespaceClassList{})
}
