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

package usable

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/nsclaim/nsclaim-operator/internal/kube"
	"github.com/nsclaim/nsclaim-operator/internal/watchcache"
)

// readerCache is a cache.Cache that answers Get from a client; nothing else of it is called.
type readerCache struct {
	cache.Cache
	r client.Reader
}

func (c readerCache) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	return c.r.Get(ctx, key, obj, opts...)
}

func TestCheckerPending(t *testing.T) {
	const ns = "team-a"
	hard := corev1.ResourceList{corev1.ResourcePods: resource.MustParse("10")}
	want := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "quota"}, Spec: corev1.ResourceQuotaSpec{Hard: hard}}
	computed := want.DeepCopy()
	computed.Status.Hard = hard
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: kube.DefaultServiceAccount}}
	forbidden := apierrors.NewForbidden(schema.GroupResource{Resource: "resourcequotas"}, want.Name, errors.New("no"))

	for _, tc := range []struct {
		name string
		// quota is the quota wanted; objs are what the API server holds.
		quota *corev1.ResourceQuota
		objs  []client.Object
		// informer reads the ServiceAccount through DefaultServiceAccounts, else through APIReader.
		informer bool
		// failGet makes every read fail with Forbidden.
		failGet bool
		// pending is a part of the reason expected; "" means usable.
		pending string
		poll    bool
		err     bool
	}{
		{name: "no quota, ServiceAccount made", objs: []client.Object{sa}},
		{name: "no quota, ServiceAccount missing, polled", pending: "to create ServiceAccount default in namespace team-a", poll: true},
		{name: "no quota, ServiceAccount missing, watched", informer: true, pending: "to create ServiceAccount default in namespace team-a"},
		{name: "no quota, ServiceAccount made, watched", informer: true, objs: []client.Object{sa}},
		{name: "quota not observed", quota: want, objs: []client.Object{sa}, pending: "ResourceQuota quota (not observed yet)"},
		{name: "quota status not computed", quota: want, objs: []client.Object{want, sa}, pending: "status.hard does not match spec.hard yet for pods"},
		{name: "quota waited for before the ServiceAccount", quota: want, objs: []client.Object{want}, pending: "ResourceQuota quota"},
		{name: "quota in force, ServiceAccount missing", quota: want, objs: []client.Object{computed}, pending: "ServiceAccount default", poll: true},
		{name: "quota in force, ServiceAccount made", quota: want, objs: []client.Object{computed, sa}},
		{name: "quota unreadable", quota: want, failGet: true, err: true},
		{name: "ServiceAccount unreadable", failGet: true, err: true},
		{name: "ServiceAccount unreadable, watched", informer: true, failGet: true, err: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := fake.NewClientBuilder().WithObjects(tc.objs...)
			if tc.failGet {
				b = b.WithInterceptorFuncs(interceptor.Funcs{Get: func(context.Context, client.WithWatch, client.ObjectKey, client.Object, ...client.GetOption) error {
					return forbidden
				}})
			}
			c := b.Build()
			u := Checker{Reader: c, APIReader: c}
			if tc.informer {
				u.APIReader = nil
				u.ServiceAccounts = watchcache.DefaultServiceAccountsFrom(readerCache{r: c})
			}
			pending, poll, err := u.Pending(context.Background(), ns, tc.quota)
			if tc.err {
				if !apierrors.IsForbidden(err) {
					t.Fatalf("Pending error = %v, want the Forbidden wrapped", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.pending == "" && pending != "" || !strings.Contains(pending, tc.pending) {
				t.Errorf("Pending = %q, want %q", pending, tc.pending)
			}
			if pending != "" && !strings.HasPrefix(pending, "Waiting for kube-controller-manager to ") {
				t.Errorf("Pending = %q, does not say what it waits for", pending)
			}
			if poll != tc.poll {
				t.Errorf("poll = %v, want %v", poll, tc.poll)
			}
		})
	}
}
