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

// createdLeftovers reports whether manager's Update entry of the main resource owns a field that its
// Apply entry does not: after an apply, a field the apply no longer sets that the create (or an update)
// had set.
func createdLeftovers(entries []metav1.ManagedFieldsEntry, manager string) (bool, error) {
	var created, applied map[string]any
	for _, e := range entries {
		if e.Manager != manager || e.Subresource != "" || e.FieldsV1 == nil {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal(e.FieldsV1.GetRawBytes(), &m); err != nil {
			return false, err
		}
		switch e.Operation {
		case metav1.ManagedFieldsOperationUpdate:
			created = m
		case metav1.ManagedFieldsOperationApply:
			applied = m
		}
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
	created, applied := -1, -1
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
	merged, err := mergeFieldsV1(entries[applied].FieldsV1, entries[created].FieldsV1)
	if err != nil {
		return nil, false, err
	}
	for i, e := range entries {
		switch i {
		case created:
			continue
		case applied:
			e.FieldsV1 = merged
		}
		out = append(out, e)
	}
	return out, true, nil
}

// mergeFieldsV1 returns the union of two FieldsV1 sets (JSON tries: a key per field, "." for the field
// itself), either of which may be nil.
func mergeFieldsV1(a, b *metav1.FieldsV1) (*metav1.FieldsV1, error) {
	var ma, mb map[string]any
	for _, x := range []struct {
		f *metav1.FieldsV1
		m *map[string]any
	}{{a, &ma}, {b, &mb}} {
		if x.f == nil || len(x.f.GetRawBytes()) == 0 {
			continue
		}
		if err := json.Unmarshal(x.f.GetRawBytes(), x.m); err != nil {
			return nil, err
		}
	}
	raw, err := json.Marshal(mergeTries(ma, mb))
	if err != nil {
		return nil, err
	}
	return metav1.NewFieldsV1(string(raw)), nil
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
