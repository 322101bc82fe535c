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

// SeedKind is a kind of object a class may seed into its namespaces: namespaced kinds of an allow-list
// only (docs/seeds.md). The operator checks the list again on every apply path.
// +kubebuilder:validation:Enum=Secret;ConfigMap
// +kubebuilder:validation:MaxLength=16
type SeedKind string

const (
	// SeedKindSecret seeds a Secret (an image pull Secret, a shared credential).
	SeedKindSecret SeedKind = "Secret"
	// SeedKindConfigMap seeds a ConfigMap (a CA bundle, a shared configuration).
	SeedKindConfigMap SeedKind = "ConfigMap"
)

// SeedKinds is the allow-list of kinds a seed may copy, in the order the API lists them.
var SeedKinds = []SeedKind{SeedKindSecret, SeedKindConfigMap}

// ImagePullAttachment says which ServiceAccounts of a claimed namespace list a seeded Secret in their
// imagePullSecrets.
// +kubebuilder:validation:Enum=None;Tenant;TenantAndDefault
// +kubebuilder:validation:MaxLength=16
type ImagePullAttachment string

const (
	// ImagePullNone attaches the copy to no ServiceAccount.
	ImagePullNone ImagePullAttachment = "None"
	// ImagePullTenant lists the copy in the imagePullSecrets of the tenant ServiceAccount (nsclaim-tenant).
	ImagePullTenant ImagePullAttachment = "Tenant"
	// ImagePullTenantAndDefault lists it in the tenant's and in the namespace's `default` ServiceAccount's.
	ImagePullTenantAndDefault ImagePullAttachment = "TenantAndDefault"
)

// Seed names one object the operator copies into every claimed namespace of a class, from the one
// source namespace it is configured with (NSCLAIM_SEED_NAMESPACE). The source object must carry the
// label seeds.nsclaim.dev/class naming the class (or `All`): a class names a seed, the source's owner
// consents to it. Nothing in a claim can add or change a seed.
// +kubebuilder:validation:XValidation:rule="!has(self.imagePullSecret) || self.imagePullSecret == 'None' || self.kind == 'Secret'",message="seeds[].imagePullSecret applies to seeds of kind Secret only"
type Seed struct {
	// kind is the kind of the source object and of its copy: Secret or ConfigMap.
	// +required
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Kind",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:select:Secret","urn:alm:descriptor:com.tectonic.ui:select:ConfigMap"}
	Kind SeedKind `json:"kind"`

	// name is the source object's name in the seed namespace (a DNS-1123 subdomain). There is no
	// namespace field: the source namespace is the operator's, never the class's, choice.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$')",message="seeds[].name must be a DNS-1123 subdomain"
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Name",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:text"}
	Name string `json:"name"`

	// as is the copy's name in each claimed namespace; unset means the source's name. It must not be
	// kube-root-ca.crt, which Kubernetes writes in every namespace.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$')",message="seeds[].as must be a DNS-1123 subdomain"
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Copy Name",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:text"}
	As string `json:"as,omitempty"`

	// required makes a new claim wait for this seed: it is not Ready until the copy is in its
	// namespace. A claim that was Ready stays Ready when its source disappears (SeedsSynced turns
	// False) whatever this says.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Required",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:booleanSwitch"}
	Required bool `json:"required,omitempty"`

	// imagePullSecret lists a Secret's copy in the imagePullSecrets of the tenant ServiceAccount
	// (Tenant) or of it and the namespace's `default` ServiceAccount (TenantAndDefault). None (the
	// default) attaches it to none.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Image Pull Secret",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:select:None","urn:alm:descriptor:com.tectonic.ui:select:Tenant","urn:alm:descriptor:com.tectonic.ui:select:TenantAndDefault"}
	ImagePullSecret ImagePullAttachment `json:"imagePullSecret,omitempty"`
}

// SeedTarget is the name of a seed's copy in a claimed namespace: as, or the source's name.
func (s Seed) SeedTarget() string {
	if s.As != "" {
		return s.As
	}
	return s.Name
}

