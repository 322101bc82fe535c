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

// Well-known names shared by the API, the operator and the admission fence.
const (
	// ClaimFinalizer holds a claim until its namespace is deleted: a namespaced claim cannot own a
	// cluster-scoped Namespace through an owner reference.
	ClaimFinalizer = "tenancy.nsclaim.dev/namespace"

	// ManagedByLabel marks every object the operator creates; its value is ManagedByValue. Caches and
	// the admission fence select on it.
	ManagedByLabel = "tenancy.nsclaim.dev/managed-by"
	// ManagedByValue is the value of ManagedByLabel.
	ManagedByValue = "nsclaim"

	// ClaimUIDLabel carries the UID of the claim that owns a namespace and its children.
	ClaimUIDLabel = "tenancy.nsclaim.dev/claim-uid"
	// ClaimNamespaceLabel carries the namespace of the owning claim.
	ClaimNamespaceLabel = "tenancy.nsclaim.dev/claim-namespace"
	// ClaimNameAnnotation carries the name of the owning claim.
	ClaimNameAnnotation = "tenancy.nsclaim.dev/claim-name"
	// ClassLabel carries the class a namespace was made from.
	ClassLabel = "tenancy.nsclaim.dev/class"
	// PoolLabel marks a namespace of a class's warm pool, bound to nobody, with the class as ClassLabel
	// gives it. A handout replaces it with the claim's ownership marks.
	PoolLabel = "tenancy.nsclaim.dev/pool"
	// PoolClassUIDLabel carries the UID of the class a pooled namespace was made for.
	PoolClassUIDLabel = "tenancy.nsclaim.dev/pool-class-uid"
	// PoolGenerationLabel carries the class generation a pooled namespace was made from; a pooled
	// namespace of another generation is deleted and made again.
	PoolGenerationLabel = "tenancy.nsclaim.dev/pool-generation"
	// PooledAnnotation on a claim's namespace records that it came from its class's pool.
	PooledAnnotation = "tenancy.nsclaim.dev/pooled"
	// OwnershipAnnotation on a namespace is nsclaim's record that it created the namespace for the
	// claim (or the pool) its marks name: a MAC, with a key only the operator reads, over the
	// namespace's name and creation time or UID and that claim's identity (internal/ownership). Labels
	// are an index; this record is the proof. A namespace whose record does not verify is never bound,
	// handed out, counted or deleted.
	OwnershipAnnotation = "tenancy.nsclaim.dev/ownership"
	// OwnershipKeySecret is the Secret, in the operator's namespace, that holds the key of the
	// ownership records. The operator creates it at its first start and may read only it.
	OwnershipKeySecret = "nsclaim-ownership-key"

	// TokenExpiresAtAnnotation on a credentials Secret records when its token expires (RFC 3339).
	TokenExpiresAtAnnotation = "tenancy.nsclaim.dev/token-expires-at"
	// ServiceAccountUIDAnnotation on a credentials Secret records the UID of the ServiceAccount the
	// token was issued for; a recreated ServiceAccount invalidates the token.
	ServiceAccountUIDAnnotation = "tenancy.nsclaim.dev/serviceaccount-uid"
	// RequestClaimUIDAnnotation on a request ConfigMap records the claim made for it: a request is
	// served once, and a ConfigMap whose claim is gone (released, or deleted) waits for garbage
	// collection instead of asking again.
	RequestClaimUIDAnnotation = "tenancy.nsclaim.dev/claim-uid"

	// TokenPolicyAnnotation on a NamespaceClaim or a request ConfigMap says how often a token is
	// issued: TokenPolicyMultipleTimes (the default: renewed before it expires, and re-issued when the
	// Secret is deleted) or TokenPolicyOnlyOnce (issued once, valid until the claim expires, never
	// renewed or re-issued, so a pipeline may delete the Secret once it has read it). The name is the
	// shell operator's (nsplease), so that existing pipelines keep working.
	TokenPolicyAnnotation = "nsplease.container.training/issue-token"
	// TokenPolicyOnlyOnce is a value of TokenPolicyAnnotation.
	TokenPolicyOnlyOnce = "only-once"
	// TokenPolicyMultipleTimes is a value of TokenPolicyAnnotation.
	TokenPolicyMultipleTimes = "multiple-times"

	// HeartbeatAnnotation on a NamespaceClaim is a heartbeat: an RFC 3339 time at which the pipeline
	// was active. Whoever may patch the claim (its requester) may send one (`kubectl nsclaim
	// heartbeat`). The operator restarts the idle clock from it, but never from a time later than the
	// moment it reads the annotation, nor earlier than the claim's creation; a value that does not
	// parse is ignored. It never moves the hard TTL.
	HeartbeatAnnotation = "tenancy.nsclaim.dev/heartbeat"

	// RequestLabel marks a NamespaceClaim that the operator made for a request ConfigMap; its value is
	// RequestConfigMap.
	RequestLabel = "tenancy.nsclaim.dev/request"
	// RequestConfigMap is the value of RequestLabel.
	RequestConfigMap = "configmap"

	// TenantServiceAccountName is the ServiceAccount in each namespace whose tokens are handed out.
	TenantServiceAccountName = "nsclaim-tenant"

	// RequestsNamespaceLabel marks the namespace of the ConfigMap protocol's requests, with the value
	// "true". The operator serves requests only in a namespace that carries it and does not carry
	// ManagedByLabel: one the operator created for the protocol, or one an admin labelled for it.
	RequestsNamespaceLabel = "tenancy.nsclaim.dev/requests-namespace"
	// RequestRefusalAnnotation on a request ConfigMap carries the refusal of its request
	// ("<Reason>: <message>"), so a pipeline reads it with `get` on its own ConfigMap and needs no right
	// to list the Events of every request.
	RequestRefusalAnnotation = "tenancy.nsclaim.dev/refusal"

	// NamespaceWatcherPrefix prefixes the per-namespace ClusterRole and ClusterRoleBinding that let a
	// tenant get, list and watch its own Namespace object by name (and nothing else), so that
	// `kubectl delete namespace <own>` can wait for the deletion with kubectl's default flags.
	NamespaceWatcherPrefix = "nsclaim-namespace-"
)

