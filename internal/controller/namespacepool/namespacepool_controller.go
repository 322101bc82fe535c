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

// Package namespacepool keeps each NamespaceClass's warm pool (spec.pool): namespaces made ahead,
// already usable, bound to nobody (PoolReconciler), and hands them to claims when the claim reconciler
// asks (Handout) (docs/pool.md).
package namespacepool

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"time"

	"golang.org/x/time/rate"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
	"github.com/nsclaim/nsclaim-operator/internal/claimpolicy"
	"github.com/nsclaim/nsclaim-operator/internal/controller/namespaceclass"
	"github.com/nsclaim/nsclaim-operator/internal/kube"
	"github.com/nsclaim/nsclaim-operator/internal/monitoring"
	"github.com/nsclaim/nsclaim-operator/internal/ownership"
	"github.com/nsclaim/nsclaim-operator/internal/usable"
	"github.com/nsclaim/nsclaim-operator/internal/watchcache"
)

const (
	// DefaultRefillRate is how many namespaces per second one class's pool creates at most.
	DefaultRefillRate = 5
	// busyPoll is when a refill held back by the claims' work looks again.
	busyPoll = 500 * time.Millisecond
	// fencePoll looks again at a pool held back because the admission fence does not cover it.
	fencePoll = 15 * time.Second
	// creatingPoll re-checks pooled namespaces kube-controller-manager has not made usable yet (its
	// `default` ServiceAccount is not watched here).
	creatingPoll = time.Second
)

// PoolReconciler keeps, for each NamespaceClass with spec.pool.size > 0, that many namespaces made
// ahead: built by claimpolicy.BuildPooled (a claim's namespace minus every binding, token and Secret),
// labelled with the pool's labels and no claim's marks. It deletes the pooled namespaces of a class
// that is gone, of an older class generation, or beyond its size, and creates the missing ones at
// RefillRate per class, never while the claims have work (ClaimsBusy). It reports the counts for the
// class's status.pool through Reports (the class reconciler writes them). It never touches a namespace
// that is not a pooled one (claimpolicy.IsPooled), and a handed-out namespace is a claim's: the claim
// reconciler takes it with an optimistic lock.
//
// A reconcile request's name is a pool label's value (claimpolicy.Label of the class's name), so the
// namespaces of a class that was deleted while the operator was down are still found and deleted.
type PoolReconciler struct {
	client.Client
	// APIReader reads a pooled namespace's `default` ServiceAccount when DefaultServiceAccounts is nil.
	APIReader client.Reader
	Recorder  recorder.EventRecorder
	Clock     clock.PassiveClock
	// DefaultServiceAccounts reports each namespace's `default` ServiceAccount; nil reads it from the
	// API server.
	DefaultServiceAccounts *watchcache.DefaultServiceAccounts
	// NameReuse learns of the namespaces the pool creates, so one whose name was in use moments ago is
	// not handed out before the previous holder's token is dead (see watchcache.NamespaceReuse).
	NameReuse *watchcache.NamespaceReuse
	// Ownership proves that a namespace labelled as pooled was made by this reconciler (the pool's record,
	// internal/ownership): only such a namespace is counted, kept, handed out or deleted.
	Ownership *ownership.Verifier
	// ClaimsBusy reports whether the claim reconciler has work in hand; the refill waits while it
	// does, so it never takes the API server's time from claims. nil: never busy.
	ClaimsBusy func() bool
	// FenceCovers reports whether the admission fence in force lets nobody but the operator put a
	// pool's labels on a namespace (NamespaceClaimReconciler.FenceCoversPool); while it does not, the
	// pool makes nothing (it still deletes what is stale or surplus). nil: not required.
	FenceCovers func() bool
	// RefillRate is the most namespaces per second one class's pool creates; 0 means DefaultRefillRate.
	RefillRate float64
	// Reports takes the counts for the class's status.pool, which the class reconciler writes: the pool
	// reconciler writes no status. nil: the counts go nowhere.
	Reports StatusReporter

	limiters sync.Map
}

