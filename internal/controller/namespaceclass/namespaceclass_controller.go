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

package namespaceclass

import (
	"context"
	"fmt"
	"sync"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/source"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
	"github.com/nsclaim/nsclaim-operator/internal/claimpolicy"
	"github.com/nsclaim/nsclaim-operator/internal/fence"
	"github.com/nsclaim/nsclaim-operator/internal/kube"
)

// classRecheck is how often a class is checked again: the operator's own RBAC may change.
const classRecheck = 10 * time.Minute

// stampRecheck is how often a class of credentials mode Requester is checked again: the creator stamp it
// depends on may be removed or altered, and the operator may only get it by name, not watch it.
const stampRecheck = time.Minute

// NamespaceClassReconciler reports on each class's status whether the operator can provision it: that
// it may bind every ClusterRole the class names (a SelfSubjectAccessReview of `bind`, once per class
// generation and every classRecheck), and that its Pod Security level is allowed. The claim reconciler
// refuses claims of a class whose status says it cannot be provisioned, with the same message. It is the
// one writer of a class's status: the pool reconciler's counts reach status.pool through Pools.
type NamespaceClassReconciler struct {
	client.Client
	// APIReader reads the creator stamp from the API server (the operator may get it by name only, so
	// it cannot be cached); nil reads through Client.
	APIReader client.Reader
	// MinimumPodSecurity is the weakest Pod Security level allowed; empty means baseline.
	MinimumPodSecurity tenancyv1alpha1.PodSecurityLevel
	// Pools carries the pool reconciler's counts, written to status.pool; nil writes no status.pool.
	Pools *PoolReports

	// PoolWriteInterval is the least time between two status writes of one class that change only
	// status.pool: the reports of a burst of handouts and refills are coalesced into one write per
	// interval, the last one holding the last report. Zero means DefaultPoolWriteInterval.
	PoolWriteInterval time.Duration

	// checked remembers, by class name, the last check written (checkMark): a reconcile that a pool
	// report asked for writes the counts without checking the class again before it is due.
	checked sync.Map
	// poolWritten remembers, by class name, when status.pool was last written (time.Time).
	poolWritten sync.Map
}

// DefaultPoolWriteInterval is the least time between two writes of a class's status.pool alone.
const DefaultPoolWriteInterval = time.Second

// checkMark is a class's last check that reached its status: for which UID and generation, and when.
type checkMark struct {
	uid        types.UID
	generation int64
	at         time.Time
}

// +kubebuilder:rbac:groups=tenancy.nsclaim.dev,resources=namespaceclasses,verbs=get;list;watch
// +kubebuilder:rbac:groups=tenancy.nsclaim.dev,resources=namespaceclasses/status,verbs=get;update;patch

