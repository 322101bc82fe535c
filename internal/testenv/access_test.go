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

package testenv

import (
	"context"
	"errors"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

func TestWaitAllowed(t *testing.T) {
	attrs := authorizationv1.ResourceAttributes{Namespace: "ns", Verb: "create", Resource: "roles"}
	forbidden := apierrors.NewForbidden(schema.GroupResource{Resource: "subjectaccessreviews"}, "", errors.New("no"))
	for _, tc := range []struct {
		name string
		user string
		// allowAt is the review that first answers allowed (1 is the first); 0: none does.
		allowAt int
		// fail makes creating a review fail.
		fail bool
		// kind is the review WaitAllowed must create.
		kind    string
		wantErr bool
	}{
		{name: "allowed at once, self", allowAt: 1, kind: "SelfSubjectAccessReview"},
		{name: "allowed at once, user", user: "system:serviceaccount:a:b", allowAt: 1, kind: "SubjectAccessReview"},
		{name: "allowed once the grant is in force", user: "u", allowAt: 3, kind: "SubjectAccessReview"},
		{name: "never allowed", allowAt: 0, kind: "SelfSubjectAccessReview", wantErr: true},
		{name: "reviews refused", user: "u", fail: true, kind: "SubjectAccessReview", wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			calls := 0
			c := fake.NewClientBuilder().WithInterceptorFuncs(interceptor.Funcs{
				Create: func(_ context.Context, _ client.WithWatch, obj client.Object, _ ...client.CreateOption) error {
					calls++
					allowed := tc.allowAt > 0 && calls >= tc.allowAt
					switch r := obj.(type) {
					case *authorizationv1.SelfSubjectAccessReview:
						if tc.kind != "SelfSubjectAccessReview" || *r.Spec.ResourceAttributes != attrs {
							t.Fatalf("created %+v, want a %s of %+v", r, tc.kind, attrs)
						}
						r.Status.Allowed = allowed
					case *authorizationv1.SubjectAccessReview:
						if tc.kind != "SubjectAccessReview" || r.Spec.User != tc.user || *r.Spec.ResourceAttributes != attrs {
							t.Fatalf("created %+v, want a %s of %+v for %s", r, tc.kind, attrs, tc.user)
						}
						r.Status.Allowed = allowed
					default:
						t.Fatalf("created %T", obj)
					}
					if tc.fail {
						return forbidden
					}
					return nil
				},
			}).Build()
			err := WaitAllowed(context.Background(), c, tc.user, attrs, 500*time.Millisecond)
			switch {
			case tc.wantErr && err == nil:
				t.Fatal("WaitAllowed = nil, want an error")
			case !tc.wantErr && err != nil:
				t.Fatalf("WaitAllowed = %v", err)
			case tc.fail && !apierrors.IsForbidden(err):
				t.Fatalf("WaitAllowed = %v, want the Forbidden wrapped", err)
			case !tc.wantErr && calls != tc.allowAt:
				t.Fatalf("%d reviews, want %d (it stops once allowed)", calls, tc.allowAt)
			}
		})
	}
}