// +kubebuilder:rbac:groups=tenancy.nsclaim.dev,resources=namespaceclasses,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups="",resources=serviceaccounts;resourcequotas;limitranges,verbs=get;list;watch;create
// +kubebuilder:rbac:groups=networking.k8s.io,resources=networkpolicies,verbs=get;list;watch;create
// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=clusterroles,verbs=get;list;watch;create
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile brings the pool named by req (a pool label's value) to its class's size.
func (r *PoolReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	class, err := r.classOf(ctx, req.Name)
	if err != nil {
		return ctrl.Result{}, err
	}
	pooled, err := r.pooled(ctx, req.Name)
	if err != nil {
		return ctrl.Result{}, err
	}
	p := &pool{class: class}
	for _, ns := range pooled {
		if class == nil || !claimpolicy.PoolCurrent(ns, class) {
			p.stale = append(p.stale, ns)
			continue
		}
		isUsable, err := r.ensureUsable(ctx, class, ns)
		if err != nil {
			return ctrl.Result{}, err
		}
		if at := r.grantsAt(ns); isUsable && at.After(r.now()) {
			// Its tenant may not be bound yet (see watchcache.NamespaceReuse): not ready until then.
			isUsable = false
			p.wakeAt(at.Sub(r.now()))
		}
		if isUsable {
			p.ready = append(p.ready, ns)
		} else {
			p.creating = append(p.creating, ns)
		}
	}
	p.trim(claimpolicy.PoolSize(class))
	for _, ns := range p.stale {
		if err := r.deletePooled(ctx, ns); err != nil {
			return ctrl.Result{}, err
		}
	}
	if class == nil {
		return ctrl.Result{}, nil
	}
	res, refillErr := r.refill(ctx, p)
	r.reportStatus(ctx, class, p)
	if refillErr != nil {
		return ctrl.Result{}, refillErr
	}
	if len(p.creating) > 0 {
		p.wakeAt(creatingPoll)
	}
	if p.wake > 0 && (res.RequeueAfter == 0 || res.RequeueAfter > p.wake) {
		res.RequeueAfter = p.wake
	}
	return res, nil
}

// grantsAt is when the tenant of the pooled namespace ns may be bound (zero: at once).
func (r *PoolReconciler) grantsAt(ns *corev1.Namespace) time.Time {
	if r.NameReuse == nil {
		return time.Time{}
	}
	return r.NameReuse.GrantsAt(ns)
}

// classOf returns the class whose pool label value is label, or nil when there is none.
func (r *PoolReconciler) classOf(ctx context.Context, label string) (*tenancyv1alpha1.NamespaceClass, error) {
	classes := &tenancyv1alpha1.NamespaceClassList{}
	if err := r.List(ctx, classes); err != nil {
		return nil, fmt.Errorf("listing NamespaceClasses: %w", err)
	}
	for i := range classes.Items {
		if c := &classes.Items[i]; claimpolicy.Label(c.Name) == label && c.DeletionTimestamp.IsZero() {
			return c, nil
		}
	}
	return nil, nil
}

// pooled lists the pooled namespaces (claimpolicy.IsPooled) of pool label value label that are not
// terminating and carry the pool's ownership record, oldest first. One labelled as pooled without the
// record was labelled by someone else: it is reported, and neither counted nor deleted.
func (r *PoolReconciler) pooled(ctx context.Context, label string) ([]*corev1.Namespace, error) {
	list := &corev1.NamespaceList{}
	if err := r.List(ctx, list, client.MatchingLabels{tenancyv1alpha1.PoolLabel: label}); err != nil {
		return nil, fmt.Errorf("listing the namespaces of pool %s: %w", label, err)
	}
	var out []*corev1.Namespace
	for i := range list.Items {
		ns := &list.Items[i]
		if !claimpolicy.IsPooled(ns) || !ns.DeletionTimestamp.IsZero() {
			continue
		}
		owned, err := r.Ownership.Owns(ctx, ns, ownership.Pool(ns.Labels[tenancyv1alpha1.PoolClassUIDLabel]))
		if err != nil {
			return nil, err
		}
		if !owned {
			r.Ownership.Refused(ctx, ns, nil, monitoring.ActionHandout)
			continue
		}
		out = append(out, ns)
	}
	slices.SortFunc(out, func(a, b *corev1.Namespace) int { return a.CreationTimestamp.Compare(b.CreationTimestamp.Time) })
	return out, nil
}

// pool is one class's pooled namespaces, sorted out by Reconcile.
type pool struct {
	class *tenancyv1alpha1.NamespaceClass
	// ready are usable now; creating wait for kube-controller-manager (or for the moment their tenant
	// may be bound); stale are to be deleted.
	ready, creating, stale []*corev1.Namespace
	// wake is the earliest moment, from now, something recorded is due; zero when nothing is.
	wake time.Duration
}

// wakeAt records that something is due in d.
func (p *pool) wakeAt(d time.Duration) {
	if d > 0 && (p.wake == 0 || d < p.wake) {
		p.wake = d
	}
}

// trim moves the namespaces beyond size to stale: the ones still being made first, then the newest
// ready ones.
func (p *pool) trim(size int) {
	for len(p.ready)+len(p.creating) > size {
		if n := len(p.creating); n > 0 {
			p.stale, p.creating = append(p.stale, p.creating[n-1]), p.creating[:n-1]
			continue
		}
		n := len(p.ready)
		p.stale, p.ready = append(p.stale, p.ready[n-1]), p.ready[:n-1]
	}
}

// deletePooled deletes a pooled namespace as it was read: a namespace handed to a claim since then has
// another resourceVersion, and the API server refuses the delete.
func (r *PoolReconciler) deletePooled(ctx context.Context, ns *corev1.Namespace) error {
	uid, rv := ns.UID, ns.ResourceVersion
	err := r.Delete(ctx, ns, client.Preconditions{UID: &uid, ResourceVersion: &rv})
	if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("deleting pooled namespace %s: %w", ns.Name, err)
	}
	logf.FromContext(ctx).V(1).Info("Deleted pooled namespace", "pooledNamespace", klog.KObj(ns))
	return nil
}

