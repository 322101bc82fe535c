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

package configmaprequest

import (
	"context"
	"fmt"
	"sync"
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
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/recorder"
	"sigs.k8s.io/controller-runtime/pkg/source"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
	"github.com/nsclaim/nsclaim-operator/internal/kube"
)

// ConfigMapRequestReconciler serves the ConfigMap protocol of the shell operator nsplease: a ConfigMap
// named N in the requests namespace asks for Namespace N, and a Secret named N next to it receives the
// credentials. It provisions nothing itself: it turns each request into a NamespaceClaim named N next to
// the ConfigMap (controlled by it), which the NamespaceClaim reconciler provisions like any other claim
// (class, safety rules, self-test, renewal, metrics), and it makes the Namespace own the ConfigMap, as
// the protocol promises. Refusals are reported as Warning Events on the ConfigMap and in its
// annotation RequestRefusalAnnotation, which the request's own pipeline reads with `get` (pipelines may
// not list Events: they name every request).
//
// It serves requests only while the requests namespace is one the operator created for the protocol
// or one an admin labelled for it (ServeNamespace); it writes nothing but annotations on
// request ConfigMaps, which is all the admission fence lets it change there (beside the Namespace owner
// reference the claim reconciler adds).
type ConfigMapRequestReconciler struct {
	client.Client
	Recorder recorder.EventRecorder
	// Protocol is the configuration of the protocol: namespace, name patterns, class, token policy.
	Protocol Protocol

	// gate says whether the requests namespace may be served; SetupWithManager makes it.
	gate *requestsNamespaceGate
}

// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=tenancy.nsclaim.dev,resources=namespaceclaims,verbs=create
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=create;get

