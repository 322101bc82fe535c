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

package controller

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
	"github.com/nsclaim/nsclaim-operator/internal/requests"
)

// ConfigMapRequestReconciler serves the ConfigMap protocol of the shell operator nsplease: a ConfigMap
// named N in the requests namespace asks for Namespace N, and a Secret named N next to it receives the
// credentials. It provisions nothing itself: it turns each request into a NamespaceClaim named N next to
// the ConfigMap (controlled by it), which the NamespaceClaim reconciler provisions like any other claim
// (class, safety rules, self-test, renewal, metrics), and it makes the Namespace own the ConfigMap, as
// the protocol promises. Refusals are reported as Warning Events on the ConfigMap.
type ConfigMapRequestReconciler struct {
	client.Client
	Recorder recorder.EventRecorder
	// Protocol is the configuration of the protocol: namespace, name patterns, class, token policy.
	Protocol requests.Protocol
}

// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=tenancy.nsclaim.dev,resources=namespaceclaims,verbs=create
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=create

// Reconcile turns one request ConfigMap into its NamespaceClaim, reports the claim's refusals on the
// ConfigMap, and makes the provisioned Namespace own the ConfigMap.
func (r *ConfigMapRequestReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	cm := &corev1.ConfigMap{}
	if err := r.Get(ctx, req.NamespacedName, cm); err != nil {
		// A deleted request: its claim is garbage-collected and its finalizer deletes the namespace.
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !cm.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	switch verdict := r.Protocol.Judge(cm.Name); verdict {
	case requests.Ignored:
		return ctrl.Result{}, nil
	case requests.NotAllowed:
		r.Recorder.Eventf(cm, nil, corev1.EventTypeWarning, tenancyv1alpha1.NameNotAllowedReason, "Provision",
			"ConfigMap name %q matches none of the request name patterns %s; no namespace is created", cm.Name, r.Protocol.PatternList())
		return ctrl.Result{}, nil
	}
	policy, err := r.Protocol.TokenPolicy(cm)
	if err != nil {
		r.Recorder.Eventf(cm, nil, corev1.EventTypeWarning, tenancyv1alpha1.InvalidTokenPolicyReason, "Provision", "%s", err.Error())
		return ctrl.Result{}, nil
	}

	claim := &tenancyv1alpha1.NamespaceClaim{}
	ok, err := found(r.Get(ctx, client.ObjectKeyFromObject(cm), claim))
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("reading NamespaceClaim %s: %w", klog.KObj(cm), err)
	}
	if !ok {
		if served(cm) {
			// Its claim is gone: released by the tenant, or deleted. The request is finished, and
			// garbage collection removes it with its namespace; it is never served twice.
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, r.createClaim(ctx, cm, policy)
	}
	if !metav1.IsControlledBy(claim, cm) {
		if !claim.DeletionTimestamp.IsZero() {
			// The claim of an earlier request of that name is still being cleaned up.
			return ctrl.Result{RequeueAfter: 2 * time.Second}, nil
		}
		r.Recorder.Eventf(cm, nil, corev1.EventTypeWarning, tenancyv1alpha1.RequestRejectedReason, "Provision",
			"NamespaceClaim %s exists and was not made for this request; nothing is created", klog.KObj(claim))
		return ctrl.Result{}, nil
	}
	if claim.Annotations[tenancyv1alpha1.TokenPolicyAnnotation] != policy {
		before := claim.DeepCopy()
		metav1.SetMetaDataAnnotation(&claim.ObjectMeta, tenancyv1alpha1.TokenPolicyAnnotation, policy)
		if err := r.Patch(ctx, claim, client.MergeFrom(before), client.FieldOwner(FieldOwner)); err != nil {
			return ctrl.Result{}, fmt.Errorf("patching NamespaceClaim %s: %w", klog.KObj(claim), err)
		}
	}
	if err := r.markServed(ctx, cm, claim); err != nil {
		return ctrl.Result{}, err
	}
	r.reportRefusal(cm, claim)
	return ctrl.Result{}, nil
}

// served reports whether a claim was made for cm before: it carries the claim's UID, or a Namespace
// owns it.
func served(cm *corev1.ConfigMap) bool {
	if cm.Annotations[tenancyv1alpha1.RequestClaimUIDAnnotation] != "" {
		return true
	}
	for _, ref := range cm.OwnerReferences {
		if ref.Kind == "Namespace" && ref.APIVersion == "v1" {
			return true
		}
	}
	return false
}

// markServed records on the ConfigMap the UID of the claim made for it.
func (r *ConfigMapRequestReconciler) markServed(ctx context.Context, cm *corev1.ConfigMap, claim *tenancyv1alpha1.NamespaceClaim) error {
	if cm.Annotations[tenancyv1alpha1.RequestClaimUIDAnnotation] == string(claim.UID) {
		return nil
	}
	before := cm.DeepCopy()
	metav1.SetMetaDataAnnotation(&cm.ObjectMeta, tenancyv1alpha1.RequestClaimUIDAnnotation, string(claim.UID))
	if err := r.Patch(ctx, cm, client.MergeFrom(before), client.FieldOwner(FieldOwner)); err != nil {
		return fmt.Errorf("marking ConfigMap %s as served: %w", klog.KObj(cm), err)
	}
	return nil
}

// createClaim creates the NamespaceClaim of a request. A claim the API server rejects (its validation
// names the field) is reported on the ConfigMap, and nothing else happens.
func (r *ConfigMapRequestReconciler) createClaim(ctx context.Context, cm *corev1.ConfigMap, policy string) error {
	claim := r.Protocol.Claim(cm, policy)
	if err := controllerutil.SetControllerReference(cm, claim, r.Scheme()); err != nil {
		return err
	}
	// The claim must not hold up the ConfigMap's deletion: the pipeline may lack the right to.
	claim.OwnerReferences[0].BlockOwnerDeletion = nil
	err := r.Create(ctx, claim, client.FieldOwner(FieldOwner))
	switch {
	case err == nil:
		logf.FromContext(ctx).Info("Created NamespaceClaim for request", "claim", klog.KObj(claim))
		return r.markServed(ctx, cm, claim)
	case apierrors.IsInvalid(err):
		r.Recorder.Eventf(cm, nil, corev1.EventTypeWarning, tenancyv1alpha1.RequestRejectedReason, "Provision",
			"request %q cannot be served: %s", cm.Name, err.Error())
		return nil
	case apierrors.IsAlreadyExists(err):
		return fmt.Errorf("NamespaceClaim %s appeared meanwhile: %w", klog.KObj(claim), err)
	}
	return fmt.Errorf("creating NamespaceClaim %s: %w", klog.KObj(claim), err)
}

// reportRefusal mirrors a refusal of the request's claim as a Warning Event on the ConfigMap, where a
// pipeline of the shell protocol looks. The claim's status changes only on transitions, and only those
// reconcile the ConfigMap, so one Event is emitted per refusal.
func (r *ConfigMapRequestReconciler) reportRefusal(cm *corev1.ConfigMap, claim *tenancyv1alpha1.NamespaceClaim) {
	ready := meta.FindStatusCondition(claim.Status.Conditions, tenancyv1alpha1.ReadyCondition)
	if ready == nil || ready.Status != metav1.ConditionFalse || ready.ObservedGeneration != claim.Generation || !tenancyv1alpha1.IsRefusalReason(ready.Reason) {
		return
	}
	r.Recorder.Eventf(cm, claim, corev1.EventTypeWarning, ready.Reason, "Provision", "%s", ready.Message)
}

// SetupWithManager watches the ConfigMaps of the requests namespace (the cache holds no others) and the
// claims they control, and makes sure the requests namespace exists.
func (r *ConfigMapRequestReconciler) SetupWithManager(mgr manager.Manager) error {
	inRequests := predicate.NewPredicateFuncs(func(o client.Object) bool { return o.GetNamespace() == r.Protocol.Namespace })
	if err := mgr.Add(requestsNamespaceEnsurer{c: mgr.GetClient(), name: r.Protocol.Namespace}); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		For(&corev1.ConfigMap{}, builder.WithPredicates(inRequests)).
		Owns(&tenancyv1alpha1.NamespaceClaim{}, builder.WithPredicates(inRequests)).
		WithOptions(controller.Options{MaxConcurrentReconciles: 2}).
		Named("configmap-request").
		Complete(r)
}

// requestsNamespaceEnsurer creates the requests namespace at start when it is missing. It never
// changes or deletes it.
type requestsNamespaceEnsurer struct {
	c    client.Client
	name string
}

var _ reconcile.Reconciler = &ConfigMapRequestReconciler{}

func (e requestsNamespaceEnsurer) Start(ctx context.Context) error {
	ns := &corev1.Namespace{}
	ns.Name = e.name
	err := e.c.Create(ctx, ns, client.FieldOwner(FieldOwner))
	if err == nil {
		logf.FromContext(ctx).Info("Created the requests namespace", "namespace", e.name)
	}
	if err != nil && !apierrors.IsAlreadyExists(err) {
		logf.FromContext(ctx).Error(err, "Cannot create the requests namespace; create it by hand", "namespace", e.name)
	}
	return nil
}

// NeedLeaderElection is false: creating a missing namespace is idempotent.
func (requestsNamespaceEnsurer) NeedLeaderElection() bool { return false }
