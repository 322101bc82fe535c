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

package childapply

import (
	"context"
	"encoding/json"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nsclaim/nsclaim-operator/internal/kube"
)

// create creates the child u under kube.FieldOwner. created is false when the object exists after all
// (a cache that lagged behind a write, or someone else made it): the caller applies it then.
func (a Applier) create(ctx context.Context, u *unstructured.Unstructured) (created bool, err error) {
	err = a.Client.Create(ctx, u, client.FieldOwner(kube.FieldOwner))
	if apierrors.IsAlreadyExists(err) {
		return false, nil
	}
	return err == nil, err
}

// ownCreated merges manager kube.FieldOwner's Update entry of u (an object as the API server answered)
// into its Apply entry (MergeCreatedIntoApplied), with u's resourceVersion as a precondition: nothing
// else changes.
func (a Applier) ownCreated(ctx context.Context, u *unstructured.Unstructured) error {
	fields, changed, err := MergeCreatedIntoApplied(u.GetManagedFields(), kube.FieldOwner)
	if err != nil || !changed {
		return err
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"resourceVersion": u.GetResourceVersion(),
		"managedFields":   fields,
	}})
	if err != nil {
		return err
	}
	return a.Client.Patch(ctx, u, client.RawPatch(types.MergePatchType, patch), client.FieldOwner(kube.FieldOwner))
}

// entriesOf returns the indexes in entries of manager's Update entry (the one its create or an update
// left) and its Apply entry of the main resource (not a subresource's), -1 where there is none.
func entriesOf(entries []metav1.ManagedFieldsEntry, manager string) (created, applied int) {
	created, applied = -1, -1
	for i, e := range entries {
		if e.Manager != manager || e.Subresource != "" {
			continue
		}
		switch e.Operation {
		case metav1.ManagedFieldsOperationUpdate:
			created = i
		case metav1.ManagedFieldsOperationApply:
			applied = i
		}
	}
	return created, applied
}

// trieAt returns the FieldsV1 trie of entries[i] as nested maps (nil for i < 0 or an empty set).
func trieAt(entries []metav1.ManagedFieldsEntry, i int) (map[string]any, error) {
	if i < 0 || entries[i].FieldsV1 == nil || len(entries[i].FieldsV1.GetRawBytes()) == 0 {
		return nil, nil
	}
	var m map[string]any
	err := json.Unmarshal(entries[i].FieldsV1.GetRawBytes(), &m)
	return m, err
}

// createdLeftovers reports whether manager's Update entry of the main resource owns a field that its
// Apply entry does not: after an apply, a field the apply no longer sets that the create (or an update)
// had set.
func createdLeftovers(entries []metav1.ManagedFieldsEntry, manager string) (bool, error) {
	ci, ai := entriesOf(entries, manager)
	created, err := trieAt(entries, ci)
	if err != nil {
		return false, err
	}
	applied, err := trieAt(entries, ai)
	if err != nil {
		return false, err
	}
	return !trieCovers(applied, created), nil
}

// trieCovers reports whether every path of the FieldsV1 trie want is a path of have. A "." (the field
// itself, which an Update entry records for every map it made) is covered by the field's path.
func trieCovers(have, want map[string]any) bool {
	for k, v := range want {
		if k == "." {
			continue
		}
		hv, ok := have[k]
		if !ok {
			return false
		}
		wm, _ := v.(map[string]any)
		hm, _ := hv.(map[string]any)
		if !trieCovers(hm, wm) {
			return false
		}
	}
	return true
}

// MergeCreatedIntoApplied returns entries with manager's Update entry of the main resource (the one its
// create or update left) merged into its Apply entry, made one if there is none; changed is false when
// there is no Update entry of manager. Both sets are FieldsV1 tries, merged key by key.
func MergeCreatedIntoApplied(entries []metav1.ManagedFieldsEntry, manager string) (out []metav1.ManagedFieldsEntry, changed bool, err error) {
	created, applied := entriesOf(entries, manager)
	if created < 0 {
		return entries, false, nil
	}
	out = make([]metav1.ManagedFieldsEntry, 0, len(entries))
	if applied < 0 {
		for i, e := range entries {
			if i == created {
				e.Operation = metav1.ManagedFieldsOperationApply
			}
			out = append(out, e)
		}
		return out, true, nil
	}
	ca, err := trieAt(entries, applied)
	if err != nil {
		return nil, false, err
	}
	cc, err := trieAt(entries, created)
	if err != nil {
		return nil, false, err
	}
	raw, err := json.Marshal(mergeTries(ca, cc))
	if err != nil {
		return nil, false, err
	}
	for i, e := range entries {
		switch i {
		case created:
			continue
		case applied:
			e.FieldsV1 = metav1.NewFieldsV1(string(raw))
		}
		out = append(out, e)
	}
	return out, true, nil
}

// mergeTries returns the union of two tries of nested maps.
func mergeTries(a, b map[string]any) map[string]any {
	out := make(map[string]any, len(a)+len(b))
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		bm, bok := v.(map[string]any)
		am, aok := out[k].(map[string]any)
		if aok && bok {
			out[k] = mergeTries(am, bm)
			continue
		}
		if _, exists := out[k]; !exists || bok {
			out[k] = v
		}
	}
	return out
}