// Reconcile turns one request ConfigMap into its NamespaceClaim, reports the claim's refusals on the
// ConfigMap, and makes the provisioned Namespace own the ConfigMap.
func (r *ConfigMapRequestReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	cm := &corev1.ConfigMap{}
	if err := r.Get(ctx, req.NamespacedName, cm); err != nil {
		// A deleted request: its claim is garbage-collected and its finalizer deletes the namespace.
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	defer logf.FromContext(ctx).V(1).Info("Reconciled", "observedResourceVersion", cm.ResourceVersion)
	if !cm.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	if r.gate != nil && !r.gate.allowed(ctx) {
		// Not a namespace for requests (yet): nothing is served or written. The gate re-checks it
		// and queues every request again once an admin labels it.
		return ctrl.Result{}, nil
	}
	switch verdict := r.Protocol.Judge(cm.Name); verdict {
	case Ignored:
		return ctrl.Result{}, nil
	case NotAllowed:
		return ctrl.Result{}, r.refuse(ctx, cm, tenancyv1alpha1.NameNotAllowedReason, fmt.Sprintf(
			"ConfigMap name %q matches none of the request name patterns %s; no namespace is created", cm.Name, r.Protocol.PatternList()))
	}
	policy, err := r.Protocol.TokenPolicy(cm)
	if err != nil {
		return ctrl.Result{}, r.refuse(ctx, cm, tenancyv1alpha1.InvalidTokenPolicyReason, err.Error())
	}

	claim := &tenancyv1alpha1.NamespaceClaim{}
	ok, err := kube.Found(r.Get(ctx, client.ObjectKeyFromObject(cm), claim))
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
		return ctrl.Result{}, r.refuse(ctx, cm, tenancyv1alpha1.RequestRejectedReason, fmt.Sprintf(
			"NamespaceClaim %s exists and was not made for this request; nothing is created", klog.KObj(claim)))
	}
	if claim.Annotations[tenancyv1alpha1.TokenPolicyAnnotation] != policy {
		before := claim.DeepCopy()
		metav1.SetMetaDataAnnotation(&claim.ObjectMeta, tenancyv1alpha1.TokenPolicyAnnotation, policy)
		if err := r.Patch(ctx, claim, client.MergeFrom(before), client.FieldOwner(kube.FieldOwner)); err != nil {
			return ctrl.Result{}, fmt.Errorf("patching NamespaceClaim %s: %w", klog.KObj(claim), err)
		}
	}
	if err := r.markServed(ctx, cm, claim); err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{}, r.reportClaim(ctx, cm, claim)
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
	if err := r.Patch(ctx, cm, client.MergeFrom(before), client.FieldOwner(kube.FieldOwner)); err != nil {
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
	err := r.Create(ctx, claim, client.FieldOwner(kube.FieldOwner))
	switch {
	case err == nil:
		logf.FromContext(ctx).Info("Created NamespaceClaim for request", "claim", klog.KObj(claim))
		return r.markServed(ctx, cm, claim)
	case apierrors.IsInvalid(err):
		return r.refuse(ctx, cm, tenancyv1alpha1.RequestRejectedReason, fmt.Sprintf("request %q cannot be served: %s", cm.Name, err.Error()))
	case apierrors.IsAlreadyExists(err):
		return fmt.Errorf("NamespaceClaim %s appeared meanwhile: %w", klog.KObj(claim), err)
	}
	return fmt.Errorf("creating NamespaceClaim %s: %w", klog.KObj(claim), err)
}

// reportClaim mirrors the state of the request's claim on the ConfigMap, where its pipeline looks: a
// refusal (Ready=False with a reason of RefusalReasons) as the refusal annotation and a Warning Event,
// and Ready by removing an earlier refusal.
func (r *ConfigMapRequestReconciler) reportClaim(ctx context.Context, cm *corev1.ConfigMap, claim *tenancyv1alpha1.NamespaceClaim) error {
	switch report, value := ClaimReport(claim); report {
	case Refused:
		ready := meta.FindStatusCondition(claim.Status.Conditions, tenancyv1alpha1.ReadyCondition)
		if cm.Annotations[tenancyv1alpha1.RequestRefusalAnnotation] == value {
			return nil
		}
		if err := r.annotate(ctx, cm, &value); err != nil {
			return err
		}
		r.Recorder.Eventf(cm, claim, corev1.EventTypeWarning, ready.Reason, "Provision", "%s", ready.Message)
	case Cleared:
		if _, ok := cm.Annotations[tenancyv1alpha1.RequestRefusalAnnotation]; ok {
			return r.annotate(ctx, cm, nil)
		}
	}
	return nil
}

// refuse reports a refusal of the request on its ConfigMap: the refusal annotation ("<Reason>:
// <message>"), which its pipeline reads with `get`, and a Warning Event, once per distinct refusal.
func (r *ConfigMapRequestReconciler) refuse(ctx context.Context, cm *corev1.ConfigMap, reason, message string) error {
	value := Refusal(reason, message)
	if cm.Annotations[tenancyv1alpha1.RequestRefusalAnnotation] == value {
		return nil
	}
	if err := r.annotate(ctx, cm, &value); err != nil {
		return err
	}
	r.Recorder.Eventf(cm, nil, corev1.EventTypeWarning, reason, "Provision", "%s", message)
	return nil
}

// annotate sets (value != nil) or removes the refusal annotation of cm with a merge patch of that one
// annotation: the admission fence lets the operator change nothing but annotations (and add Namespace
// owner references) on request ConfigMaps.
func (r *ConfigMapRequestReconciler) annotate(ctx context.Context, cm *corev1.ConfigMap, value *string) error {
	before := cm.DeepCopy()
	if value != nil {
		metav1.SetMetaDataAnnotation(&cm.ObjectMeta, tenancyv1alpha1.RequestRefusalAnnotation, *value)
	} else {
		delete(cm.Annotations, tenancyv1alpha1.RequestRefusalAnnotation)
	}
	if err := r.Patch(ctx, cm, client.MergeFrom(before), client.FieldOwner(kube.FieldOwner)); err != nil {
		return fmt.Errorf("writing the refusal of request ConfigMap %s: %w", klog.KObj(cm), err)
	}
	return nil
}

// SetupWithManager watches the ConfigMaps of the requests namespace (the cache holds no others) and the
// claims they control, makes sure the requests namespace exists, and re-checks that it may be served.
func (r *ConfigMapRequestReconciler) SetupWithManager(mgr manager.Manager) error {
	inRequests := predicate.NewPredicateFuncs(func(o client.Object) bool { return o.GetNamespace() == r.Protocol.Namespace })
	r.gate = &requestsNamespaceGate{
		reader:   mgr.GetAPIReader(),
		recorder: r.Recorder,
		name:     r.Protocol.Namespace,
		interval: requestsNamespaceRecheck,
		opened:   make(chan event.TypedGenericEvent[*corev1.ConfigMap], 1),
	}
	if err := mgr.Add(requestsNamespaceEnsurer{c: mgr.GetClient(), name: r.Protocol.Namespace}); err != nil {
		return err
	}
	if err := mgr.Add(r.gate); err != nil {
		return err
	}
	// When the namespace becomes servable (an admin labelled it), every request in it is queued.
	everyRequest := handler.TypedEnqueueRequestsFromMapFunc(func(ctx context.Context, _ *corev1.ConfigMap) []reconcile.Request {
		cms := &corev1.ConfigMapList{}
		if err := mgr.GetClient().List(ctx, cms, client.InNamespace(r.Protocol.Namespace)); err != nil {
			logf.FromContext(ctx).Error(err, "Listing request ConfigMaps", "namespace", r.Protocol.Namespace)
			return nil
		}
		out := make([]reconcile.Request, 0, len(cms.Items))
		for i := range cms.Items {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&cms.Items[i])})
		}
		return out
	})
	return ctrl.NewControllerManagedBy(mgr).
		For(&corev1.ConfigMap{}, builder.WithPredicates(inRequests)).
		Owns(&tenancyv1alpha1.NamespaceClaim{}, builder.WithPredicates(inRequests)).
		WatchesRawSource(source.Channel(r.gate.opened, everyRequest)).
		WithOptions(controller.Options{MaxConcurrentReconciles: 2}).
		Named("configmap-request").
		Complete(r)
}

