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
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/recorder"
	"sigs.k8s.io/controller-runtime/pkg/source"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
	"github.com/nsclaim/nsclaim-operator/internal/claimpolicy"
	"github.com/nsclaim/nsclaim-operator/internal/credentials"
	"github.com/nsclaim/nsclaim-operator/internal/kube"
	"github.com/nsclaim/nsclaim-operator/internal/ownership"
	"github.com/nsclaim/nsclaim-operator/internal/selftest"
	"github.com/nsclaim/nsclaim-operator/internal/watchcache"
)

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
	// credentialsChecked remembers, per claim UID, when its Secret was last checked. A claim not in it
	// (for example after a restart) counts as checked at a random moment of the last interval, so a
	// restart issues no burst of probes and later ones are spread out.
	credentialsChecked sync.Map
	// provisioned remembers the UIDs of claims whose first Ready this process observed, so a reconcile
	// of a stale cached copy (the status write has not reached the cache yet) does not observe it again.
	provisioned sync.Map
	// selfTestFailures counts, per claim UID, the self-tests that failed in a row (missing or excess
	// permissions that were not waiting for new RoleBindings), for the retry backoff.
	selfTestFailures sync.Map
	// writtenStatus remembers, per claim, the status this process last wrote (only the operator writes
	// a claim's status). A reconcile whose cached copy lags that write works from the written status
	// instead: it would otherwise re-issue credentials, re-run the self-test and emit transitions again.
	writtenStatus sync.Map

	// Bindings finds bindings nsclaim did not make that name a tenant; nil skips that part of the
	// self-test.
	Bindings *watchcache.BindingIndex
	// DefaultServiceAccounts reports and watches each namespace's `default` ServiceAccount; nil reads
	// it from the API server and polls while it is missing.
	DefaultServiceAccounts *watchcache.DefaultServiceAccounts
	// tester runs the self-tests (see internal/selftest); SetupWithManager makes it from the fields
	// above and the manager's connection, whose address and CA the rules reviews use with the tenant's
	// token instead of the operator's credentials.
	tester selfTester
	// Fence tells whether the admission fence is intact; nil means it is not required (the operator's
	// --require-fence=false, and envtest).
	Fence FenceGate
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
	// 0 means DefaultSleepResync.
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

	// limitLocks serializes, per requester namespace and class, a claim limit's check and the creation
	// of the namespace it admits (see namespaceclaim_limit.go).
	limitLocks keyedMutex

	// Requests is the ConfigMap protocol, the one hook through which its rules reach a claim (see
	// RequestProtocol); nil when it is off. Claims the operator made for request ConfigMaps get
	// namespaces named exactly after them.
	Requests RequestProtocol

	// inFlight counts the reconciles running now (see Busy).
	inFlight atomic.Int64
	// given remembers, per claim UID, the namespace this process gave a claim of a class with a pool
	// until the claim's status records it (see rememberNamespace).
	given sync.Map
}