// Reconcile checks one class when its check is due (a new generation, or recheckAfter since the last
// one) and writes its Ready condition and the pool's last reported counts in one status patch, only if
// they changed.
func (r *NamespaceClassReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	class := &tenancyv1alpha1.NamespaceClass{}
	if err := r.Get(ctx, req.NamespacedName, class); err != nil {
		if apierrors.IsNotFound(err) {
			r.checked.Delete(req.Name)
			r.poolWritten.Delete(req.Name)
			if r.Pools != nil {
				r.Pools.forget(req.Name)
			}
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	before := class.DeepCopy()
	now := time.Now()
	due := r.checkDue(class, now)
	if due {
		cond, err := r.check(ctx, class)
		if err != nil {
			return ctrl.Result{}, err
		}
		meta.SetStatusCondition(&class.Status.Conditions, cond)
		class.Status.ObservedGeneration = class.Generation
	}
	poolChanged := false
	if r.Pools != nil {
		if pool, ok := r.Pools.pool(class); ok {
			poolChanged = !equality.Semantic.DeepEqual(class.Status.Pool, pool)
			class.Status.Pool = pool
		}
	}
	if !equality.Semantic.DeepEqual(before.Status, class.Status) {
		onlyPool := !due && equality.Semantic.DeepEqual(before.Status.Conditions, class.Status.Conditions)
		if wait := r.poolWriteWait(class.Name, onlyPool, now); wait > 0 {
			return ctrl.Result{RequeueAfter: wait}, nil
		}
		if err := r.Status().Patch(ctx, class, client.MergeFrom(before), client.FieldOwner(kube.FieldOwner)); client.IgnoreNotFound(err) != nil {
			return ctrl.Result{}, fmt.Errorf("patching NamespaceClass status: %w", err)
		}
		if poolChanged {
			r.poolWritten.Store(class.Name, now)
		}
	}
	if due {
		r.checked.Store(class.Name, checkMark{uid: class.UID, generation: class.Generation, at: now})
		return ctrl.Result{RequeueAfter: recheckAfter(class)}, nil
	}
	mark, _ := r.checked.Load(class.Name)
	return ctrl.Result{RequeueAfter: mark.(checkMark).at.Add(recheckAfter(class)).Sub(now)}, nil
}

// poolWriteWait is how long a status write of the class named name waits: a write that changes only
// status.pool (onlyPool) waits until PoolWriteInterval after the last write of status.pool; any other
// write, and the first, waits for nothing.
func (r *NamespaceClassReconciler) poolWriteWait(name string, onlyPool bool, now time.Time) time.Duration {
	if !onlyPool {
		return 0
	}
	v, ok := r.poolWritten.Load(name)
	if !ok {
		return 0
	}
	interval := r.PoolWriteInterval
	if interval <= 0 {
		interval = DefaultPoolWriteInterval
	}
	return coalesceWait(v.(time.Time), now, interval)
}

// coalesceWait is how long after now a write may happen when the last one happened at last and two
// writes are at least interval apart: zero when it may happen now.
func coalesceWait(last, now time.Time, interval time.Duration) time.Duration {
	if wait := last.Add(interval).Sub(now); wait > 0 {
		return wait
	}
	return 0
}

// recheckAfter is how often class is checked again: stampRecheck for a class of credentials mode
// Requester, classRecheck otherwise.
func recheckAfter(class *tenancyv1alpha1.NamespaceClass) time.Duration {
	if claimpolicy.IsRequesterMode(class) {
		return stampRecheck
	}
	return classRecheck
}

// checkDue reports whether class is to be checked at now: never checked (in this process), a new UID
// or generation, or recheckAfter since the last check.
func (r *NamespaceClassReconciler) checkDue(class *tenancyv1alpha1.NamespaceClass, now time.Time) bool {
	v, ok := r.checked.Load(class.Name)
	if !ok {
		return true
	}
	mark := v.(checkMark)
	return mark.uid != class.UID || mark.generation != class.Generation || !now.Before(mark.at.Add(recheckAfter(class)))
}

// check returns class's Ready condition: True when the operator may bind every ClusterRole it names,
// its Pod Security level is allowed and, in credentials mode Requester, the creator stamp is in force;
// otherwise False with the first refusal's reason and message.
func (r *NamespaceClassReconciler) check(ctx context.Context, class *tenancyv1alpha1.NamespaceClass) (metav1.Condition, error) {
	var notBindable []claimpolicy.ClusterRoleField
	for _, f := range claimpolicy.ClusterRoleFields(class) {
		ok, err := r.mayBind(ctx, f.Name)
		if err != nil {
			return metav1.Condition{}, err
		}
		if !ok {
			notBindable = append(notBindable, f)
		}
	}
	cond := metav1.Condition{Type: tenancyv1alpha1.ReadyCondition, Status: metav1.ConditionTrue, Reason: tenancyv1alpha1.ValidReason,
		Message: "The operator may bind every ClusterRole this class names, and its Pod Security level is allowed", ObservedGeneration: class.Generation}
	stampRef, err := r.checkStamp(ctx, class)
	if err != nil {
		return metav1.Condition{}, err
	}
	for _, ref := range []*claimpolicy.Refusal{claimpolicy.NotBindable(class, notBindable), claimpolicy.CheckPodSecurity(class, r.MinimumPodSecurity), stampRef} {
		if ref != nil {
			cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, ref.Reason, ref.Message
			break
		}
	}
	return cond, nil
}

// checkStamp, for a class of credentials mode Requester, reads the creator stamp its claims depend on
// and returns the refusal its claims would get while it is missing or altered.
func (r *NamespaceClassReconciler) checkStamp(ctx context.Context, class *tenancyv1alpha1.NamespaceClass) (*claimpolicy.Refusal, error) {
	if !claimpolicy.IsRequesterMode(class) {
		return nil, nil
	}
	var reader client.Reader = r.Client
	if r.APIReader != nil {
		reader = r.APIReader
	}
	st, err := fence.CheckShippedStamp(ctx, reader)
	if err != nil {
		return nil, err
	}
	return claimpolicy.CheckClassStamp(class, claimpolicy.StampState(st)), nil
}

// mayBind asks the API server whether the operator may bind ClusterRole name. The operator binds only
// roles it holds `bind` on; holding all of a role's permissions is not enough for nsclaim.
func (r *NamespaceClassReconciler) mayBind(ctx context.Context, name string) (bool, error) {
	ssar := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
		ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "bind", Group: rbacv1.GroupName, Resource: "clusterroles", Name: name},
	}}
	if err := r.Create(ctx, ssar); err != nil {
		return false, fmt.Errorf("asking whether the operator may bind ClusterRole %s: %w", name, err)
	}
	return ssar.Status.Allowed, nil
}

// SetupWithManager reconciles a class when its spec changes, and when the pool reconciler reports
// counts its status.pool does not hold yet (Pools).
func (r *NamespaceClassReconciler) SetupWithManager(mgr ctrl.Manager) error {
	b := ctrl.NewControllerManagedBy(mgr).
		For(&tenancyv1alpha1.NamespaceClass{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Named("namespaceclass")
	if r.Pools != nil {
		b = b.WatchesRawSource(source.Channel(r.Pools.events, &handler.EnqueueRequestForObject{}))
	}
	return b.Complete(r)
}