// Condition types of a NamespaceClaim.
const (
	// ReadyCondition summarises the others: True when the namespace is usable (its quota in force, its
	// default ServiceAccount made), and the credentials and permission self-test are all good.
	ReadyCondition = "Ready"
	// NamespaceReadyCondition reports the namespace and the objects inside it.
	NamespaceReadyCondition = "NamespaceReady"
	// CredentialsReadyCondition reports the credentials Secret and its token.
	CredentialsReadyCondition = "CredentialsReady"
	// PermissionsVerifiedCondition reports the permission self-test of the issued identity: rules
	// reviews made with its token, or a sample of SubjectAccessReviews behind an authorizer that cannot
	// list rules and for a keyless creator.
	PermissionsVerifiedCondition = "PermissionsVerified"
	// ExpiredCondition is True once the claim's TTL has passed, or its namespace stayed idle for its idle
	// TTL (reason IdleExpired), and its namespace was deleted.
	ExpiredCondition = "Expired"
	// PooledCondition reports, for a claim of a class with a pool that does not set
	// spec.namespaceName, whether its namespace came from the pool (PoolHit) or was made for it because
	// the pool was empty (PoolEmpty).
	PooledCondition = "Pooled"
	// ClusterReachableCondition reports, on a fleet hub, whether the member cluster a claim was placed
	// on (status.cluster) answers; a claim stays on its cluster while it does not.
	ClusterReachableCondition = "ClusterReachable"
)

