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

// Package seeds is the claim reconciler's seeds phase (Phase.Reconcile): the class's seeds copied
// from the seed namespace into the claim's namespace, kept equal to their sources, and deleted when the
// class drops them; the pull Secrets listed on the tenant's (and the `default`) ServiceAccount. The
// decisions are internal/seeds'; this package reads and writes. It reads and records only what Claim
// holds.
package seeds

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
	"github.com/nsclaim/nsclaim-operator/internal/claimpolicy"
	"github.com/nsclaim/nsclaim-operator/internal/kube"
	seedpolicy "github.com/nsclaim/nsclaim-operator/internal/seeds"
)

// +kubebuilder:rbac:groups="",resources=configmaps,verbs=create;delete
// +kubebuilder:rbac:groups="",resources=secrets,verbs=create;delete;patch

// FieldOwner is the field manager of the seeds phase's writes: the imagePullSecrets it lists on a
// ServiceAccount are its own, apart from what the children phase applies to it.
const FieldOwner = kube.FieldOwner + "-seeds"

// Sources reads the seed caches (watchcache.Seeds).
type Sources interface {
	// Source returns the source object of kind and name in the seed namespace, or nil.
	Source(ctx context.Context, kind tenancyv1alpha1.SeedKind, name string) (client.Object, error)
	// ConfigMapCopy returns the ConfigMap copy name in namespace ns, or nil.
	ConfigMapCopy(ctx context.Context, ns, name string) (*corev1.ConfigMap, error)
}

// Phase is the seeds phase and its collaborators.
type Phase struct {
	// Client writes (the copies, the ServiceAccounts' imagePullSecrets); APIReader reads, metadata
	// only, a ConfigMap of a copy's name that is no copy (the caches do not hold it).
	Client    client.Client
	APIReader client.Reader
	// Sources reads the seed namespace and the ConfigMap copies; nil means seeds are off (no seed
	// namespace): a class's seeds are then reported SeedsDisabled.
	Sources Sources
	// SeedNamespace is the seed namespace ("" when seeds are off).
	SeedNamespace string
	// Resync is how often a claim that holds Secret copies is to be reconciled again, to apply them
	// (Claim.ResyncAfter); 0 never. Secret copies are not watched (docs/seeds.md): this is how a
	// tenant's delete or change of one is put back.
	Resync time.Duration
}

// Claim is the part of one reconcile of a claim that the phase reads (the first group) and records
// (the rest).
type Claim struct {
	Claim *tenancyv1alpha1.NamespaceClaim
	Class *tenancyv1alpha1.NamespaceClass
	Owner claimpolicy.Owner
	// Namespace is the claim's namespace, observed (nil: nothing is done).
	Namespace *corev1.Namespace

	// Seeds is the claim's new status.seeds (nil and Set false: unchanged).
	Seeds    []tenancyv1alpha1.SeedStatus
	SeedsSet bool
	// Condition is the SeedsSynced condition, nil when the class has no seeds and the claim holds none;
	// Blocks says Ready waits for a required seed.
	Condition *metav1.Condition
	Blocks    bool
	// Repaired counts the objects created or changed.
	Repaired int
	// ResyncAfter is Phase.Resync when the claim's namespace holds or should hold a Secret copy, else 0.
	ResyncAfter time.Duration
}

