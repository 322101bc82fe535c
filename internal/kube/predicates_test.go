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

package kube_test

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
	"github.com/nsclaim/nsclaim-operator/internal/kube"
)

// TestNotOwnWrites covers the watch of claims of both the claim reconciler and the fleet hub.
func TestNotOwnWrites(t *testing.T) {
	base := func() *tenancyv1alpha1.NamespaceClaim {
		c := &tenancyv1alpha1.NamespaceClaim{ObjectMeta: metav1.ObjectMeta{Name: "pr-1", Namespace: "ci", Generation: 1,
			Finalizers: []string{tenancyv1alpha1.ClaimFinalizer}, Labels: map[string]string{"a": "1"}}}
		c.Status.Cluster = "m1"
		return c
	}
	now := metav1.Now()
	cases := []struct {
		name   string
		change func(c *tenancyv1alpha1.NamespaceClaim)
		want   bool
	}{
		{"a status write (the hub's copy of its mirror, the claim reconciler's status patch)", func(c *tenancyv1alpha1.NamespaceClaim) { c.Status.Namespace = "ns-1" }, false},
		{"the assignment", func(c *tenancyv1alpha1.NamespaceClaim) { c.Status.Cluster = "m2" }, false},
		{"a spec change", func(c *tenancyv1alpha1.NamespaceClaim) { c.Generation = 2 }, true},
		{"a label change", func(c *tenancyv1alpha1.NamespaceClaim) { c.Labels = map[string]string{"a": "2"} }, true},
		{"an annotation change", func(c *tenancyv1alpha1.NamespaceClaim) { c.Annotations = map[string]string{"b": "1"} }, true},
		{"the deletion starts", func(c *tenancyv1alpha1.NamespaceClaim) { c.DeletionTimestamp = &now }, true},
		{"the finalizer removed by someone else", func(c *tenancyv1alpha1.NamespaceClaim) { c.Finalizers = nil }, true},
	}
	p := kube.NotOwnWrites(tenancyv1alpha1.ClaimFinalizer)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			old, cur := base(), base()
			tc.change(cur)
			if got := p.Update(event.UpdateEvent{ObjectOld: old, ObjectNew: cur}); got != tc.want {
				t.Errorf("Update = %v, want %v", got, tc.want)
			}
		})
	}
	if !p.Create(event.CreateEvent{Object: base()}) {
		t.Error("a new claim queues nothing")
	}
	// The reconciler's own adding of its finalizer needs no reconcile.
	old, cur := base(), base()
	old.Finalizers = nil
	if p.Update(event.UpdateEvent{ObjectOld: old, ObjectNew: cur}) {
		t.Error("the reconciler's own adding of its finalizer queues the claim again")
	}
}