// Condition reasons of a NamespaceClaim.
const (
	// ProvisionedReason: the namespace and everything in it match the class.
	ProvisionedReason = "Provisioned"
	// ProvisioningReason: work is in progress.
	ProvisioningReason = "Provisioning"
	// IssuedReason: a valid token is in the credentials Secret.
	IssuedReason = "Issued"
	// VerifiedReason: the self-test passed.
	VerifiedReason = "Verified"
	// PendingReason: a step waits for an earlier one.
	PendingReason = "Pending"

	// ClassNotFoundReason: spec.className names no NamespaceClass, or there is no default class.
	ClassNotFoundReason = "ClassNotFound"
	// AmbiguousDefaultClassReason: more than one class is marked default.
	AmbiguousDefaultClassReason = "AmbiguousDefaultClass"
	// ClassNotAllowedReason: the class's requesterNamespaceSelector does not select the claim's namespace.
	ClassNotAllowedReason = "ClassNotAllowed"
	// ClaimLimitExceededReason: the requester namespace already has maxClaimsPerNamespace active claims.
	ClaimLimitExceededReason = "ClaimLimitExceeded"
	// TTLExceedsMaximumReason: spec.ttl is above the class's lifetime.maxTTL.
	TTLExceedsMaximumReason = "TTLExceedsMaximum"
	// LabelNotAllowedReason: spec.labels has a key the class does not allow.
	LabelNotAllowedReason = "LabelNotAllowed"
	// NamespaceConflictReason: a namespace of that name exists and was not made by nsclaim for this claim.
	NamespaceConflictReason = "NamespaceConflict"
	// NamespaceTakenReason: another claim holds that namespace.
	NamespaceTakenReason = "NamespaceTaken"
	// OwnershipUnverifiedReason: a namespace carries this claim's (or a pool's) marks but not nsclaim's
	// ownership record for them: someone other than nsclaim marked it. It is never bound, handed out,
	// counted or deleted. Also the reason of the Warning Event that reports such a namespace.
	OwnershipUnverifiedReason = "OwnershipUnverified"
	// PooledNamespaceDiscardedReason: an Event reason, on a class, when a pooled namespace held more than
	// the pool made (a RoleBinding, a Pod, a ServiceAccount, a grant to its tenant made ahead) and was
	// deleted instead of handed out.
	PooledNamespaceDiscardedReason = "PooledNamespaceDiscarded"
	// SecretConflictReason: a Secret with the credentials Secret's name exists and is not ours.
	SecretConflictReason = "SecretConflict"
	// MissingPermissionsReason: the issued identity lacks a permission the class grants.
	MissingPermissionsReason = "MissingPermissions"
	// ExcessPermissionsReason: the issued identity can do something outside its namespace.
	ExcessPermissionsReason = "ExcessPermissions"
	// ExpiredReason: the TTL passed (or, on the Ready condition, the idle TTL); the namespace is deleted.
	ExpiredReason = "Expired"
	// IdleExpiredReason: the Expired condition's reason when the namespace stayed idle (no Pod Pending
	// or Running, no heartbeat) for spec.keep or the class's lifetime.idleTTL; the namespace is deleted.
	IdleExpiredReason = "IdleExpired"
	// KeepExceedsMaximumReason: spec.keep is above the class's lifetime.maxKeep (or its idleTTL when it
	// sets no maxKeep).
	KeepExceedsMaximumReason = "KeepExceedsMaximum"
	// NamespaceTerminatingReason: the namespace is being deleted; the message lists what blocks it.
	NamespaceTerminatingReason = "NamespaceTerminating"
	// ReleasedReason: the tenant deleted its namespace; the claim is deleted next.
	ReleasedReason = "Released"
	// NameNotAllowedReason: a request ConfigMap's name matches none of the configured patterns.
	NameNotAllowedReason = "NameNotAllowed"
	// RequestRejectedReason: the NamespaceClaim for a request ConfigMap could not be created.
	RequestRejectedReason = "RequestRejected"
	// InvalidTokenPolicyReason: the token policy annotation has a value other than only-once or
	// multiple-times.
	InvalidTokenPolicyReason = "InvalidTokenPolicy"
	// InternalErrorReason: an API call failed; the operator retries, and the message names the claim (with
	// its UID) for the cluster admin, who finds the error in the operator's log.
	InternalErrorReason = "InternalError"

	// ClusterRoleNotBindableReason: the class names, in spec.clusterRole or
	// spec.extraRoleBindings[i].clusterRole, a ClusterRole the operator may not bind.
	ClusterRoleNotBindableReason = "ClusterRoleNotBindable"
	// PodSecurityNotAllowedReason: the class's spec.podSecurity is weaker than the minimum the operator
	// is configured to create namespaces with.
	PodSecurityNotAllowedReason = "PodSecurityNotAllowed"
	// FenceNotIntactReason: the admission fence (config/fence) is missing or altered, and the operator
	// is configured to require it (the default): nothing is provisioned until it is installed as shipped.
	FenceNotIntactReason = "FenceNotIntact"
	// RequestsNamespaceNotAllowedReason: the ConfigMap protocol's requests namespace exists but was
	// neither created by the operator nor labelled for the protocol by an admin.
	RequestsNamespaceNotAllowedReason = "RequestsNamespaceNotAllowed"
	// TokenRevokedReason: the ServiceAccount of an only-once token was recreated, so the token is dead
	// and, by the claim's policy, not issued again.
	TokenRevokedReason = "TokenRevoked"
	// ValidReason: the Ready condition of a NamespaceClass whose ClusterRoles the operator may bind and
	// whose Pod Security level is allowed.
	ValidReason = "Valid"
	// OrphanedNamespaceReason: an Event reason, on a namespace nsclaim made whose claim no longer exists
	// (its finalizer was removed, or it was deleted while the operator was down): the namespace is deleted.
	OrphanedNamespaceReason = "OrphanedNamespace"
	// SleptReason: an Event reason, on a claim whose namespace was put to sleep (the class's
	// lifetime.sleepAfter): its Deployments and StatefulSets scaled to 0, its CronJobs suspended.
	SleptReason = "Slept"
	// WokeReason: an Event reason, on a claim whose sleeping namespace a heartbeat woke: the recorded
	// objects got their replicas back, or were resumed.
	WokeReason = "Woke"
	// SleepReappliedReason: an Event reason, on a claim whose namespace sleeps, when recorded objects
	// ran again (a GitOps controller or the tenant restored them) and were scaled down again.
	SleepReappliedReason = "SleepReapplied"
	// CreatorNotStampedReason: the claim's class binds the creator (credentials mode Requester) but the
	// claim carries no creator recorded by the API server: the stamping policy of config/fence is not
	// installed and intact, or the claim was created before it was.
	CreatorNotStampedReason = "CreatorNotStamped"
	// CreatorNotAdmittedReason: the claim's creator matches none of its class's
	// spec.credentials.requester.allowedUsernames.
	CreatorNotAdmittedReason = "CreatorNotAdmitted"
	// CreatorBoundReason: the CredentialsReady reason of a claim of credentials mode Requester: no token,
	// the namespace's RoleBindings name the claim's creator.
	CreatorBoundReason = "CreatorBound"
	// PoolHitReason: the Pooled reason of a claim handed a namespace from its class's pool.
	PoolHitReason = "PoolHit"
	// PoolEmptyReason: the Pooled reason of a claim whose class's pool had no ready namespace; a new
	// namespace was made for it.
	PoolEmptyReason = "PoolEmpty"
	// PoolRefillFailedReason: the Event reason on a class whose pool could not make a namespace.
	PoolRefillFailedReason = "PoolRefillFailed"
	// NoEligibleClusterReason: on a fleet hub, no member cluster may take the claim now (NotReady, not
	// selected, fence not intact, at its cap); the message has one line per cluster saying why. A
	// wait, not a refusal: the claim is placed as soon as a cluster becomes eligible.
	NoEligibleClusterReason = "NoEligibleCluster"
	// ClusterUnreachableReason: the ClusterReachable reason when the claim's member cluster does not
	// answer or its kubeconfig Secret is gone; the claim stays there and is cleaned up when it is back.
	ClusterUnreachableReason = "ClusterUnreachable"
	// ReachableReason: the ClusterReachable reason when the claim's member cluster answers.
	ReachableReason = "Reachable"
)

// RefusalReasons are the Ready=False reasons that mean the operator will not go on until a person
// changes the claim, its class or the cluster. Every other False reason (Provisioning, Pending,
// InternalError) is transient. The metrics collector, the claim's Events and the ConfigMap protocol
// all use this one list.
var RefusalReasons = []string{
	ClassNotFoundReason,
	AmbiguousDefaultClassReason,
	ClassNotAllowedReason,
	ClaimLimitExceededReason,
	BudgetExhaustedReason,
	QueueWaitExceededReason,
	TTLExceedsMaximumReason,
	KeepExceedsMaximumReason,
	LabelNotAllowedReason,
	NamespaceConflictReason,
	NamespaceTakenReason,
	SecretConflictReason,
	MissingPermissionsReason,
	ExcessPermissionsReason,
	InvalidTokenPolicyReason,
	ClusterRoleNotBindableReason,
	PodSecurityNotAllowedReason,
	FenceNotIntactReason,
	TokenRevokedReason,
	CreatorNotStampedReason,
	CreatorNotAdmittedReason,
}

// IsRefusalReason reports whether reason is one of RefusalReasons.
func IsRefusalReason(reason string) bool {
	for _, r := range RefusalReasons {
		if r == reason {
			return true
		}
	}
	return false
}