// refill creates the namespaces the pool lacks, at most RefillRate per second, and none while the
// claims have work. It reports when to look again.
func (r *PoolReconciler) refill(ctx context.Context, p *pool) (ctrl.Result, error) {
	missing := claimpolicy.PoolSize(p.class) - len(p.ready) - len(p.creating)
	if missing <= 0 {
		return ctrl.Result{}, nil
	}
	if r.FenceCovers != nil && !r.FenceCovers() {
		return ctrl.Result{RequeueAfter: fencePoll}, nil
	}
	if r.ClaimsBusy != nil && r.ClaimsBusy() {
		return ctrl.Result{RequeueAfter: busyPoll}, nil
	}
	limiter := r.limiter(p.class)
	for range missing {
		now := r.now()
		if res := limiter.ReserveN(now, 1); res.DelayFrom(now) > 0 {
			res.CancelAt(now)
			return ctrl.Result{RequeueAfter: res.DelayFrom(now)}, nil
		}
		ns, err := r.create(ctx, p.class)
		if err != nil {
			r.Recorder.Eventf(p.class, nil, corev1.EventTypeWarning, tenancyv1alpha1.PoolRefillFailedReason, "Refill",
				"Could not create a pooled namespace: %s", apierrors.ReasonForError(err))
			return ctrl.Result{}, err
		}
		p.creating = append(p.creating, ns)
		monitoring.PoolCreated(p.class.Name)
	}
	return ctrl.Result{}, nil
}

