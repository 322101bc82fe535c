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

package seeds

import (
	"fmt"
	"maps"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
)

// Desired is the copy of a copyable seed r (r.Source set) in namespace, marked with labels (the
// claim's ownership labels) and SeedLabel, and annotated with its origin and digest. It copies the
// content only: no other label, annotation, owner or finalizer of the source, and never immutable.
func Desired(r Resolved, namespace string, labels map[string]string) client.Object {
	l := maps.Clone(labels)
	if l == nil {
		l = map[string]string{}
	}
	l[tenancyv1alpha1.SeedLabel] = string(r.Seed.Kind)
	om := metav1.ObjectMeta{Name: r.Target(), Namespace: namespace, Labels: l, Annotations: map[string]string{
		tenancyv1alpha1.SeedSourceNamespaceAnnotation: r.Source.GetNamespace(),
		tenancyv1alpha1.SeedSourceNameAnnotation:      r.Source.GetName(),
		tenancyv1alpha1.SeedSourceUIDAnnotation:       string(r.Source.GetUID()),
		tenancyv1alpha1.SeedDigestAnnotation:          Digest(r.Source),
	}}
	switch src := r.Source.(type) {
	case *corev1.Secret:
		return &corev1.Secret{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"}, ObjectMeta: om, Type: src.Type, Data: maps.Clone(src.Data)}
	case *corev1.ConfigMap:
		return &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}, ObjectMeta: om,
			Data: maps.Clone(src.Data), BinaryData: maps.Clone(src.BinaryData)}
	}
	return nil
}

// Action is what to do with the object found under a copy's name.
type Action string

const (
	// ActionNone: the copy matches its source.
	ActionNone Action = "None"
	// ActionCreate: there is no object of that name: the copy is made.
	ActionCreate Action = "Create"
	// ActionUpdate: the copy is ours but its content or origin differs (a tenant's edit, a rotated
	// source): it is written again from the source.
	ActionUpdate Action = "Update"
	// ActionReplace: the object cannot be updated into the copy: its Secret type (immutable) or its
	// immutable flag differs, or it is not the claim's copy (someone else's, or the copy with its marks
	// taken off, which may hold keys of its own): it is deleted and made again.
	ActionReplace Action = "Replace"
)

// Compare decides what to do with have, the object of want's kind and name found in the claimed
// namespace (nil when there is none), for the desired copy want. The class names that object: an object
// without the claim's marks and SeedLabel (a tenant may take them off, or make an object of that name
// first) is replaced, never trusted nor left alone; a copy is compared by its content, never by its
// digest annotation alone, which whoever edits the copy may set too.
func Compare(have, want client.Object, owner map[string]string) Action {
	if have == nil {
		return ActionCreate
	}
	if !ours(have, want, owner) {
		return ActionReplace
	}
	if hs, ok := have.(*corev1.Secret); ok {
		ws := want.(*corev1.Secret)
		if hs.Type != ws.Type || (hs.Immutable != nil && *hs.Immutable) {
			return ActionReplace
		}
	}
	if hc, ok := have.(*corev1.ConfigMap); ok && hc.Immutable != nil && *hc.Immutable {
		return ActionReplace
	}
	if Digest(have) != Digest(want) || !sameOrigin(have, want) {
		return ActionUpdate
	}
	return ActionNone
}

// ours reports whether have carries the claim's ownership labels and the SeedLabel of want's kind.
func ours(have, want client.Object, owner map[string]string) bool {
	l := have.GetLabels()
	for k, v := range owner {
		if l[k] != v {
			return false
		}
	}
	return l[tenancyv1alpha1.SeedLabel] == want.GetLabels()[tenancyv1alpha1.SeedLabel]
}

// sameOrigin reports whether have's origin and digest annotations are want's.
func sameOrigin(have, want client.Object) bool {
	h, w := have.GetAnnotations(), want.GetAnnotations()
	for _, k := range []string{tenancyv1alpha1.SeedSourceNamespaceAnnotation, tenancyv1alpha1.SeedSourceNameAnnotation,
		tenancyv1alpha1.SeedSourceUIDAnnotation, tenancyv1alpha1.SeedDigestAnnotation} {
		if h[k] != w[k] {
			return false
		}
	}
	return true
}

