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

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/source"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
	"github.com/nsclaim/nsclaim-operator/internal/claimpolicy"
	"github.com/nsclaim/nsclaim-operator/internal/controller/namespaceclaim/budget"
	"github.com/nsclaim/nsclaim-operator/internal/controller/namespaceclass"
	"github.com/nsclaim/nsclaim-operator/internal/kube"
	"github.com/nsclaim/nsclaim-operator/internal/selftest"
)

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
	defer r.mem.Enter()()
	claim := &tenancyv1alpha1.NamespaceClaim{}
	if err := r.Get(ctx, req.NamespacedName, claim); err != nil {
		if apierrors.IsNotFound(err) {
			r.mem.Gone(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	// The resourceVersion a reconcile acted on, for debugging (and for tests that must know a change
	// was seen before asserting that nothing was written).
	defer logf.FromContext(ctx).V(1).Info("Reconciled", "observedResourceVersion", claim.ResourceVersion)
	r.mem.Overlay(req.NamespacedName, claim)
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
			r.mem.Wrote(req.NamespacedName, claim)
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
		{r.reconcileSeeds, true},
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

// SetupWithManager watches claims, classes (not the writes of their pool counts), the namespaces nsclaim made and the objects inside them.
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
	b = r.watchSeeds(b)
	if f, ok := r.Fence.(FenceIntactEvents); ok {
		b = b.WatchesRawSource(source.Channel(f.FenceIntactEvents(), handler.EnqueueRequestsFromMapFunc(r.fenceHeldClaims)))
	}
	return b.
		For(&tenancyv1alpha1.NamespaceClaim{}, builder.WithPredicates(kube.NotOwnWrites(tenancyv1alpha1.ClaimFinalizer))).
		Watches(&corev1.Namespace{}, handler.EnqueueRequestsFromMapFunc(r.namespaceToClaims)).
		Watches(&corev1.Namespace{}, r.namespaceDeletions()).
		Watches(&corev1.Namespace{}, r.limitReleases()).
		Watches(&corev1.Namespace{}, budget.Releases(r.Client, &r.limits)).
		Watches(&tenancyv1alpha1.NamespaceBudget{}, budget.Budgets(r.Client)).
		Watches(&corev1.ServiceAccount{}, handler.EnqueueRequestsFromMapFunc(r.childToClaim), managed).
		Watches(&rbacv1.RoleBinding{}, handler.EnqueueRequestsFromMapFunc(r.childToClaim), managed).
		Watches(&rbacv1.Role{}, handler.EnqueueRequestsFromMapFunc(r.childToClaim), managed).
		Watches(&corev1.ResourceQuota{}, handler.EnqueueRequestsFromMapFunc(r.childToClaim), managed).
		Watches(&corev1.LimitRange{}, handler.EnqueueRequestsFromMapFunc(r.childToClaim), managed).
		Watches(&networkingv1.NetworkPolicy{}, handler.EnqueueRequestsFromMapFunc(r.childToClaim), managed).
		Watches(&rbacv1.ClusterRole{}, handler.EnqueueRequestsFromMapFunc(r.childToClaim), managed).
		Watches(&rbacv1.ClusterRoleBinding{}, handler.EnqueueRequestsFromMapFunc(r.childToClaim), managed).
		Watches(&tenancyv1alpha1.NamespaceClass{}, handler.EnqueueRequestsFromMapFunc(r.classToClaims), builder.WithPredicates(namespaceclass.NotOnlyPoolCounts())).
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