// selfTester proves the permissions of the identity a claim hands out: an issued token, or the
// claim's creator (selftest.Tester implements it).
type selfTester interface {
	Token(ctx context.Context, subj selftest.Subject, token string) (selftest.Result, error)
	Creator(ctx context.Context, subj selftest.Subject, creator selftest.Identity) (selftest.Result, error)
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

// +kubebuilder:rbac:groups=tenancy.nsclaim.dev,resources=namespaceclaims,verbs=get;list;watch;delete;patch
// +kubebuilder:rbac:groups=tenancy.nsclaim.dev,resources=namespaceclaims/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=tenancy.nsclaim.dev,resources=namespaceclaims/finalizers,verbs=update
// +kubebuilder:rbac:groups=tenancy.nsclaim.dev,resources=namespaceclasses,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups="",resources=serviceaccounts,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups="",resources=serviceaccounts/token,verbs=create,resourceNames=nsclaim-tenant
// +kubebuilder:rbac:groups="",resources=secrets,verbs=create;patch;delete
// +kubebuilder:rbac:groups="",resources=resourcequotas;limitranges,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=networking.k8s.io,resources=networkpolicies,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=rolebindings,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=roles,verbs=get;list;watch;delete
// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=clusterroles,verbs=bind,resourceNames=edit;view;admin;nsclaim-operator-release
// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=clusterroles,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=clusterrolebindings,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=tenancy.nsclaim.dev,resources=namespaceclasses/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=selfsubjectaccessreviews,verbs=create
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile brings one claim's namespace, objects, credentials and status to what its class says.
func (r *NamespaceClaimReconciler) Reconcile(ctx context.Context, req ctrl.Request) (_ ctrl.Result, reterr error) {
	r.inFlight.Add(1)
	defer r.inFlight.Add(-1)
	claim := &tenancyv1alpha1.NamespaceClaim{}
	if err := r.Get(ctx, req.NamespacedName, claim); err != nil {
		if apierrors.IsNotFound(err) {
			r.writtenStatus.Delete(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	// The resourceVersion a reconcile acted on, for debugging (and for tests that must know a change
	// was seen before asserting that nothing was written).
	defer logf.FromContext(ctx).V(1).Info("Reconciled", "observedResourceVersion", claim.ResourceVersion)
	r.overlayWrittenStatus(req, claim)
	before := claim.DeepCopy()
	s := &claimScope{claim: claim, now: r.Clock.Now()}
	defer s.leaveLimit()

	if !claim.DeletionTimestamp.IsZero() {
		return r.reconcileDelete(ctx, s)
	}
	if controllerutil.AddFinalizer(claim, tenancyv1alpha1.ClaimFinalizer) {
		if err := r.Patch(ctx, claim, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}), client.FieldOwner(kube.FieldOwner)); err != nil {
			return ctrl.Result{}, fmt.Errorf("adding finalizer: %w", err)
		}
		before = claim.DeepCopy()
	}

	defer func() {
		setStatus(s, reterr)
		if reterr == nil && s.quietUntil.After(s.now) {
			// Nothing to say yet: the namespace will be usable in a moment (see quietUntil).
			claim.Status = *before.Status.DeepCopy()
		}
		r.emitEvents(s, before)
		written, err := r.patchStatus(ctx, before, claim)
		if written {
			r.writtenStatus.Store(req.NamespacedName, writtenStatus{uid: claim.UID, resourceVersion: claim.ResourceVersion, status: claim.Status.DeepCopy()})
		} else if err != nil && reterr == nil {
			reterr = err
		}
	}()
	if err := r.reconcileNormal(ctx, s); err != nil {
		return ctrl.Result{}, err
	}
	if !s.activityObserved && !s.expired {
		// The namespace was recorded in this reconcile: its idle clock starts now, not at the next
		// event (a claim made Ready in one reconcile may see no other for hours).
		if err := r.reconcileActivity(ctx, s); err != nil {
			return ctrl.Result{}, err
		}
	}
	return ctrl.Result{RequeueAfter: s.requeueAfter()}, nil
}

// writtenStatus is the status this process last wrote for a claim, the claim's UID and the
// resourceVersion that write returned.
type writtenStatus struct {
	uid             types.UID
	resourceVersion string
	status          *tenancyv1alpha1.NamespaceClaimStatus
}

// overlayWrittenStatus replaces the status of a cached claim with the one this process last wrote for
// it, when the cache has not caught up with that write yet (same claim UID, different status). An
// entry lives only until the cache holds the write (the cached claim's resourceVersion is the one the
// write returned): a reconcile that writes nothing stores none, so a settled claim costs no copy of its
// status (10,000 of them were ~8 MB of live heap; docs/benchmarks.md, issue 30).
func (r *NamespaceClaimReconciler) overlayWrittenStatus(req ctrl.Request, claim *tenancyv1alpha1.NamespaceClaim) {
	v, ok := r.writtenStatus.Load(req.NamespacedName)
	if !ok {
		return
	}
	w := v.(writtenStatus)
	if w.uid != claim.UID || (w.resourceVersion != "" && w.resourceVersion == claim.ResourceVersion) {
		r.writtenStatus.CompareAndDelete(req.NamespacedName, v)
		return
	}
	if !equality.Semantic.DeepEqual(&claim.Status, w.status) {
		claim.Status = *w.status.DeepCopy()
	}
}

// patchStatus writes the status once, and only if it changed; written reports that the API server
// took the write (claim then carries the resourceVersion it returned).
func (r *NamespaceClaimReconciler) patchStatus(ctx context.Context, before, claim *tenancyv1alpha1.NamespaceClaim) (written bool, err error) {
	if equality.Semantic.DeepEqual(before.Status, claim.Status) {
		return false, nil
	}
	if err := r.Status().Patch(ctx, claim, client.MergeFrom(before), client.FieldOwner(kube.FieldOwner)); err != nil {
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return false, fmt.Errorf("patching status: %w", err)
	}
	return true, nil
}

// claimPhase is one sub-reconciler of reconcileNormal: it records what it found in the scope and
// returns an error only for a failed API call.
type claimPhase func(context.Context, *claimScope) error

// reconcileNormal runs the phases in order. The first four observe the claim's lifecycle whatever its
// spec or class says: its class and refusals, its activity, its expiry, its creator. The rest run one
// after the other until the scope's one stop rule (claimScope.stopped) says the claim goes no further:
// a claim that holds a namespace is repaired under the refusal it came in with (repair phases), but
// gets no new credentials while refused.
func (r *NamespaceClaimReconciler) reconcileNormal(ctx context.Context, s *claimScope) error {
	for _, phase := range []claimPhase{r.reconcileClass, r.reconcileActivity, r.reconcileExpiry, r.reconcileCreator} {
		if err := phase(ctx, s); err != nil {
			return err
		}
	}
	s.repairRefusal = s.refusal
	for _, p := range []struct {
		run    claimPhase
		repair bool
	}{
		{r.reconcileFence, true},
		{r.reconcilePool, true},
		{r.reconcileNamespace, true},
		{r.reconcileRequestOwner, true},
		{r.reconcileChildren, true},
		{r.reconcileSleep, true},
		{r.reconcileModeSwitch, true},
		{r.reconcileUsable, false},
		{r.reconcileAccess, false},
	} {
		if s.stopped(p.repair) {
			return nil
		}
		if err := p.run(ctx, s); err != nil {
			return err
		}
	}
	return nil
}

// reconcileFence holds the claim back while the admission fence is not in place: a claim that was
// Ready waits, status unchanged, for the fence's first check (fencePending); any other is refused.
func (r *NamespaceClaimReconciler) reconcileFence(_ context.Context, s *claimScope) error {
	if ref := r.fenceRefusal(); ref != nil {
		if waitForFence(ref, s.claim) {
			s.fencePending = true
			return nil
		}
		s.refusal = ref
	}
	return nil
}

// reconcileModeSwitch deletes the token of a claim whose class switched to credentials mode
// Requester: such a claim keeps no token, refused or not.
func (r *NamespaceClaimReconciler) reconcileModeSwitch(ctx context.Context, s *claimScope) error {
	if claimpolicy.IsRequesterMode(s.class) {
		return r.deleteCredentials(ctx, s)
	}
	return nil
}

// reconcileAccess gives the claim's identity its access once the namespace is usable. In mode
// Requester the creator is bound: no token, no Secret. In mode Token the identity is proven before any
// credential is written: the token due (if any) is minted first, the self-test runs with it, and it is
// written only if the self-test passes. A claim whose self-test fails never exposes a token, and a
// token already handed out is not renewed while it fails.
func (r *NamespaceClaimReconciler) reconcileAccess(ctx context.Context, s *claimScope) error {
	if claimpolicy.IsRequesterMode(s.class) {
		return r.reconcileRequesterAccess(ctx, s)
	}
	plan, err := r.planCredentials(ctx, s)
	if err != nil || plan == nil {
		return err
	}
	if err := r.reconcileSelfTest(ctx, s, plan); err != nil {
		return err
	}
	if s.selfTest != nil && !s.selfTest.OK() {
		return nil
	}
	return r.writeCredentials(ctx, s, plan)
}

// blocksRepair reports whether a refusal means the namespace's objects cannot be repaired either: the
// class is gone or cannot be provisioned, or the admission fence is not in place.
func blocksRepair(reason string) bool {
	switch reason {
	case tenancyv1alpha1.ClassNotFoundReason, tenancyv1alpha1.AmbiguousDefaultClassReason,
		tenancyv1alpha1.ClusterRoleNotBindableReason, tenancyv1alpha1.PodSecurityNotAllowedReason,
		tenancyv1alpha1.FenceNotIntactReason, tenancyv1alpha1.PendingReason:
		return true
	}
	return false
}

// SetupWithManager watches claims, classes, the namespaces nsclaim made and the objects inside them.
func (r *NamespaceClaimReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if err := indexClaims(context.Background(), mgr.GetFieldIndexer()); err != nil {
		return err
	}
	r.tester = &selftest.Tester{Client: r.Client, APIReader: r.APIReader, Recorder: r.Recorder, Bindings: r.Bindings,
		Server: mgr.GetConfig(), Concurrency: r.SelfTestConcurrency}
	managed := builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool { return claimpolicy.IsManaged(o) }))
	b := ctrl.NewControllerManagedBy(mgr)
	if r.DefaultServiceAccounts != nil {
		b = b.WatchesRawSource(r.DefaultServiceAccounts.Source(r.namespaceNameToClaim))
	}
	if r.ActivePods != nil {
		b = b.WatchesRawSource(r.ActivePods.Source(r.namespaceNameToClaim))
	}
	if f, ok := r.Fence.(FenceIntactEvents); ok {
		b = b.WatchesRawSource(source.Channel(f.FenceIntactEvents(), handler.EnqueueRequestsFromMapFunc(r.fenceHeldClaims)))
	}
	return b.
		For(&tenancyv1alpha1.NamespaceClaim{}, builder.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}, predicate.LabelChangedPredicate{}, deletionPredicate(), finalizersChangedPredicate()))).
		Watches(&corev1.Namespace{}, handler.EnqueueRequestsFromMapFunc(r.namespaceToClaims)).
		Watches(&corev1.Namespace{}, r.namespaceDeletions()).
		Watches(&corev1.ServiceAccount{}, handler.EnqueueRequestsFromMapFunc(r.childToClaim), managed).
		Watches(&rbacv1.RoleBinding{}, handler.EnqueueRequestsFromMapFunc(r.childToClaim), managed).
		Watches(&rbacv1.Role{}, handler.EnqueueRequestsFromMapFunc(r.childToClaim), managed).
		Watches(&corev1.ResourceQuota{}, handler.EnqueueRequestsFromMapFunc(r.childToClaim), managed).
		Watches(&corev1.LimitRange{}, handler.EnqueueRequestsFromMapFunc(r.childToClaim), managed).
		Watches(&networkingv1.NetworkPolicy{}, handler.EnqueueRequestsFromMapFunc(r.childToClaim), managed).
		Watches(&rbacv1.ClusterRole{}, handler.EnqueueRequestsFromMapFunc(r.childToClaim), managed).
		Watches(&rbacv1.ClusterRoleBinding{}, handler.EnqueueRequestsFromMapFunc(r.childToClaim), managed).
		Watches(&tenancyv1alpha1.NamespaceClass{}, handler.EnqueueRequestsFromMapFunc(r.classToClaims)).
		WithOptions(controller.Options{MaxConcurrentReconciles: max(r.MaxConcurrentReconciles, 1)}).
		Named("namespaceclaim").
		Complete(r)
}

// namespaceDeletions records every namespace deletion the informer reports in NameReuse. Its transform
// sees them first; this handler adds the deletions a relist found (tombstones skip the transform).
func (r *NamespaceClaimReconciler) namespaceDeletions() handler.EventHandler {
	return handler.Funcs{DeleteFunc: func(_ context.Context, e event.DeleteEvent, _ workqueue.TypedRateLimitingInterface[ctrl.Request]) {
		if r.NameReuse != nil && e.Object != nil {
			r.NameReuse.Going(e.Object.GetName())
		}
	}}
}

// requestFor is the reconcile request for a claim key.
func requestFor(namespace, name string) ctrl.Request {
	return ctrl.Request{NamespacedName: types.NamespacedName{Namespace: namespace, Name: name}}
}

// tokenTimeout bounds the TokenRequest and self-test calls of one reconcile.
const tokenTimeout = 30 * time.Second