func (r *PoolReconciler) now() time.Time {
	if r.Clock == nil {
		return time.Now()
	}
	return r.Clock.Now()
}

// limiter returns the token bucket of class's refill.
func (r *PoolReconciler) limiter(class *tenancyv1alpha1.NamespaceClass) *rate.Limiter {
	rps := r.RefillRate
	if rps <= 0 {
		rps = DefaultRefillRate
	}
	l, _ := r.limiters.LoadOrStore(class.UID, rate.NewLimiter(rate.Limit(rps), max(1, int(rps))))
	return l.(*rate.Limiter)
}

// create makes one pooled namespace of class and its objects.
func (r *PoolReconciler) create(ctx context.Context, class *tenancyv1alpha1.NamespaceClass) (*corev1.Namespace, error) {
	var ns *corev1.Namespace
	for attempt := 0; ; attempt++ {
		d := claimpolicy.BuildPooled(claimpolicy.PoolNamespaceName(class.Spec.Naming.Prefix), class)
		ns = d.Namespace
		// The pool's record, in the create request itself (see internal/ownership).
		ns.Annotations[tenancyv1alpha1.OwnershipAnnotation] = r.Ownership.Key.AtCreate(ns.Name, ownership.Pool(string(class.UID)), time.Now())
		err := r.Create(ctx, ns, client.FieldOwner(kube.FieldOwner))
		if apierrors.IsAlreadyExists(err) && attempt < 3 {
			// A random name that exists is never adopted: another one is drawn.
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("creating pooled namespace %s: %w", ns.Name, err)
		}
		if err := r.Ownership.Created(ctx, ns, ownership.Pool(string(class.UID))); err != nil {
			return nil, err
		}
		if r.NameReuse != nil {
			r.NameReuse.Created(ns)
		}
		if err := r.createChildren(ctx, d, ns); err != nil {
			return nil, err
		}
		logf.FromContext(ctx).V(1).Info("Created pooled namespace", "pooledNamespace", klog.KObj(ns))
		return ns, nil
	}
}

// createChildren creates the objects of the pooled namespace ns that are missing (the cache is asked
// first; one made moments ago answers AlreadyExists, which is fine).
func (r *PoolReconciler) createChildren(ctx context.Context, d claimpolicy.Desired, ns *corev1.Namespace) error {
	for _, o := range pooledChildren(d, ns) {
		have := o.DeepCopyObject().(client.Object)
		ok, err := kube.Found(r.Get(ctx, client.ObjectKeyFromObject(o), have))
		if err != nil || ok {
			if err != nil {
				return fmt.Errorf("reading %T %s: %w", o, klog.KObj(o), err)
			}
			continue
		}
		if err := r.Create(ctx, o.DeepCopyObject().(client.Object), client.FieldOwner(kube.FieldOwner)); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating %T %s: %w", o, klog.KObj(o), err)
		}
	}
	return nil
}

// pooledChildren are the objects of d the pooled namespace ns holds, in the order they are made: the
// watcher ClusterRole before its ClusterRoleBinding. The namespace owns both (cluster-scoped), so
// garbage collection removes them with the namespace. There is no tenant ServiceAccount among them
// (claimpolicy.BuildPooled): the handout makes it.
func pooledChildren(d claimpolicy.Desired, ns *corev1.Namespace) []client.Object {
	var out []client.Object
	for _, o := range []client.Object{d.ResourceQuota, d.LimitRange, d.NetworkPolicy, d.NamespaceWatcher, d.NamespaceWatcherBinding} {
		if !reflect.ValueOf(o).IsNil() {
			out = append(out, o)
		}
	}
	for _, o := range []client.Object{d.NamespaceWatcher, d.NamespaceWatcherBinding} {
		if !reflect.ValueOf(o).IsNil() {
			o.SetOwnerReferences([]metav1.OwnerReference{claimpolicy.NamespaceOwnerRef(ns)})
		}
	}
	return out
}

