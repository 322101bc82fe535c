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

// Package seeds decides, without a client, what a class's seeds copy into a claimed namespace: which
// source objects may be copied (Resolve: the seed namespace only, the kind allow-list, the source
// owner's consent, the source UID pinned), what each copy is (Desired: the content, its origin and
// digest), what to do with the object found under a copy's name (Compare), and the SeedsSynced
// condition (Condition). docs/seeds.md explains the rules and the attacks each one stops.
package seeds

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
)

// DefaultResync is how often, by default, a claim's Secret copies are applied again
// (--seed-resync-interval): the operator never reads a Secret outside the seed namespace, so it learns
// of a tenant's delete or change of a Secret copy only by applying it again (docs/seeds.md). ConfigMap
// copies are watched and need no resync.
const DefaultResync = 2 * time.Minute

// SecretTypes are the Secret types a seed may copy: never a service-account-token Secret (the token
// controller would fill the copy with a token of the claimed namespace) nor a bootstrap token.
var SecretTypes = []corev1.SecretType{
	corev1.SecretTypeOpaque, corev1.SecretTypeDockerConfigJson, corev1.SecretTypeDockercfg,
	corev1.SecretTypeTLS, corev1.SecretTypeBasicAuth, corev1.SecretTypeSSHAuth,
}

// Lookup returns the source object of kind and name in the seed namespace (a *corev1.Secret or a
// *corev1.ConfigMap), or nil when there is none.
type Lookup func(kind tenancyv1alpha1.SeedKind, name string) client.Object

// Resolved is one seed of a class, resolved against its source: Source is set when it may be copied,
// Reason is SeedsSyncedReason then, else why not, with Message for the claim's condition.
type Resolved struct {
	Seed    tenancyv1alpha1.Seed
	Source  client.Object
	Reason  string
	Message string
}

// Target is the copy's name in a claimed namespace.
func (r Resolved) Target() string { return r.Seed.SeedTarget() }

// Resolve resolves every seed of class against the seed namespace through get, for a claim whose
// namespace holds pinned (the claim's status.seeds; nil for a new claim). A seed is copyable only
// when: seeds are on (seedNamespace set), its kind is on the allow-list, its source is in the seed
// namespace and of that kind (a Secret of an allowed type), the source carries the label
// seeds.nsclaim.dev/class naming the class or `All`, and its UID is the pinned one (or the source
// acknowledges replacing it, seeds.nsclaim.dev/replaces).
func Resolve(class *tenancyv1alpha1.NamespaceClass, seedNamespace string, get Lookup, pinned []tenancyv1alpha1.SeedStatus) []Resolved {
	out := make([]Resolved, 0, len(class.Spec.Seeds))
	for _, s := range class.Spec.Seeds {
		r := Resolved{Seed: s, Reason: tenancyv1alpha1.SeedsSyncedReason}
		r.Source, r.Reason, r.Message = resolveOne(class.Name, s, seedNamespace, get, pinnedUID(pinned, s))
		out = append(out, r)
	}
	return out
}

