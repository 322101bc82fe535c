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

package namespaceclaim

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
	"github.com/nsclaim/nsclaim-operator/internal/admission"
	"github.com/nsclaim/nsclaim-operator/internal/claimpolicy"
	"github.com/nsclaim/nsclaim-operator/internal/controller/namespaceclaim/access"
	"github.com/nsclaim/nsclaim-operator/internal/controller/namespaceclaim/fencegate"
	"github.com/nsclaim/nsclaim-operator/internal/controller/namespaceclaim/memory"
	"github.com/nsclaim/nsclaim-operator/internal/credentials"
	"github.com/nsclaim/nsclaim-operator/internal/ownership"
	"github.com/nsclaim/nsclaim-operator/internal/watchcache"
)

// FenceGate tells whether the admission fence allows provisioning (fencegate.Gate); nil: not required.
type FenceGate = fencegate.Gate

// FenceIntactEvents is a FenceGate that also says when the fence turns intact (fencegate.IntactEvents):
// each event makes every claim held by the fence go on at once, instead of at its next poll (fencePoll).
type FenceIntactEvents = fencegate.IntactEvents

// FenceCurrent is a FenceGate that also tells whether the fence in force is this release's own
// (fencegate.Current).
type FenceCurrent = fencegate.Current

// NamespaceClaimReconciler provisions a namespace, its objects and scoped credentials for each
// NamespaceClaim, keeps them as the class says, and deletes the namespace when the claim is deleted or
// expires. It never changes or deletes a namespace that lacks the claim's ownership marks.
type NamespaceClaimReconciler struct {
	// Client reads from the informer cache and writes to the API server.
	client.Client
	// APIReader reads from the API server directly; used only where the cache cannot answer (objects
	// outside the label-selected caches, and a namespace's deletion blockers).
	APIReader client.Reader
	// Recorder emits Events on transitions.
	Recorder recorder.EventRecorder
	// Clock is the time source; tests inject a fake one.
	Clock clock.PassiveClock
	// Endpoint is the API server and CA written into issued kubeconfigs.
	Endpoint credentials.Endpoint
	// SelfTestConcurrency bounds the SubjectAccessReviews in flight for one claim (the self-test's sample,
	// behind an authorizer that cannot list rules and for a keyless creator).
	SelfTestConcurrency int
	// MaxConcurrentReconciles is the number of workers.
	MaxConcurrentReconciles int
	// CredentialsCheckInterval is how often a Ready claim's credentials Secret is checked (with a
	// probe that reads nothing) and restored if it was deleted; 0 checks only when something changes
	// and at renewal.
	CredentialsCheckInterval time.Duration
	// mem is what the reconciler remembers between reconciles, in this process only (see memory.Memory).
	mem memory.Memory

	// Bindings finds bindings nsclaim did not make that name a tenant; nil skips that part of the
	// self-test.
	Bindings *watchcache.BindingIndex
	// DefaultServiceAccounts reports and watches each namespace's `default` ServiceAccount; nil reads
	// it from the API server and polls while it is missing.
	DefaultServiceAccounts *watchcache.DefaultServiceAccounts
	// tester runs the self-tests (see internal/selftest); SetupWithManager makes it from the fields
	// above and the manager's connection, whose address and CA the rules reviews use with the tenant's
	// token instead of the operator's credentials.
	tester access.Tester
	// Fence tells whether the admission fence is intact; nil means it is not required (the operator's
	// --require-fence=false, and envtest).
	Fence FenceGate
	// Pool hands out the namespaces of a class's warm pool (see Pool); nil hands out none: every claim
	// of a class with a pool gets a namespace made for it.
	Pool Pool
	// PoolWithoutFence lets the warm pool make and hand out namespaces while no fence is required
	// (Fence nil). Without the fence's label guard anyone who may create a namespace can make one look
	// pooled, with a RoleBinding of their own inside, and have it handed to another claim: so the
	// operator's --pool-without-fence defaults to false. envtest sets it (it runs no fence).
	PoolWithoutFence bool
	// MinimumPodSecurity is the weakest Pod Security level the operator creates namespaces with; empty
	// means baseline.
	MinimumPodSecurity tenancyv1alpha1.PodSecurityLevel

	// ActivePods reports and watches the Pods Pending or Running in each namespace (a claim's idle
	// clock stops while there is one); nil reads them from the API server and watches nothing (unit
	// tests only).
	ActivePods *watchcache.ActivePods
	// SleepResync is how often a sleeping namespace is checked for recorded objects that run again;
	// 0 means sleep.DefaultSleepResync.
	SleepResync time.Duration

	// NameReuse holds back the grants of a namespace whose name was in use moments ago, until the API
	// server can no longer accept a previous holder's token (see watchcache.NamespaceReuse); nil skips the wait
	// (unit tests only: the manager and the envtest suite always set it, with CacheOptions).
	NameReuse *watchcache.NamespaceReuse

	// Ownership proves that nsclaim made a namespace for a claim or a pool (its record, internal/ownership):
	// checked before every write to, handout of, count or deletion of a namespace. Labels only find
	// candidates. nil proves nothing: no namespace is ever taken as the claim's (tests of single
	// functions only).
	Ownership *ownership.Verifier

	// limits admits claims to their class's claim limit (see namespaceclaim_limit.go).
	limits admission.Ledger

	// Seeds are the caches of the seed namespace (watchcache.Seeds) and SeedNamespace its name; nil and
	// "" when seeds are off (NSCLAIM_SEED_NAMESPACE unset): a class's seeds are then reported
	// SeedsDisabled (docs/seeds.md).
	Seeds         *watchcache.Seeds
	SeedNamespace string
	// SeedResync is how often a claim with Secret copies is reconciled again to apply them (seeds.Phase
	// Resync); 0 never.
	SeedResync time.Duration

	// Requests is the ConfigMap protocol, the one hook through which its rules reach a claim (see
	// RequestProtocol); nil when it is off. Claims the operator made for request ConfigMaps get
	// namespaces named exactly after them.
	Requests RequestProtocol
}

// RequestProtocol is what the claim reconciler asks of the ConfigMap protocol
// (configmaprequest.Protocol implements it).
type RequestProtocol interface {
	// IsRequest reports whether claim was made by the operator for a request ConfigMap.
	IsRequest(claim *tenancyv1alpha1.NamespaceClaim) bool
	// MayServe reports whether requester, the namespace of a request claim, may be served: only then
	// is the claim's namespace named after its request, without the class's prefix.
	MayServe(requester *corev1.Namespace) bool
	// OwnRequest makes ns own the request ConfigMap of claim, so that deleting the namespace removes
	// the request.
	OwnRequest(ctx context.Context, c client.Client, claim *tenancyv1alpha1.NamespaceClaim, ns *corev1.Namespace) error
}

// Pool is what the claim reconciler asks of the warm pool (namespacepool.Handout implements it).
type Pool interface {
	// HandOut takes one ready namespace of class's pool for the claim owner, marked for it and
	// recorded as its (as the patch that took it returned it), or returns nil when none is ready at
	// now.
	HandOut(ctx context.Context, class *tenancyv1alpha1.NamespaceClass, owner claimpolicy.Owner, now time.Time) (*corev1.Namespace, error)
}