// Reconcile copies the class's seeds that may be copied (internal/seeds.Resolve) into the claim's
// namespace, writes only the copies that differ from their source (a tenant's edit, a rotated source,
// a deleted copy), deletes the copies of seeds the class dropped, lists the pull Secrets on the
// ServiceAccounts, and records status.seeds, the SeedsSynced condition and, when a Secret copy is kept,
// ResyncAfter. A namespace not observed yet or held by no class with seeds changes nothing.
func (p *Phase) Reconcile(ctx context.Context, s *Claim) error {
	if s.Namespace == nil || s.Class == nil || (len(s.Class.Spec.Seeds) == 0 && len(s.Claim.Status.Seeds) == 0) {
		return nil
	}
	resolved, err := p.resolve(ctx, s)
	if err != nil {
		return err
	}
	owner := claimpolicy.OwnershipLabels(s.Owner)
	outcomes := make([]tenancyv1alpha1.SeedStatus, 0, len(resolved))
	messages := make([]string, 0, len(resolved))
	required := make([]bool, 0, len(resolved))
	kept := map[string]bool{}
	for _, r := range resolved {
		o := tenancyv1alpha1.SeedStatus{Kind: r.Seed.Kind, Name: r.Target(), SourceUID: pinned(s.Claim.Status.Seeds, r), Reason: r.Reason}
		msg := r.Message
		if r.Source != nil {
			o.SourceUID = string(r.Source.GetUID())
			if o.Reason, msg, err = p.sync(ctx, s, r, owner); err != nil {
				return err
			}
		} else if r.Reason == tenancyv1alpha1.SeedNotConsentedReason && o.SourceUID != "" {
			// The source's owner withdrew its consent: the copy goes.
			if err := p.deleteCopy(ctx, s, r.Seed.Kind, r.Target()); err != nil {
				return err
			}
			o.SourceUID = ""
		}
		o.ImagePullSecret = seedpolicy.ListedOn(r, o)
		if o.SourceUID != "" {
			kept[o.Name] = true
			if o.Kind == tenancyv1alpha1.SeedKindSecret {
				s.ResyncAfter = p.Resync
			}
		}
		outcomes, messages, required = append(outcomes, o), append(messages, msg), append(required, r.Seed.Required)
	}
	if err := p.pruneStale(ctx, s); err != nil {
		return err
	}
	if err := p.attachPullSecrets(ctx, s, resolved, kept); err != nil {
		return err
	}
	s.Seeds, s.SeedsSet = outcomes, true
	if len(outcomes) > 0 {
		c, blocks := seedpolicy.Condition(outcomes, messages, required, seedpolicy.WasReady(s.Claim.Status.Conditions), s.Claim.Generation)
		s.Condition, s.Blocks = &c, blocks
	}
	return nil
}

// resolve resolves the class's seeds against the seed caches: the lookups are made first (they may
// fail), then internal/seeds.Resolve decides.
func (p *Phase) resolve(ctx context.Context, s *Claim) ([]seedpolicy.Resolved, error) {
	found := map[string]client.Object{}
	if p.Sources != nil {
		for _, seed := range s.Class.Spec.Seeds {
			obj, err := p.Sources.Source(ctx, seed.Kind, seed.Name)
			if err != nil {
				return nil, fmt.Errorf("reading seed source %s %s: %w", seed.Kind, seed.Name, err)
			}
			if obj != nil {
				found[string(seed.Kind)+"/"+seed.Name] = obj
			}
		}
	}
	get := func(kind tenancyv1alpha1.SeedKind, name string) client.Object { return found[string(kind)+"/"+name] }
	ns := p.SeedNamespace
	if p.Sources == nil {
		ns = ""
	}
	return seedpolicy.Resolve(s.Class, ns, get, s.Claim.Status.Seeds), nil
}

// pinned returns the source UID the claim's status records for r's copy, or "".
func pinned(st []tenancyv1alpha1.SeedStatus, r seedpolicy.Resolved) string {
	for _, p := range st {
		if p.Kind == r.Seed.Kind && p.Name == r.Target() {
			return p.SourceUID
		}
	}
	return ""
}

// sync makes the object of r's copy name in the claim's namespace the copy of r's source, whatever it
// is now (the class names it: a tenant's object of that name, or the copy with its marks taken off, is
// made the copy again, never left alone), and returns the seed's reason and message: Synced, or
// SeedConflict when the fence refuses the write (a fence older than this release's).
func (p *Phase) sync(ctx context.Context, s *Claim, r seedpolicy.Resolved, owner map[string]string) (string, string, error) {
	want := seedpolicy.Desired(r, s.Namespace.Name, owner)
	var err error
	if r.Seed.Kind == tenancyv1alpha1.SeedKindConfigMap {
		err = p.syncConfigMap(ctx, s, want, owner)
	} else {
		err = p.syncSecret(ctx, s, want, owner)
	}
	if apierrors.IsForbidden(err) {
		return tenancyv1alpha1.SeedConflictReason, fmt.Sprintf("%s %s/%s could not be made the copy of seed %s %s: %v",
			r.Seed.Kind, s.Namespace.Name, r.Target(), r.Seed.Kind, r.Seed.Name, err), nil
	}
	if err != nil {
		return "", "", fmt.Errorf("applying the copy of seed %s %s: %w", r.Seed.Kind, klog.KObj(want), err)
	}
	return tenancyv1alpha1.SeedsSyncedReason, "", nil
}