// resolveOne applies Resolve's rules to one seed, in order; the first that fails names the reason.
func resolveOne(class string, s tenancyv1alpha1.Seed, seedNamespace string, get Lookup, pinned string) (client.Object, string, string) {
	ref := fmt.Sprintf("%s %s/%s", s.Kind, seedNamespace, s.Name)
	if seedNamespace == "" {
		return nil, tenancyv1alpha1.SeedsDisabledReason, fmt.Sprintf("seed %s %s: the operator has no seed namespace (%s is unset)", s.Kind, s.Name, tenancyv1alpha1.SeedNamespaceEnv)
	}
	if !slices.Contains(tenancyv1alpha1.SeedKinds, s.Kind) {
		return nil, tenancyv1alpha1.SeedKindNotAllowedReason, fmt.Sprintf("seed %s %s: kind %q is not one a seed may copy (Secret, ConfigMap)", s.Kind, s.Name, s.Kind)
	}
	src := get(s.Kind, s.Name)
	if src == nil || src.GetNamespace() != seedNamespace || src.GetName() != s.Name {
		return nil, tenancyv1alpha1.SeedSourceNotFoundReason, fmt.Sprintf("seed %s: no such object carrying the label %s in the seed namespace (an object without it is never read)", ref, tenancyv1alpha1.SeedClassLabel)
	}
	if msg := kindProblem(s.Kind, src); msg != "" {
		return nil, tenancyv1alpha1.SeedKindNotAllowedReason, fmt.Sprintf("seed %s: %s", ref, msg)
	}
	if v, ok := src.GetLabels()[tenancyv1alpha1.SeedClassLabel]; !ok || (v != class && v != tenancyv1alpha1.SeedAnyClass) {
		return nil, tenancyv1alpha1.SeedNotConsentedReason, fmt.Sprintf("seed %s: the source lacks the label %s=%s (or All), so class %s may not copy it", ref, tenancyv1alpha1.SeedClassLabel, class, class)
	}
	if uid := string(src.GetUID()); pinned != "" && uid != pinned && src.GetAnnotations()[tenancyv1alpha1.SeedReplacesAnnotation] != pinned {
		return nil, tenancyv1alpha1.SeedSourceReplacedReason, fmt.Sprintf("seed %s: the source was made again (UID %s, the copy came from %s); the copy is kept until the source carries %s=%s", ref, uid, pinned, tenancyv1alpha1.SeedReplacesAnnotation, pinned)
	}
	return src, tenancyv1alpha1.SeedsSyncedReason, ""
}

// kindProblem says why src cannot be the source of a seed of kind, or "" when it can: it must be of
// that Go type (the kind is checked again here, whatever the lookup returned), and a Secret of an
// allowed type.
func kindProblem(kind tenancyv1alpha1.SeedKind, src client.Object) string {
	switch o := src.(type) {
	case *corev1.Secret:
		if kind != tenancyv1alpha1.SeedKindSecret {
			return "the source is a Secret, the seed names a " + string(kind)
		}
		if !slices.Contains(SecretTypes, o.Type) {
			return fmt.Sprintf("Secrets of type %s are never copied", o.Type)
		}
		return ""
	case *corev1.ConfigMap:
		if kind != tenancyv1alpha1.SeedKindConfigMap {
			return "the source is a ConfigMap, the seed names a " + string(kind)
		}
		return ""
	default:
		return fmt.Sprintf("the source is a %T, not a Secret or a ConfigMap", src)
	}
}

// pinnedUID returns the source UID that the claim's status records for seed s's copy, or "".
func pinnedUID(pinned []tenancyv1alpha1.SeedStatus, s tenancyv1alpha1.Seed) string {
	for _, p := range pinned {
		if p.Kind == s.Kind && p.Name == s.SeedTarget() {
			return p.SourceUID
		}
	}
	return ""
}

// Digest is the SHA-256, hex, of what a copy holds of its source: for a Secret its type and data, for
// a ConfigMap its data and binaryData (the immutable flag is not copied: a copy must follow its
// source). Keys are taken in order, so equal content has an equal digest.
func Digest(obj client.Object) string {
	h := sha256.New()
	write := func(tag, k string, v []byte) {
		_, _ = fmt.Fprintf(h, "%s\x00%d:%s\x00%d:", tag, len(k), k, len(v))
		_, _ = h.Write(v)
	}
	switch o := obj.(type) {
	case *corev1.Secret:
		write("type", "", []byte(o.Type))
		for _, k := range sortedKeys(o.Data) {
			write("data", k, o.Data[k])
		}
	case *corev1.ConfigMap:
		for _, k := range sortedKeys(o.Data) {
			write("data", k, []byte(o.Data[k]))
		}
		for _, k := range sortedKeys(o.BinaryData) {
			write("binaryData", k, o.BinaryData[k])
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}

// sortedKeys returns the keys of m in order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
