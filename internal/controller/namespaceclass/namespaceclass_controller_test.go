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

package namespaceclass

import (
	"context"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
)

// TestReconcileWritesPoolReportsWithoutCheckingAgain: a reconcile that a pool report asked for writes
// status.pool and asks the API server nothing (the class was checked for this generation moments ago);
// a new generation is checked again; a class whose pool reported nothing keeps status.pool as it is.
func TestReconcileWritesPoolReportsWithoutCheckingAgain(t *testing.T) {
	ctx := context.Background()
	scheme := runtime.NewScheme()
	if err := tenancyv1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := authorizationv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	class := &tenancyv1alpha1.NamespaceClass{ObjectMeta: metav1.ObjectMeta{Name: "ci", UID: "uid-ci", Generation: 1},
		Spec: tenancyv1alpha1.NamespaceClassSpec{ClusterRole: "edit", Pool: tenancyv1alpha1.PoolSpec{Size: 2}}}
	reviews := 0
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(class).WithStatusSubresource(class).
		WithInterceptorFuncs(interceptor.Funcs{Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if ssar, ok := obj.(*authorizationv1.SelfSubjectAccessReview); ok {
				reviews++
				ssar.Status.Allowed = true
				return nil
			}
			return c.Create(ctx, obj, opts...)
		}}).Build()
	pools := NewPoolReports()
	r := &NamespaceClassReconciler{Client: c, Pools: pools}
	req := ctrl.Request{NamespacedName: client.ObjectKeyFromObject(class)}
	current := func() *tenancyv1alpha1.NamespaceClass {
		t.Helper()
		cur := &tenancyv1alpha1.NamespaceClass{}
		if err := c.Get(ctx, req.NamespacedName, cur); err != nil {
			t.Fatal(err)
		}
		return cur
	}

	if _, err := r.Reconcile(ctx, req); err != nil {
		t.Fatal(err)
	}
	cur := current()
	if reviews != 1 || !meta.IsStatusConditionTrue(cur.Status.Conditions, tenancyv1alpha1.ReadyCondition) || cur.Status.Pool != nil {
		t.Fatalf("first reconcile: %d reviews, status %+v; want 1 review, Ready, no pool reported yet", reviews, cur.Status)
	}

	want := &tenancyv1alpha1.PoolStatus{Ready: 1, Creating: 1}
	pools.Report(ctx, cur, want)
	if got := len(pools.events); got != 1 {
		t.Fatalf("a report that differs from status.pool queued %d requests, want 1", got)
	}
	res, err := r.Reconcile(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	cur = current()
	if reviews != 1 || !equality.Semantic.DeepEqual(cur.Status.Pool, want) {
		t.Fatalf("reconcile after a report: %d reviews, status.pool %+v; want no new review and %+v", reviews, cur.Status.Pool, want)
	}
	if res.RequeueAfter <= 0 || res.RequeueAfter > classRecheck {
		t.Errorf("RequeueAfter %s, want the rest of the recheck period (at most %s)", res.RequeueAfter, classRecheck)
	}
	pools.Report(ctx, cur, want)
	if got := len(pools.events); got != 1 {
		t.Errorf("a report equal to status.pool queued a request (%d queued)", got)
	}

	cur.Spec.Pool.Size = 3
	cur.Generation = 2 // the fake client does not count generations
	if err := c.Update(ctx, cur); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Reconcile(ctx, req); err != nil {
		t.Fatal(err)
	}
	if cur = current(); reviews != 2 || cur.Status.ObservedGeneration != cur.Generation {
		t.Errorf("a new generation: %d reviews, observedGeneration %d of %d; want it checked again", reviews, cur.Status.ObservedGeneration, cur.Generation)
	}
}