// syncConfigMap compares the ConfigMap of want's name (from the copies cache, or read metadata only
// when it lacks the seed label) with want and writes only when they differ; one that cannot be
// updated into want (not the claim's copy, or immutable) is deleted and made again.
func (p *Phase) syncConfigMap(ctx context.Context, s *Claim, want client.Object, owner map[string]string) error {
	var have client.Object
	cm, err := p.Sources.ConfigMapCopy(ctx, want.GetNamespace(), want.GetName())
	if err != nil {
		return fmt.Errorf("reading the copy %s: %w", want.GetName(), err)
	}
	if cm != nil {
		have = cm
	} else if have, err = p.foreignConfigMap(ctx, want.GetNamespace(), want.GetName()); err != nil {
		return err
	}
	switch seedpolicy.Compare(have, want, owner) {
	case seedpolicy.ActionNone:
		return nil
	case seedpolicy.ActionReplace:
		if err := p.remove(ctx, have); err != nil {
			return err
		}
	}
	if _, err := apply(ctx, p.Client, want, kube.FieldOwner); err != nil {
		return err
	}
	s.Repaired++
	return nil
}

// syncSecret applies want (the operator reads no Secret outside the seed namespace, so it cannot
// compare first) and compares the object the API server returns with it: one the apply could not make
// equal (another type, immutable, keys another field manager holds, the marks taken off before) is
// deleted and made again.
func (p *Phase) syncSecret(ctx context.Context, s *Claim, want client.Object, owner map[string]string) error {
	got, err := apply(ctx, p.Client, want, kube.FieldOwner)
	var uid types.UID
	switch {
	case apierrors.IsInvalid(err):
		// Its type, or data while immutable: the object may not be updated into the copy.
	case err != nil:
		return err
	default:
		have := &corev1.Secret{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(got.Object, have); err != nil {
			return fmt.Errorf("reading the applied copy %s: %w", klog.KObj(want), err)
		}
		if seedpolicy.Compare(have, want, owner) == seedpolicy.ActionNone {
			return nil
		}
		uid = have.UID
	}
	if err := p.remove(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: want.GetNamespace(), Name: want.GetName(), UID: uid}}); err != nil {
		return err
	}
	if _, err := apply(ctx, p.Client, want, kube.FieldOwner); err != nil {
		return err
	}
	s.Repaired++
	return nil
}

// remove deletes obj, the object found at a copy's name that cannot become the copy, only if it is
// still the one seen (its UID, when known); gone already is done.
func (p *Phase) remove(ctx context.Context, obj client.Object) error {
	var opts []client.DeleteOption
	if uid := obj.GetUID(); uid != "" {
		opts = append(opts, client.Preconditions{UID: &uid})
	}
	if err := p.Client.Delete(ctx, obj, opts...); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("deleting %s, which is not the copy: %w", klog.KObj(obj), err)
	}
	return nil
}

// foreignConfigMap reads, metadata only, a ConfigMap of the copy's name that the copies cache does
// not hold (it lacks the seed label): someone else's, or nil.
func (p *Phase) foreignConfigMap(ctx context.Context, ns, name string) (client.Object, error) {
	m := &metav1.PartialObjectMetadata{}
	m.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ConfigMap"))
	ok, err := kube.Found(p.APIReader.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, m))
	if err != nil || !ok {
		return nil, client.IgnoreNotFound(err)
	}
	return &corev1.ConfigMap{ObjectMeta: m.ObjectMeta}, nil
}

// deleteCopy deletes the claim's copy kind/name, which the claim's status records as made by the
// operator: a ConfigMap only if it still carries the claim's marks and the seed label (read from the
// copies cache), a Secret by its name (the operator cannot read it; the fence lets it delete a Secret
// only in a namespace nsclaim created, or one that carries its label; a refusal deletes nothing).
func (p *Phase) deleteCopy(ctx context.Context, s *Claim, kind tenancyv1alpha1.SeedKind, name string) error {
	var obj client.Object
	switch kind {
	case tenancyv1alpha1.SeedKindConfigMap:
		cm, err := p.Sources.ConfigMapCopy(ctx, s.Namespace.Name, name)
		if err != nil || cm == nil || !claimpolicy.MarkedFor(cm, s.Owner) {
			return err
		}
		obj = cm
	case tenancyv1alpha1.SeedKindSecret:
		obj = &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: s.Namespace.Name, Name: name}}
	default:
		return nil
	}
	err := p.Client.Delete(ctx, obj)
	if apierrors.IsNotFound(err) || apierrors.IsForbidden(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("deleting the copy %s %s: %w", kind, klog.KObj(obj), err)
	}
	s.Repaired++
	return nil
}

