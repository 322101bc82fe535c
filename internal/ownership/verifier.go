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

package ownership

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
	"github.com/nsclaim/nsclaim-operator/internal/kube"
	"github.com/nsclaim/nsclaim-operator/internal/monitoring"
)

// Verifier decides, for every reconciler, whether nsclaim made a namespace for a subject: its record
// verifies with Key. A namespace made by an earlier release, before the key existed, has no record; it
// is recorded once (Owns writes a "u1" record) when nsclaim's own RBAC proves it made it for that
// subject, and never otherwise:
//   - it was created before the key (KeyCreated), so no record could have been written for it;
//   - its namespace watcher, which nobody but the operator can make (the label guard refuses
//     nsclaim's ownership labels on ClusterRoles and ClusterRoleBindings to everyone else), is owned by
//     this namespace object (its UID): for a claim, the ClusterRoleBinding carrying the claim's UID
//     and namespace; for a pool, the ClusterRole, and the namespace carries no claim's marks.
//
// A nil Verifier verifies nothing.
type Verifier struct {
	Key        *Key
	KeyCreated time.Time
	// Client reads the namespace watcher's RBAC and writes the record of a namespace of an earlier
	// release.
	Client   client.Client
	Recorder recorder.EventRecorder
}

// Owns reports whether nsclaim made ns for s. A namespace that carries s's marks without a record
// that proves them is reported (see Refused) by the caller, which knows what it was about to do.
func (v *Verifier) Owns(ctx context.Context, ns metav1.Object, s Subject) (bool, error) {
	if v == nil {
		return false, nil
	}
	if v.Key.Verify(ns, s) {
		return true, nil
	}
	if HasRecord(ns) || !ns.GetCreationTimestamp().Time.Before(v.KeyCreated) || !s.valid() {
		return false, nil
	}
	proven, err := v.madeByEarlierRelease(ctx, ns, s)
	if err != nil || !proven {
		return false, err
	}
	target := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns.GetName(), UID: ns.GetUID(), ResourceVersion: ns.GetResourceVersion()}}
	if err := v.recordUID(ctx, target, s); err != nil {
		return false, fmt.Errorf("recording nsclaim's ownership of namespace %s, made by an earlier release: %w", ns.GetName(), err)
	}
	logf.FromContext(ctx).Info("Recorded the ownership of a namespace made by an earlier release", "recordedNamespace", ns.GetName())
	return true, nil
}

// ClaimOf returns the UID of the claim whose marks ns carries (the managed-by, requester namespace and
// claim UID labels, the claim name annotation) when nsclaim's record proves them, and whether it does:
// the one ownership test of a namespace counted for a claim (the claim limit's and the budgets' live
// lists, the budgets' status). A namespace without the whole marks is no claim's. The caller reports
// one that is marked but not proven (Refused) when it should: it knows what it was about to do.
func (v *Verifier) ClaimOf(ctx context.Context, ns metav1.Object) (types.UID, bool, error) {
	l := ns.GetLabels()
	if l[tenancyv1alpha1.ManagedByLabel] != tenancyv1alpha1.ManagedByValue {
		return "", false, nil
	}
	s := Claim(l[tenancyv1alpha1.ClaimNamespaceLabel], ns.GetAnnotations()[tenancyv1alpha1.ClaimNameAnnotation], l[tenancyv1alpha1.ClaimUIDLabel])
	if !s.valid() {
		return "", false, nil
	}
	if owned, err := v.Owns(ctx, ns, s); err != nil || !owned {
		return "", false, err
	}
	return types.UID(s.ClaimUID), true, nil
}

