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
	"maps"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
	"github.com/nsclaim/nsclaim-operator/internal/claimpolicy"
	"github.com/nsclaim/nsclaim-operator/internal/kube"
	"github.com/nsclaim/nsclaim-operator/internal/monitoring"
	"github.com/nsclaim/nsclaim-operator/internal/ownership"
)

// deleteOwnedNamespace deletes namespace name if it carries the claim's ownership marks and nsclaim's
// record of them, and records in the scope what still blocks a namespace that is terminating. A
// namespace without the marks is left alone; one with the marks and no record is reported, and left
// alone. The delete is conditional on the UID and resourceVersion that were checked, so a namespace
// changed since it was read is never deleted on stale information.
func (r *NamespaceClaimReconciler) deleteOwnedNamespace(ctx context.Context, s *claimScope, name string) error {
	ns := &corev1.Namespace{}
	if ok, err := kube.Found(r.Get(ctx, client.ObjectKey{Name: name}, ns)); !ok {
		return err
	}
	if !claimpolicy.CarriesMarksOf(ns, s.owner) {
		return nil
	}
	if owned, err := r.Ownership.Owns(ctx, ns, subject(s.owner)); err != nil || !owned {
		if err == nil {
			r.Ownership.Refused(ctx, ns, s.claim, monitoring.ActionDelete)
		}
		return err
	}
	if ns.DeletionTimestamp.IsZero() {
		uid, rv := ns.UID, ns.ResourceVersion
		err := r.Delete(ctx, ns, client.Preconditions{UID: &uid, ResourceVersion: &rv})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting namespace %s: %w", name, err)
		}
		logf.FromContext(ctx).Info("Deleted namespace", "claimNamespace", klog.KObj(ns))
		s.terminating = "deletion requested"
		return nil
	}
	s.terminating = r.terminationBlockers(ctx, name)
	return nil
}

// terminationBlockers reads the namespace from the API server and summarises the conditions that keep
// it in Terminating.
func (r *NamespaceClaimReconciler) terminationBlockers(ctx context.Context, name string) string {
	ns := &corev1.Namespace{}
	if err := r.APIReader.Get(ctx, client.ObjectKey{Name: name}, ns); err != nil {
		return "terminating"
	}
	var msgs []string
	for _, c := range ns.Status.Conditions {
		if c.Status == corev1.ConditionTrue && c.Message != "" {
			msgs = append(msgs, c.Message)
		}
	}
	if len(msgs) == 0 {
		return "terminating"
	}
	return strings.Join(msgs, "; ")
}

// reconcileNamespace creates the namespace, or finds it and checks that it is this claim's. A namespace
// that exists without this claim's marks is refused and left untouched. A namespace this claim held
// that is gone or terminating was released by the tenant: the claim is deleted.
func (r *NamespaceClaimReconciler) reconcileNamespace(ctx context.Context, s *claimScope) error {
	want := s.desired.Namespace
	ns, ok, err := r.observedNamespace(ctx, s, want.Name)
	if err != nil {
		return fmt.Errorf("reading namespace %s: %w", want.Name, err)
	}
	held := s.claim.Status.Namespace == want.Name
	if !ok && held {
		// The cache may lag a namespace created moments ago: only the API server's word releases.
		if ok, err = kube.Found(r.APIReader.Get(ctx, client.ObjectKey{Name: want.Name}, ns)); err != nil {
			return fmt.Errorf("reading namespace %s: %w", want.Name, err)
		}
		if !ok {
			return r.release(ctx, s)
		}
	}
	if !ok {
		ns = want.DeepCopy()
		// The record goes in the create request itself: the namespace never exists without it. It is
		// dated with the wall clock, which the API server's creationTimestamp is checked against.
		ns.Annotations[tenancyv1alpha1.OwnershipAnnotation] = r.Ownership.Key.AtCreate(ns.Name, subject(s.owner), time.Now())
		err := r.Create(ctx, ns, client.FieldOwner(kube.FieldOwner))
		// The namespace now exists on the API server (or may): it holds its claim-limit slot.
		s.settleLimit(err, want.Name)
		if err == nil {
			if err := r.Ownership.Created(ctx, ns, subject(s.owner)); err != nil {
				return err
			}
			if r.NameReuse != nil {
				r.NameReuse.Created(ns)
			}
			logf.FromContext(ctx).Info("Created namespace", "claimNamespace", klog.KObj(ns))
			s.repaired++
			return r.holdNamespace(s, ns)
		}
		if !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating namespace %s: %w", want.Name, err)
		}
		if r.NameReuse != nil {
			// The cache had not seen it: a namespace of this name exists now, so one created over it
			// later is a reuse even if the informer never sees this one go.
			r.NameReuse.Going(want.Name)
		}
		if err := r.APIReader.Get(ctx, client.ObjectKey{Name: want.Name}, ns); err != nil {
			return fmt.Errorf("reading namespace %s: %w", want.Name, err)
		}
	}
	if !claimpolicy.CarriesMarksOf(ns, s.owner) {
		s.refusal = foreignNamespaceRefusal(ns)
		return nil
	}
	owned, err := r.Ownership.Owns(ctx, ns, subject(s.owner))
	if err != nil {
		return err
	}
	if !owned {
		r.Ownership.Refused(ctx, ns, s.claim, monitoring.ActionBind)
		s.refusal = unverifiedNamespaceRefusal(ns)
		return nil
	}
	if !ns.DeletionTimestamp.IsZero() {
		return r.release(ctx, s)
	}
	if !labelsAndAnnotationsMatch(want, ns) {
		patched := ns.DeepCopy()
		mergeMeta(patched, want)
		if err := r.Patch(ctx, patched, client.MergeFromWithOptions(ns, client.MergeFromWithOptimisticLock{}), client.FieldOwner(kube.FieldOwner)); err != nil {
			return fmt.Errorf("patching namespace %s: %w", ns.Name, err)
		}
		s.repaired++
		ns = patched
	}
	return r.holdNamespace(s, ns)
}

