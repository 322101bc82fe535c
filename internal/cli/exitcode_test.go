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

package cli

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestExitCode(t *testing.T) {
	gr := schema.GroupResource{Group: "tenancy.nsclaim.dev", Resource: "namespaceclaims"}
	for _, tc := range []struct {
		name string
		err  error
		want int
	}{
		{"nil", nil, ExitOK},
		{"refused", &RefusedError{Claim: "a", Reason: "NamespaceTaken"}, ExitRefused},
		{"refused, wrapped", fmt.Errorf("claim: %w", &RefusedError{Claim: "a"}), ExitRefused},
		{"timeout", &TimeoutError{What: "Ready"}, ExitTimeout},
		{"timeout while queued for a budget", &TimeoutError{What: "Ready", Queued: true}, ExitQueued},
		{"timeout while queued, wrapped", fmt.Errorf("claim: %w", &TimeoutError{What: "Ready", Queued: true}), ExitQueued},
		{"exists", &ExistsError{Claim: "a"}, ExitExists},
		{"not found (plugin)", &NotFoundError{What: "secret"}, ExitNotFound},
		{"usage", &UsageError{Msg: "bad flag"}, ExitUsage},
		{"forbidden (API)", apierrors.NewForbidden(gr, "a", errors.New("no")), ExitForbidden},
		{"forbidden (API), wrapped", fmt.Errorf("creating: %w", apierrors.NewForbidden(gr, "a", errors.New("no"))), ExitForbidden},
		{"unauthorized (API: a token expired or revoked)", apierrors.NewUnauthorized("Unauthorized"), ExitForbidden},
		{"unauthorized (API), wrapped", fmt.Errorf("reading: %w", apierrors.NewUnauthorized("Unauthorized")), ExitForbidden},
		{"not found (API)", apierrors.NewNotFound(gr, "a"), ExitNotFound},
		{"conflict (API) is a plain error", apierrors.NewConflict(gr, "a", errors.New("x")), ExitError},
		{"other", errors.New("connection refused"), ExitError},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ExitCode(tc.err); got != tc.want {
				t.Errorf("ExitCode(%v) = %d, want %d", tc.err, got, tc.want)
			}
		})
	}
}

func TestExitCodesAreDistinct(t *testing.T) {
	seen := map[int]bool{}
	for _, c := range []int{ExitOK, ExitError, ExitUsage, ExitRefused, ExitTimeout, ExitForbidden, ExitNotFound, ExitExists, ExitQueued} {
		if seen[c] {
			t.Fatalf("exit code %d is used twice", c)
		}
		seen[c] = true
	}
}

func TestMessage(t *testing.T) {
	if got := Message(fmt.Errorf("reading: %w", apierrors.NewUnauthorized("Unauthorized"))); !strings.Contains(got, UnauthorizedHint) {
		t.Errorf("Message(401) = %q, want the hint %q", got, UnauthorizedHint)
	}
	if got := Message(errors.New("connection refused")); got != "connection refused" {
		t.Errorf("Message(other) = %q, want the error's text only", got)
	}
}