// Created is called with the namespace a create of this process just returned, for s. Its "t1" record
// verifies unless the API server's clock is more than CreationWindow from the operator's: then the
// "u1" record, bound to the UID the create returned, is written at once (this process made it, so it
// may say so). ns is updated to what the patch returned.
func (v *Verifier) Created(ctx context.Context, ns *corev1.Namespace, s Subject) error {
	if v.Key.Verify(ns, s) {
		return nil
	}
	logf.FromContext(ctx).Info("The API server's clock is more than a minute from the operator's: the namespace's record is bound to its UID",
		"createdNamespace", ns.Name, "created", ns.CreationTimestamp.Time)
	if err := v.recordUID(ctx, ns, s); err != nil {
		return fmt.Errorf("recording nsclaim's ownership of namespace %s by its UID: %w", ns.Name, err)
	}
	return nil
}

// recordUID writes the "u1" record of ns (its name, UID and resourceVersion are used) for s, with a
// merge patch conditional on that resourceVersion; ns becomes what the patch returned.
func (v *Verifier) recordUID(ctx context.Context, ns *corev1.Namespace, s Subject) error {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"resourceVersion": ns.ResourceVersion,
		"annotations":     map[string]string{tenancyv1alpha1.OwnershipAnnotation: v.Key.ForUID(ns.Name, string(ns.UID), s)},
	}})
	if err != nil {
		return err
	}
	return v.Client.Patch(ctx, ns, client.RawPatch(types.MergePatchType, patch), client.FieldOwner(kube.FieldOwner))
}

// madeByEarlierRelease checks the proof of a namespace without a record (see Verifier).
func (v *Verifier) madeByEarlierRelease(ctx context.Context, ns metav1.Object, s Subject) (bool, error) {
	name := tenancyv1alpha1.NamespaceWatcherPrefix + ns.GetName()
	var watcher client.Object = &rbacv1.ClusterRoleBinding{}
	if s.PoolClassUID != "" {
		watcher = &rbacv1.ClusterRole{}
	}
	if ok, err := kube.Found(v.Client.Get(ctx, client.ObjectKey{Name: name}, watcher)); err != nil || !ok {
		return false, err
	}
	l := watcher.GetLabels()
	if l[tenancyv1alpha1.ManagedByLabel] != tenancyv1alpha1.ManagedByValue ||
		l[tenancyv1alpha1.ClaimUIDLabel] != s.ClaimUID || l[tenancyv1alpha1.ClaimNamespaceLabel] != s.ClaimNamespace {
		return false, nil
	}
	for _, r := range watcher.GetOwnerReferences() {
		if r.APIVersion == "v1" && r.Kind == "Namespace" && r.Name == ns.GetName() && r.UID == ns.GetUID() {
			return true, nil
		}
	}
	return false, nil
}

// Refused reports a namespace that carries marks without nsclaim's record: a Warning Event on it (and
// on the claim its marks name, when the caller passes one), and the metric, by action.
func (v *Verifier) Refused(ctx context.Context, ns metav1.Object, claim client.Object, action string) {
	monitoring.OwnershipUnverified(action)
	logf.FromContext(ctx).Info("A namespace carries nsclaim's marks without nsclaim's ownership record: left alone",
		"markedNamespace", ns.GetName(), "action", action)
	if v == nil || v.Recorder == nil {
		return
	}
	msg := fmt.Sprintf("Namespace %s carries nsclaim's marks but not nsclaim's ownership record for them: someone else marked it."+
		" nsclaim does not %s it; remove the marks or the namespace (docs/security.md)", ns.GetName(), action)
	// The Event regards the Namespace itself, whatever form (typed, metadata only) it was read in.
	ref := &corev1.Namespace{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
		ObjectMeta: metav1.ObjectMeta{Name: ns.GetName(), UID: ns.GetUID(), ResourceVersion: ns.GetResourceVersion()}}
	v.Recorder.Eventf(ref, nil, corev1.EventTypeWarning, tenancyv1alpha1.OwnershipUnverifiedReason, "Refuse", "%s", msg)
	if claim != nil {
		v.Recorder.Eventf(claim, nil, corev1.EventTypeWarning, tenancyv1alpha1.OwnershipUnverifiedReason, "Refuse", "%s", msg)
	}
}