func (r *NamespaceClaimReconciler) holdNamespace(s *claimScope, ns *corev1.Namespace) error {
	if s.pooled != "" && s.claim.Status.Namespace == "" {
		r.mem.Give(s.claim.UID, ns.Name)
	}
	s.namespace = ns
	s.holdLimit(ns.Name)
	s.found.Namespace.Set(ns.Name)
	return nil
}

// foreignNamespaceRefusal explains why a namespace that exists is not this claim's.
func foreignNamespaceRefusal(ns *corev1.Namespace) *claimpolicy.Refusal {
	if _, ok := claimpolicy.OwnerFromMarks(ns); ok {
		// Which claim holds it is not said: that would tell one requester of another's claim.
		return &claimpolicy.Refusal{Reason: tenancyv1alpha1.NamespaceTakenReason, Message: fmt.Sprintf(
			"namespace %s is held by another NamespaceClaim. Delete this claim and create a new one with another spec.namespaceName"+
				" (the field cannot be changed on an existing claim)", ns.Name)}
	}
	return &claimpolicy.Refusal{Reason: tenancyv1alpha1.NamespaceConflictReason, Message: fmt.Sprintf(
		"namespace %s exists and was not created by nsclaim for this claim; it is left untouched. Delete this claim and create a new one"+
			" with another spec.namespaceName (the field cannot be changed on an existing claim), or ask the cluster admin to remove that namespace", ns.Name)}
}

// unverifiedNamespaceRefusal explains why a namespace that carries the claim's marks is not taken as
// its namespace: nsclaim's ownership record is missing or does not verify, so someone else marked it.
func unverifiedNamespaceRefusal(ns *corev1.Namespace) *claimpolicy.Refusal {
	return &claimpolicy.Refusal{Reason: tenancyv1alpha1.OwnershipUnverifiedReason, Message: fmt.Sprintf(
		"namespace %s carries this claim's marks but not nsclaim's ownership record for them (metadata.annotations[%s]): nsclaim did not make it for this claim,"+
			" so it is left untouched: not bound, not deleted. Ask the cluster admin to find who marked it; delete this claim and create a new one with another name",
		ns.Name, tenancyv1alpha1.OwnershipAnnotation)}
}

// subject is what ownership records bind a namespace of owner o to.
func subject(o claimpolicy.Owner) ownership.Subject {
	return ownership.Claim(o.Namespace, o.Name, o.UID)
}

// release deletes a claim whose namespace the tenant deleted. The claim's finalizer then finds the
// namespace gone, and garbage collection removes the credentials Secret the claim owns.
func (r *NamespaceClaimReconciler) release(ctx context.Context, s *claimScope) error {
	s.released = true
	if err := r.deleteCredentials(ctx, s); err != nil {
		return err
	}
	uid := s.claim.UID
	if err := r.Delete(ctx, s.claim, client.Preconditions{UID: &uid}); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("deleting released claim: %w", err)
	}
	logf.FromContext(ctx).Info("Namespace released by its tenant; deleted the claim", "claimNamespace", s.desired.Namespace.Name)
	return nil
}

// labelsAndAnnotationsMatch reports whether have carries every label and annotation of want.
func labelsAndAnnotationsMatch(want, have metav1.Object) bool {
	return isSubset(want.GetLabels(), have.GetLabels()) && isSubset(want.GetAnnotations(), have.GetAnnotations())
}

func isSubset(sub, super map[string]string) bool {
	for k, v := range sub {
		if got, ok := super[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// mergeMeta adds want's labels and annotations to obj, keeping the ones others set.
func mergeMeta(obj, want metav1.Object) {
	l := maps.Clone(obj.GetLabels())
	if l == nil {
		l = map[string]string{}
	}
	maps.Copy(l, want.GetLabels())
	obj.SetLabels(l)
	a := maps.Clone(obj.GetAnnotations())
	if a == nil {
		a = map[string]string{}
	}
	maps.Copy(a, want.GetAnnotations())
	obj.SetAnnotations(a)
}