// Stale reports whether copy, an object the operator made for the claim (its marks and SeedLabel),
// is no copy the class asks for any more: its kind and name are no seed's target.
func Stale(copy client.Object, kind tenancyv1alpha1.SeedKind, class *tenancyv1alpha1.NamespaceClass) bool {
	if copy.GetLabels()[tenancyv1alpha1.SeedLabel] != string(kind) {
		return false
	}
	for _, s := range class.Spec.Seeds {
		if s.Kind == kind && s.SeedTarget() == copy.GetName() {
			return false
		}
	}
	return true
}

// PullSecrets returns the names of the copies that r lists in the imagePullSecrets of the tenant
// ServiceAccount (tenant) or of the `default` one: Secrets only, and only copyable ones or ones already
// copied (kept).
func PullSecrets(rs []Resolved, kept map[string]bool, defaultSA bool) []string {
	var out []string
	for _, r := range rs {
		a := r.Seed.ImagePullSecret
		if r.Seed.Kind != tenancyv1alpha1.SeedKindSecret || a == "" || a == tenancyv1alpha1.ImagePullNone {
			continue
		}
		if defaultSA && a != tenancyv1alpha1.ImagePullTenantAndDefault {
			continue
		}
		if r.Source != nil || kept[r.Target()] {
			out = append(out, r.Target())
		}
	}
	return out
}

// ListedOn returns where the copy of r is listed as an image pull Secret for its outcome o (the claim's
// status.seeds entry): the seed's imagePullSecret for a Secret copy that is there (copyable, or kept),
// "" otherwise. It is the record ListedOnDefault reads back.
func ListedOn(r Resolved, o tenancyv1alpha1.SeedStatus) tenancyv1alpha1.ImagePullAttachment {
	a := r.Seed.ImagePullSecret
	if r.Seed.Kind != tenancyv1alpha1.SeedKindSecret || o.SourceUID == "" || a == tenancyv1alpha1.ImagePullNone {
		return ""
	}
	return a
}

// ListedOnDefault returns the copies that status (a claim's status.seeds) records as listed on the
// `default` ServiceAccount, in its order: what PullSecrets(..., true) returned when the operator last
// wrote it.
func ListedOnDefault(status []tenancyv1alpha1.SeedStatus) []string {
	var out []string
	for _, st := range status {
		if st.Kind == tenancyv1alpha1.SeedKindSecret && st.ImagePullSecret == tenancyv1alpha1.ImagePullTenantAndDefault {
			out = append(out, st.Name)
		}
	}
	return out
}

// Condition is the SeedsSynced condition of a claim from its seeds' outcomes (reason per seed, in the
// class's order), and blocks says whether the claim may not become Ready for them: a claim that was
// never Ready waits for a required seed not synced; a claim that was Ready is never held back.
func Condition(outcomes []tenancyv1alpha1.SeedStatus, messages []string, required []bool, wasReady bool, generation int64) (metav1.Condition, bool) {
	c := metav1.Condition{Type: tenancyv1alpha1.SeedsSyncedCondition, Status: metav1.ConditionTrue,
		Reason: tenancyv1alpha1.SeedsSyncedReason, ObservedGeneration: generation,
		Message: fmt.Sprintf("%d seeds copied and in sync", len(outcomes))}
	var bad []string
	blocks := false
	for i, o := range outcomes {
		if o.Reason == tenancyv1alpha1.SeedsSyncedReason {
			continue
		}
		if c.Status == metav1.ConditionTrue {
			c.Status, c.Reason = metav1.ConditionFalse, o.Reason
		}
		bad = append(bad, o.Reason+": "+messages[i])
		if required[i] && !wasReady {
			blocks = true
		}
	}
	if len(bad) > 0 {
		c.Message = strings.Join(bad, "; ")
	}
	return c, blocks
}

// WasReady reports whether conditions hold Ready=True.
func WasReady(conditions []metav1.Condition) bool {
	return meta.IsStatusConditionTrue(conditions, tenancyv1alpha1.ReadyCondition)
}