// pruneStale deletes the copies the claim's status records that the class no longer names.
func (p *Phase) pruneStale(ctx context.Context, s *Claim) error {
	for _, st := range s.Claim.Status.Seeds {
		named := slices.ContainsFunc(s.Class.Spec.Seeds, func(seed tenancyv1alpha1.Seed) bool {
			return seed.Kind == st.Kind && seed.SeedTarget() == st.Name
		})
		if !named && st.SourceUID != "" {
			if err := p.deleteCopy(ctx, s, st.Kind, st.Name); err != nil {
				return err
			}
		}
	}
	return nil
}

// attachPullSecrets lists the pull Secrets on the tenant ServiceAccount and, for TenantAndDefault, on
// the namespace's `default` one, with a field manager of its own (FieldOwner): an empty list removes
// what it listed before. Each is written only when its list changes: the tenant's as the manager's cache
// holds it, the `default` one's as the claim's status.seeds recorded it (a tenant that removes a pull
// Secret from its own `default` ServiceAccount gets it back at the next change of the class's seeds).
func (p *Phase) attachPullSecrets(ctx context.Context, s *Claim, resolved []seedpolicy.Resolved, kept map[string]bool) error {
	for _, sa := range []struct {
		name      string
		defaultSA bool
	}{{tenancyv1alpha1.TenantServiceAccountName, false}, {kube.DefaultServiceAccount, true}} {
		names := seedpolicy.PullSecrets(resolved, kept, sa.defaultSA)
		if len(names) == 0 && !s.hadPullSecrets() {
			continue
		}
		if sa.name == tenancyv1alpha1.TenantServiceAccountName && (claimpolicy.IsRequesterMode(s.Class) || p.lists(ctx, s.Namespace.Name, names)) {
			continue
		}
		if sa.defaultSA && slices.Equal(names, seedpolicy.ListedOnDefault(s.Claim.Status.Seeds)) {
			// What the `default` ServiceAccount lists has not changed since the operator last wrote it
			// (the claim's status records it; no cache holds that ServiceAccount's list).
			continue
		}
		obj := &corev1.ServiceAccount{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"},
			ObjectMeta: metav1.ObjectMeta{Namespace: s.Namespace.Name, Name: sa.name}}
		for _, n := range names {
			obj.ImagePullSecrets = append(obj.ImagePullSecrets, corev1.LocalObjectReference{Name: n})
		}
		if sa.name == tenancyv1alpha1.TenantServiceAccountName {
			// The fence keeps the tenant ServiceAccount's ownership labels; the apply states them so that
			// this field manager never looks like it removes them.
			obj.Labels = claimpolicy.OwnershipLabels(s.Owner)
		}
		_, err := apply(ctx, p.Client, obj, FieldOwner)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return fmt.Errorf("listing pull Secrets on ServiceAccount %s: %w", klog.KObj(obj), err)
		}
	}
	return nil
}

// lists reports whether the tenant ServiceAccount of ns, as the manager's cache holds it, lists exactly
// names as its imagePullSecrets: applying them again would change nothing, and a rotation or a resync
// of every claim would cost a request each for it.
func (p *Phase) lists(ctx context.Context, ns string, names []string) bool {
	acc := &corev1.ServiceAccount{}
	if err := p.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: tenancyv1alpha1.TenantServiceAccountName}, acc); err != nil {
		return false
	}
	return slices.EqualFunc(acc.ImagePullSecrets, names, func(r corev1.LocalObjectReference, n string) bool { return r.Name == n })
}

// hadPullSecrets reports whether the class or the claim's status may have listed a pull Secret before.
func (s *Claim) hadPullSecrets() bool {
	for _, st := range s.Claim.Status.Seeds {
		if st.Kind == tenancyv1alpha1.SeedKindSecret {
			return true
		}
	}
	return false
}

// apply writes obj, a typed object with its TypeMeta, by server-side apply as owner, taking over any
// field another manager holds, and returns the object as the API server stored it.
func apply(ctx context.Context, c client.Client, obj client.Object, owner string) (*unstructured.Unstructured, error) {
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	unstructured.RemoveNestedField(u, "metadata", "creationTimestamp")
	out := &unstructured.Unstructured{Object: u}
	if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(out), client.FieldOwner(owner), client.ForceOwnership); err != nil {
		return nil, err
	}
	return out, nil
}
