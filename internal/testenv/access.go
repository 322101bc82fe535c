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
	"fmt"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// accessPoll is how often WaitAllowed asks again.
const accessPoll = 100 * time.Millisecond

// WaitAllowed waits until the request attrs describes is allowed, asking every 100 ms for at most
// timeout: for user, through a SubjectAccessReview that c creates, or, when user is "", for c's own
// identity, through a SelfSubjectAccessReview. kube-apiserver's RBAC authorizer learns of a binding from
// its informers, so a grant made moments ago may not be in force yet: whoever made one waits here before
// acting on it. It returns nil once allowed, else an error that says what was still not allowed, with
// the last error creating the review, if any.
func WaitAllowed(ctx context.Context, c client.Client, user string, attrs authorizationv1.ResourceAttributes, timeout time.Duration) error {
	var last error
	err := wait.PollUntilContextTimeout(ctx, accessPoll, timeout, true, func(ctx context.Context) (bool, error) {
		var review client.Object
		var status *authorizationv1.SubjectAccessReviewStatus
		if user == "" {
			r := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &attrs}}
			review, status = r, &r.Status
		} else {
			r := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: user, ResourceAttributes: &attrs}}
			review, status = r, &r.Status
		}
		if last = c.Create(ctx, review); last != nil {
			return false, nil
		}
		return status.Allowed, nil
	})
	if err == nil {
		return nil
	}
	who := "the client's own identity"
	if user != "" {
		who = user
	}
	if last != nil {
		return fmt.Errorf("%s may still not %s %s in namespace %q after %s: %w", who, attrs.Verb, attrs.Resource, attrs.Namespace, timeout, last)
	}
	return fmt.Errorf("%s may still not %s %s in namespace %q after %s", who, attrs.Verb, attrs.Resource, attrs.Namespace, timeout)
}