// requestsNamespaceEnsurer creates the requests namespace at start when it is missing, labelled for
// the protocol and with Pod Security baseline (RequestsNamespace). It never changes or
// deletes an existing one: one it did not create is served only once an admin labels it.
type requestsNamespaceEnsurer struct {
	c    client.Client
	name string
}

var _ reconcile.Reconciler = &ConfigMapRequestReconciler{}

func (e requestsNamespaceEnsurer) Start(ctx context.Context) error {
	err := e.c.Create(ctx, RequestsNamespace(e.name), client.FieldOwner(kube.FieldOwner))
	if err == nil {
		logf.FromContext(ctx).Info("Created the requests namespace", "namespace", e.name)
	}
	if err != nil && !apierrors.IsAlreadyExists(err) {
		logf.FromContext(ctx).Error(err, "Cannot create the requests namespace; create it by hand, labelled "+
			tenancyv1alpha1.RequestsNamespaceLabel+"=true", "namespace", e.name)
	}
	return nil
}

// NeedLeaderElection is false: creating a missing namespace is idempotent.
func (requestsNamespaceEnsurer) NeedLeaderElection() bool { return false }

// requestsNamespaceRecheck is how often the gate reads the requests namespace again.
var requestsNamespaceRecheck = 5 * time.Second

// requestsNamespaceGate decides whether the requests namespace may be served (ServeNamespace)
// from a fresh read of it (the cache holds only namespaces nsclaim provisioned): every interval, and on
// a reconcile when its last answer is older than that. When the namespace may not be served it logs an
// error and emits a Warning Event (RequestsNamespaceNotAllowed) on it, once per change; when it turns
// servable it queues every request.
type requestsNamespaceGate struct {
	reader   client.Reader
	recorder recorder.EventRecorder
	name     string
	interval time.Duration
	opened   chan event.TypedGenericEvent[*corev1.ConfigMap]

	mu      sync.Mutex
	checked time.Time
	ok      bool
	why     string
}

// allowed answers from the last check when it is fresh, else checks now.
func (g *requestsNamespaceGate) allowed(ctx context.Context) bool {
	g.mu.Lock()
	fresh := !g.checked.IsZero() && time.Since(g.checked) < g.interval
	ok := g.ok
	g.mu.Unlock()
	if fresh {
		return ok
	}
	return g.check(ctx)
}

// check reads the namespace and records the answer; on a change it logs, emits the Warning Event or
// queues the requests.
func (g *requestsNamespaceGate) check(ctx context.Context) bool {
	ns := &corev1.Namespace{}
	err := g.reader.Get(ctx, client.ObjectKey{Name: g.name}, ns)
	if apierrors.IsNotFound(err) {
		ns = nil
	} else if err != nil {
		// Keep the last answer: a failed read says nothing about the namespace.
		logf.FromContext(ctx).Error(err, "Reading the requests namespace", "namespace", g.name)
		g.mu.Lock()
		defer g.mu.Unlock()
		return g.ok
	}
	ok, why := ServeNamespace(ns)

	g.mu.Lock()
	changed := g.checked.IsZero() || ok != g.ok || why != g.why
	g.checked, g.ok, g.why = time.Now(), ok, why
	g.mu.Unlock()
	if !changed {
		return ok
	}
	log := logf.FromContext(ctx).WithValues("namespace", g.name)
	switch {
	case ok:
		log.Info("Serving ConfigMap requests in the requests namespace")
		select {
		case g.opened <- event.TypedGenericEvent[*corev1.ConfigMap]{Object: &corev1.ConfigMap{}}:
		default: // one queued already: it queues every request
		}
	default:
		log.Error(fmt.Errorf("%s", why), "The ConfigMap protocol serves nothing in the requests namespace", "reason", tenancyv1alpha1.RequestsNamespaceNotAllowedReason)
		if ns != nil {
			g.recorder.Eventf(ns, nil, corev1.EventTypeWarning, tenancyv1alpha1.RequestsNamespaceNotAllowedReason, "ServeRequests",
				"the ConfigMap protocol serves no request here: %s", why)
		}
	}
	return ok
}

// Start re-checks the namespace every interval until ctx ends.
func (g *requestsNamespaceGate) Start(ctx context.Context) error {
	t := time.NewTicker(g.interval)
	defer t.Stop()
	for {
		g.check(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// NeedLeaderElection is true: only the leader serves requests, and one replica reports.
func (*requestsNamespaceGate) NeedLeaderElection() bool { return true }