// ensureUsable makes sure the pooled namespace ns holds its objects and reports whether it is usable,
// by the same rule as a claim's namespace (usable.Checker).
func (r *PoolReconciler) ensureUsable(ctx context.Context, class *tenancyv1alpha1.NamespaceClass, ns *corev1.Namespace) (bool, error) {
	d := claimpolicy.BuildPooled(ns.Name, class)
	if err := r.createChildren(ctx, d, ns); err != nil {
		return false, err
	}
	pending, _, err := r.usable().Pending(ctx, ns.Name, d.ResourceQuota)
	return pending == "" && err == nil, err
}

// usable checks a pooled namespace by the rule a claim's namespace is checked by (usable.Checker).
func (r *PoolReconciler) usable() usable.Checker {
	return usable.Checker{Reader: r.Client, APIReader: r.APIReader, ServiceAccounts: r.DefaultServiceAccounts}
}

// StatusReporter takes the pool's counts for a class's status.pool: the class reconciler, the one
// writer of a class's status, writes them (namespaceclass.PoolReports).
type StatusReporter interface {
	Report(ctx context.Context, class *tenancyv1alpha1.NamespaceClass, pool *tenancyv1alpha1.PoolStatus)
}

// reportStatus reports the pool's counts for the class's status.pool (nil when the class has no pool and
// the pool holds nothing) to Reports.
func (r *PoolReconciler) reportStatus(ctx context.Context, class *tenancyv1alpha1.NamespaceClass, p *pool) {
	if r.Reports == nil {
		return
	}
	var want *tenancyv1alpha1.PoolStatus
	if claimpolicy.PoolSize(class) > 0 || len(p.ready)+len(p.creating) > 0 {
		want = &tenancyv1alpha1.PoolStatus{Ready: int32(len(p.ready)), Creating: int32(len(p.creating))}
	}
	r.Reports.Report(ctx, class, want)
}

// SetupWithManager watches classes (not the writes of their pool counts), the pooled namespaces (and the ones handed out of a pool, whose
// old labels name it) and their quotas.
func (r *PoolReconciler) SetupWithManager(mgr ctrl.Manager) error {
	managed := builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool { return claimpolicy.IsManaged(o) }))
	return ctrl.NewControllerManagedBy(mgr).
		Named("namespacepool").
		Watches(&tenancyv1alpha1.NamespaceClass{}, handler.EnqueueRequestsFromMapFunc(classToPool), builder.WithPredicates(namespaceclass.NotOnlyPoolCounts())).
		Watches(&corev1.Namespace{}, handler.EnqueueRequestsFromMapFunc(namespaceToPool), managed).
		Watches(&corev1.ResourceQuota{}, handler.EnqueueRequestsFromMapFunc(r.quotaToPool), managed).
		Complete(r)
}

// classToPool maps a class to its pool.
func classToPool(_ context.Context, o client.Object) []reconcile.Request {
	return []reconcile.Request{{NamespacedName: client.ObjectKey{Name: claimpolicy.Label(o.GetName())}}}
}

// namespaceToPool maps a namespace to the pool its labels name, if any.
func namespaceToPool(_ context.Context, o client.Object) []reconcile.Request {
	if l := o.GetLabels()[tenancyv1alpha1.PoolLabel]; l != "" {
		return []reconcile.Request{{NamespacedName: client.ObjectKey{Name: l}}}
	}
	return nil
}

// quotaToPool maps a quota to the pool of its namespace.
func (r *PoolReconciler) quotaToPool(ctx context.Context, o client.Object) []reconcile.Request {
	ns := &corev1.Namespace{}
	if err := r.Get(ctx, client.ObjectKey{Name: o.GetNamespace()}, ns); err != nil {
		return nil
	}
	return namespaceToPool(ctx, ns)
}