// Well-known names of seeds.
const (
	// SeedClassLabel on a source object in the seed namespace names the class that may copy it, or
	// SeedAnyClass for every class: the source owner's consent. An object without it is never copied.
	SeedClassLabel = "seeds.nsclaim.dev/class"
	// SeedAnyClass is the value of SeedClassLabel that lets every class copy the object. (`*` is no
	// valid label value; a class's name is lowercase, so it is never `All`.)
	SeedAnyClass = "All"
	// SeedLabel marks a copy in a claimed namespace; its value is the copy's kind. The operator's
	// caches select copies by it.
	SeedLabel = "seeds.nsclaim.dev/seed"
	// SeedSourceNamespaceAnnotation, SeedSourceNameAnnotation and SeedSourceUIDAnnotation on a copy
	// record its origin: the source object, by namespace, name and UID.
	SeedSourceNamespaceAnnotation = "seeds.nsclaim.dev/source-namespace"
	// SeedSourceNameAnnotation: see SeedSourceNamespaceAnnotation.
	SeedSourceNameAnnotation = "seeds.nsclaim.dev/source-name"
	// SeedSourceUIDAnnotation: see SeedSourceNamespaceAnnotation.
	SeedSourceUIDAnnotation = "seeds.nsclaim.dev/source-uid"
	// SeedDigestAnnotation on a copy is the SHA-256 of the content it was written with (type, data,
	// binaryData, immutable): a copy whose content no longer matches it was edited by someone else.
	SeedDigestAnnotation = "seeds.nsclaim.dev/digest"
	// SeedNamespaceEnv names the operator's one seed namespace; unset (the default) turns seeds off.
	SeedNamespaceEnv = "NSCLAIM_SEED_NAMESPACE"
)

// Condition type and reasons of seeds.
const (
	// SeedsSyncedCondition reports the copies of the class's seeds in the claim's namespace; its
	// message gives the reason of every seed that is not synced.
	SeedsSyncedCondition = "SeedsSynced"

	// SeedsSyncedReason: every seed of the class is copied and matches its source.
	SeedsSyncedReason = "Synced"
	// SeedsDisabledReason: the class names seeds but the operator has no seed namespace
	// (NSCLAIM_SEED_NAMESPACE is unset).
	SeedsDisabledReason = "SeedsDisabled"
	// SeedSourceNotFoundReason: a seed's source object is not in the seed namespace.
	SeedSourceNotFoundReason = "SeedSourceNotFound"
	// SeedNotConsentedReason: a seed's source object lacks the label seeds.nsclaim.dev/class naming the
	// class (or `All`); it is never copied.
	SeedNotConsentedReason = "SeedNotConsented"
	// SeedKindNotAllowedReason: a seed names a kind outside the allow-list (Secret, ConfigMap).
	SeedKindNotAllowedReason = "SeedKindNotAllowed"
	// SeedConflictReason: the object of the copy's name in the claim's namespace could not be made the
	// copy again: the admission fence refused the write (a fence older than the operator's release,
	// which lets it change only Secrets that still carry its labels).
	SeedConflictReason = "SeedConflict"
)

// SeedSourceReplacedReason: a seed's source was deleted and made again (a new UID) since the copy in
// this claim's namespace was made; the copy is kept as it was and the new source is not copied until
// its owner acknowledges the replacement with the annotation seeds.nsclaim.dev/replaces naming the
// previous UID.
const SeedSourceReplacedReason = "SeedSourceReplaced"

// SeedReplacesAnnotation on a source object names the UID of the source it replaces: its owner's
// acknowledgement that claims holding a copy of the previous source may take the new one.
const SeedReplacesAnnotation = "seeds.nsclaim.dev/replaces"

// SeedStatus is what a claim's namespace holds of one seed: the copy, the source UID it was copied
// from (pinned: a source of another UID is not taken silently), and why it is not synced.
type SeedStatus struct {
	// kind is the seed's kind.
	// +required
	Kind SeedKind `json:"kind"`
	// name is the copy's name in the claim's namespace.
	// +required
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
	// sourceUID is the UID of the source object the copy was made from.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	SourceUID string `json:"sourceUID,omitempty"`
	// reason is Synced, or why the copy is not in sync (a SeedsSynced reason).
	// +optional
	// +kubebuilder:validation:MaxLength=64
	Reason string `json:"reason,omitempty"`
	// imagePullSecret is where the operator listed the copy as an image pull Secret when it last wrote
	// the ServiceAccounts (Tenant or TenantAndDefault; unset: on none). The `default` ServiceAccount is
	// written again only when what it should list differs from this record: the operator caches no
	// `default` ServiceAccount's imagePullSecrets, and a rotation must not cost a write of it per claim.
	// +optional
	ImagePullSecret ImagePullAttachment `json:"imagePullSecret,omitempty"`
}
