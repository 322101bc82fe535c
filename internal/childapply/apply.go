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

// Package childapply writes the objects nsclaim keeps inside a namespace (a claim's children), created
// when missing and with server-side apply otherwise, and decides, without a client, whether one needs
// writing at all: the apply configuration of a typed object, a digest of it in
// claimpolicy.AppliedAnnotation (the fields nsclaim once set and no longer does), the comparison of
// what is desired with what the object holds, and the few cases where an apply changes nothing anyone
// may do (an RBAC object that grants what it should, a child that lacks only its claim's marks). It knows no claim: the caller says which values differ
// from one claim to the next (Identity), and whether a missing object is read again from the API server
// or a child lacking only its marks is left for later (Options).
package childapply

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
	"github.com/nsclaim/nsclaim-operator/internal/claimpolicy"
	"github.com/nsclaim/nsclaim-operator/internal/kube"
)

// Applier writes children with server-side apply, and only where they differ from what is desired.
type Applier struct {
	// Client reads through the informer cache and writes to the API server; its scheme knows every
	// kind applied.
	Client client.Client
	// APIReader reads from the API server directly: an object the cache misses, when
	// Options.ReadOnMiss is set.
	APIReader client.Reader
}

// Options say how Apply treats one child.
type Options struct {
	// Identity takes, out of the text the child's digest is made of, the values that differ from one
	// claim to the next (see Identity); nil leaves everything in.
	Identity *strings.Replacer
	// ReadOnMiss reads an object the cache does not hold from the API server, so that a cache that
	// lags behind a write does not count as a change.
	ReadOnMiss bool
	// DeferMarks leaves a child that lacks only its claim's marks unwritten, and reports it deferred.
	DeferMarks bool
}

// Apply makes the child want exist as built: a child that is missing is created, and one that exists is
// changed with a server-side apply under kube.FieldOwner that forces ownership of the fields nsclaim
// sets and leaves every other field (a label a tenant added) alone (the fields a create left are made
// the apply's when it would leave them behind, see apply). It reads the object through the cache
// first; one the cache does not hold (missing, stripped of its nsclaim labels, or made moments ago) is read from the API server when o.ReadOnMiss is set,
// and is otherwise applied at once. Nothing is sent when the object already carries everything the
// apply would set (see childAction). A binding whose roleRef differs is deleted and created again,
// since the API server refuses to change a roleRef. With o.DeferMarks, a child that lacks only its
// claim's marks (a pooled namespace's, made before any claim owned it: claimMarksOnly) is not written,
// and reported deferred. repaired says the child was created or changed in a way that changes what
// anyone may do.
func (a Applier) Apply(ctx context.Context, want client.Object, o Options) (repaired, deferred bool, err error) {
	key := client.ObjectKeyFromObject(want)
	gvk, err := apiutil.GVKForObject(want, a.Client.Scheme())
	if err != nil {
		return false, false, err
	}
	desired, err := ApplyConfiguration(want, gvk, o.Identity)
	if err != nil {
		return false, false, fmt.Errorf("building %s %s: %w", gvk.Kind, key, err)
	}
	have := reflect.New(reflect.TypeOf(want).Elem()).Interface().(client.Object)
	ok, err := kube.Found(a.Client.Get(ctx, key, have))
	if err == nil && !ok && o.ReadOnMiss {
		ok, err = kube.Found(a.APIReader.Get(ctx, key, have))
	}
	if err != nil {
		return false, false, fmt.Errorf("reading %s %s: %w", gvk.Kind, key, err)
	}
	var current map[string]any
	if ok {
		if current, err = runtime.DefaultUnstructuredConverter.ToUnstructured(have); err != nil {
			return false, false, fmt.Errorf("reading %s %s: %w", gvk.Kind, key, err)
		}
	}
	action := childAction(desired, current)
	if o.DeferMarks && action == childApply && claimMarksOnly(desired, current) {
		return false, true, nil
	}
	_, named := have.GetAnnotations()[tenancyv1alpha1.ClaimNameAnnotation]
	named = ok && named
	// An RBAC child that grants what it should is not written for its digest alone, unless it is written
	// anyway (its claim-name annotation goes): then the apply is that one write.
	if action == childApply && !named && rbacUpToDate(gvk.Kind, desired, current) {
		action = childUpToDate
	}
	// An apply that only moves the digest (an upgrade changed how it is taken), drops a field of a map
	// the class no longer sets, adds the claim's marks (a pooled namespace's child) or changes the
	// metadata of an RBAC object that grants what it should changes nothing anyone may do: it is no
	// repair, and the claim is not tested again for it.
	repair := action == childReplace || (!claimMarksOnly(desired, current) && !rbacGrantsEqual(gvk.Kind, desired, current))
	switch action {
	case childUpToDate:
		if named {
			return false, false, a.dropClaimName(ctx, have, gvk.Kind)
		}
		return false, false, nil
	case childReplace:
		uid, rv := have.GetUID(), have.GetResourceVersion()
		if err := a.Client.Delete(ctx, have, client.Preconditions{UID: &uid, ResourceVersion: &rv}); client.IgnoreNotFound(err) != nil {
			return false, false, fmt.Errorf("replacing %s %s: %w", gvk.Kind, key, err)
		}
		named, ok = false, false
	}
	applied := &unstructured.Unstructured{Object: desired}
	// A child that is not there is created: kube-apiserver spends about 1.7 times as long on an apply as
	// on a create of the same object (docs/benchmarks.md, "The cold burst, A/B"), and a fresh namespace's
	// children are all missing. One the cache missed that exists after all is applied.
	if err := a.write(ctx, applied, !ok, gvk.Kind+" "+key.String()); err != nil {
		return false, false, err
	}
	// The apply removed the claim-name annotation if nsclaim's field owner had applied it (0.3.0); one
	// written with an update (0.2.0) is still in the answer, and goes with one patch more.
	if _, still := applied.GetAnnotations()[tenancyv1alpha1.ClaimNameAnnotation]; named && still {
		return repair, false, a.dropClaimName(ctx, have, gvk.Kind)
	}
	return repair, false, nil
}

// write creates applied when missing is set, and applies it otherwise or when the create finds that it
// exists after all; what names it in an error.
func (a Applier) write(ctx context.Context, applied *unstructured.Unstructured, missing bool, what string) error {
	if missing {
		created, err := a.create(ctx, applied)
		if err != nil {
			return fmt.Errorf("creating %s: %w", what, err)
		}
		if created {
			return nil
		}
	}
	if err := a.apply(ctx, applied); err != nil {
		return fmt.Errorf("applying %s: %w", what, err)
	}
	return nil
}

// apply applies u under kube.FieldOwner, forcing ownership of the fields it sets. A server-side apply
// removes a field nsclaim no longer sets only if no other managed-fields entry owns it, and
// kube-apiserver keys entries by manager and operation: fields nsclaim's create (or any update under
// nsclaim's field manager) set and the apply no longer sets stay owned by that Update entry. When the apply's answer shows such
// fields (createdLeftovers), the Update entry is merged into the apply's (ownCreated) and the apply
// sent again, which removes them. That takes two writes more, only when the class dropped a field of a
// child that was created.
func (a Applier) apply(ctx context.Context, u *unstructured.Unstructured) error {
	desired := u.DeepCopy()
	send := func() error {
		return a.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(kube.FieldOwner), client.ForceOwnership)
	}
	if err := send(); err != nil {
		return err
	}
	left, err := createdLeftovers(u.GetManagedFields(), kube.FieldOwner)
	if err != nil || !left {
		return err
	}
	if err := a.ownCreated(ctx, u); err != nil {
		return err
	}
	*u = *desired
	return send()
}

// digestOnly reports whether current, an object that exists, carries every field of the apply
// configuration desired but its claimpolicy.AppliedAnnotation digest: what differs is the digest, and fields of
// current that desired no longer sets (lists, such as rules and subjects, are compared whole, so a
// rule or subject less is not digestOnly).
func digestOnly(desired, current map[string]any) bool {
	if current == nil {
		return false
	}
	md, _ := desired["metadata"].(map[string]any)
	ann, _ := md["annotations"].(map[string]any)
	withoutDigest := maps.Clone(ann)
	delete(withoutDigest, claimpolicy.AppliedAnnotation)
	m := maps.Clone(md)
	m["annotations"] = withoutDigest
	if len(withoutDigest) == 0 {
		delete(m, "annotations")
	}
	d := maps.Clone(desired)
	d["metadata"] = m
	return childAction(d, current) == childUpToDate
}

// claimMarksOnly reports whether current, an object that exists, carries every field of the apply
// configuration desired but its claim's marks (the claim-uid and claim-namespace labels) and its
// digest: a pooled namespace's child as the pool made it, before a claim took the namespace. A child
// marked for another claim is not. It holds for digestOnly too.
func claimMarksOnly(desired, current map[string]any) bool {
	if current == nil {
		return false
	}
	md, _ := desired["metadata"].(map[string]any)
	m := maps.Clone(md)
	if labels, _ := md["labels"].(map[string]any); labels != nil {
		cm, _ := current["metadata"].(map[string]any)
		have, _ := cm["labels"].(map[string]any)
		l := maps.Clone(labels)
		for _, k := range []string{tenancyv1alpha1.ClaimUIDLabel, tenancyv1alpha1.ClaimNamespaceLabel} {
			if v, ok := have[k]; ok && v != labels[k] {
				return false
			}
			delete(l, k)
		}
		m["labels"] = l
		if len(l) == 0 {
			delete(m, "labels")
		}
	}
	d := maps.Clone(desired)
	d["metadata"] = m
	return digestOnly(d, current)
}

// dropClaimNamePatch removes the claim-name annotation from a child.
var dropClaimNamePatch = client.RawPatch(types.MergePatchType,
	[]byte(`{"metadata":{"annotations":{"`+tenancyv1alpha1.ClaimNameAnnotation+`":null}}}`))

// dropClaimName removes the claim-name annotation from the child have, of kind kind, once. Children no
// longer carry it (only the namespace names its claim), and a server-side apply removes it only where
// nsclaim's field owner set it: a child made by another field manager (by 0.2.0, or by anyone who
// added the annotation) would keep it, and with it an annotation map of its own in the cache. So it is
// patched only where no apply is due or the apply left it: every write of an RBAC object by the operator
// costs kube-apiserver's escalation check (docs/benchmarks-history.md). It is not a repair: nothing the tenant
// may do changed.
func (a Applier) dropClaimName(ctx context.Context, have client.Object, kind string) error {
	if err := a.Client.Patch(ctx, have, dropClaimNamePatch, client.FieldOwner(kube.FieldOwner)); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("updating %s %s: %w", kind, client.ObjectKeyFromObject(have), err)
	}
	return nil
}

// Identity returns the replacer that takes, out of the text a child's digest is made of, the values
// that differ from one claim to the next: its namespace's name and UID, and the claim's UID and
// namespace (values, empty ones left out, in any order). Each becomes a token ("${1}", "${2}", ...),
// longest value first, and a "$" of the text becomes "$$". The replacement can be undone (read left to
// right, "$$" is "$" and "${n}" is the n-th value), so for one claim's children two texts that differ give
// two texts that differ: a digest still changes with every field the class changes.
func Identity(values ...string) *strings.Replacer {
	values = slices.DeleteFunc(slices.Clone(values), func(v string) bool { return v == "" })
	slices.SortStableFunc(values, func(a, b string) int { return len(b) - len(a) })
	values = slices.Compact(values)
	pairs := make([]string, 0, 2+2*len(values))
	pairs = append(pairs, "$", "$$")
	for i, v := range values {
		pairs = append(pairs, v, "${"+strconv.Itoa(i+1)+"}")
	}
	return strings.NewReplacer(pairs...)
}

// ApplyConfiguration returns the apply configuration of the typed object want, of kind gvk: the fields
// want sets, with its name, namespace, labels, annotations and owner references (optional fields it
// leaves empty are omitted; builders set explicit zero values, such as
// automountServiceAccountToken=false, through pointers), with claimpolicy.AppliedAnnotation set to their digest,
// taken with id's values left out (nil: none).
func ApplyConfiguration(want client.Object, gvk schema.GroupVersionKind, id *strings.Replacer) (map[string]any, error) {
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(want)
	if err != nil {
		return nil, err
	}
	delete(u, "status")
	// Of the metadata, only what nsclaim decides: never a resourceVersion (an apply with one fails when
	// the object moved on) or other fields the API server sets.
	md := map[string]any{}
	if from, ok := u["metadata"].(map[string]any); ok {
		for _, k := range []string{"name", "namespace", "labels", "annotations", "ownerReferences"} {
			if v, ok := from[k]; ok {
				md[k] = v
			}
		}
	}
	u["metadata"] = md
	u["apiVersion"], u["kind"] = gvk.GroupVersion().String(), gvk.Kind
	body, err := json.Marshal(u)
	if err != nil {
		return nil, err
	}
	if id != nil {
		body = []byte(id.Replace(string(body)))
	}
	sum := sha256.Sum256(body)
	ann, _ := md["annotations"].(map[string]any)
	if ann == nil {
		ann = map[string]any{}
		md["annotations"] = ann
	}
	ann[claimpolicy.AppliedAnnotation] = hex.EncodeToString(sum[:12])
	return u, nil
}

// childDecision is what Apply does with a child.
type childDecision int

const (
	// childUpToDate: the object carries every field of the apply configuration; nothing is sent.
	childUpToDate childDecision = iota
	// childApply: the object is missing or differs; it is applied.
	childApply
	// childReplace: the object's roleRef differs, which cannot change in place; it is deleted and applied.
	childReplace
)

// childAction decides, from the apply configuration desired and the object as it is (current, nil when
// missing), what Apply does. Fields only others set, labels and annotations among them, do not
// count; lists must match element for element (the lists nsclaim sets are atomic); an owner reference
// nsclaim sets must be among the object's.
func childAction(desired, current map[string]any) childDecision {
	if current == nil {
		return childApply
	}
	if ref, ok := desired["roleRef"]; ok && !covers(current["roleRef"], ref) {
		return childReplace
	}
	for k, v := range desired {
		switch k {
		case "apiVersion", "kind":
		case "metadata":
			if !metadataCovers(current[k], v) {
				return childApply
			}
		default:
			if !covers(current[k], v) {
				return childApply
			}
		}
	}
	return childUpToDate
}

// metadataCovers reports whether the metadata have carries the name, labels, annotations and owner
// references of want.
func metadataCovers(have, want any) bool {
	h, _ := have.(map[string]any)
	w, _ := want.(map[string]any)
	for k, v := range w {
		if k != "ownerReferences" {
			if !covers(h[k], v) {
				return false
			}
			continue
		}
		hrefs, _ := h[k].([]any)
		wrefs, _ := v.([]any)
		for _, ref := range wrefs {
			if !slices.ContainsFunc(hrefs, func(x any) bool { return covers(x, ref) }) {
				return false
			}
		}
	}
	return true
}

// covers reports whether have holds want: every key of a map of want with a value have covers, lists
// of the same length whose elements cover want's, and equal values otherwise.
func covers(have, want any) bool {
	switch w := want.(type) {
	case map[string]any:
		h, ok := have.(map[string]any)
		if !ok {
			return false
		}
		for k, v := range w {
			hv, ok := h[k]
			if !ok || !covers(hv, v) {
				return false
			}
		}
		return true
	case []any:
		h, ok := have.([]any)
		if !ok || len(h) != len(w) {
			return false
		}
		for i := range w {
			if !covers(h[i], w[i]) {
				return false
			}
		}
		return true
	default:
		return reflect.DeepEqual(have, want)
	}
}
