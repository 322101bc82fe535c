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

package selftest

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

// authorizer answers the SubjectAccessReviews a fake client receives. allow says which checks (by
// String) are allowed; fail which fail with an error. When gated, each review waits in flight until
// the test releases it, so the test chooses the order in which reviews complete.
type authorizer struct {
	allow map[string]bool
	fail  map[string]error
	gated bool

	mu       sync.Mutex
	inFlight int
	maxSeen  int
	asked    []string
	specs    []authorizationv1.SubjectAccessReviewSpec
	entered  chan string
	release  map[string]chan struct{}
}

func newAuthorizer(gated bool) *authorizer {
	return &authorizer{allow: map[string]bool{}, fail: map[string]error{}, gated: gated,
		entered: make(chan string, 1000), release: map[string]chan struct{}{}}
}

func (a *authorizer) client() client.Client {
	return fake.NewClientBuilder().WithInterceptorFuncs(interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			sar, ok := obj.(*authorizationv1.SubjectAccessReview)
			if !ok {
				return c.Create(ctx, obj, opts...)
			}
			key := Check{Attributes: *sar.Spec.ResourceAttributes}.String()
			a.mu.Lock()
			a.inFlight++
			a.maxSeen = max(a.maxSeen, a.inFlight)
			a.asked = append(a.asked, key)
			a.specs = append(a.specs, sar.Spec)
			gate := make(chan struct{})
			a.release[key] = gate
			a.mu.Unlock()
			if a.gated {
				a.entered <- key
				<-gate
			}
			a.mu.Lock()
			a.inFlight--
			a.mu.Unlock()
			if err := a.fail[key]; err != nil {
				return err
			}
			sar.Status.Allowed = a.allow[key]
			sar.Status.Reason = "answer to " + key
			return nil
		},
	}).Build()
}

// releaseOne lets the in-flight review key complete.
func (a *authorizer) releaseOne(key string) {
	a.mu.Lock()
	gate := a.release[key]
	a.mu.Unlock()
	close(gate)
}

func check(verb, resource, ns string, allowed bool) Check {
	return Check{Allowed: allowed, Attributes: authorizationv1.ResourceAttributes{Verb: verb, Resource: resource, Namespace: ns}}
}

// sampleChecks are n checks, alternately expected allowed and denied.
func sampleChecks(n int) []Check {
	out := make([]Check, 0, n)
	for i := range n {
		out = append(out, check("get", fmt.Sprintf("r%02d", i), "ns-a", i%2 == 0))
	}
	return out
}

func failureStrings(fs []Failure) []string {
	out := make([]string, 0, len(fs))
	for _, f := range fs {
		out = append(out, f.String())
	}
	return out
}

func TestVerifyClassifiesMissingAndExcess(t *testing.T) {
	checks := []Check{
		check("create", "pods", "ns-a", true),         // allowed as expected
		check("create", "configmaps", "ns-a", true),   // denied: missing
		check("get", "secrets", "kube-system", false), // denied as expected
		check("create", "pods", "default", false),     // allowed: excess
		check("list", "secrets", "", false),           // allowed: excess
		check("delete", "namespaces", "ns-a", true),   // denied: missing
	}
	a := newAuthorizer(false)
	for _, k := range []string{"create pods in namespace ns-a", "create pods in namespace default", "list secrets cluster-wide"} {
		a.allow[k] = true
	}
	id := Identity{User: "system:serviceaccount:ns-a:nsclaim-tenant", Groups: []string{"system:serviceaccounts"}, UID: "u-1",
		Extra: map[string][]string{"authentication.kubernetes.io/credential-id": {"JTI=x"}}}
	res, err := Verify(context.Background(), a.client(), id, checks, 2)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := failureStrings(res.Missing), []string{"create configmaps in namespace ns-a", "delete namespaces in namespace ns-a"}; !reflect.DeepEqual(got, want) {
		t.Errorf("missing = %v, want %v", got, want)
	}
	if got, want := failureStrings(res.Excess), []string{"create pods in namespace default", "list secrets cluster-wide"}; !reflect.DeepEqual(got, want) {
		t.Errorf("excess = %v, want %v", got, want)
	}
	for _, f := range append(res.Missing, res.Excess...) {
		if f.Reason != "answer to "+f.String() {
			t.Errorf("%s: reason %q is not the authorizer's", f, f.Reason)
		}
	}
	if res.OK() || res.Fallback != "" {
		t.Errorf("OK = %v, fallback %q", res.OK(), res.Fallback)
	}
	if len(a.asked) != len(checks) {
		t.Errorf("asked %d reviews, want %d", len(a.asked), len(checks))
	}
	for _, s := range a.specs {
		if s.User != id.User || !reflect.DeepEqual(s.Groups, id.Groups) || s.UID != id.UID ||
			!reflect.DeepEqual(s.Extra["authentication.kubernetes.io/credential-id"], authorizationv1.ExtraValue{"JTI=x"}) {
			t.Errorf("review spec does not carry the identity: %+v", s)
		}
	}
}

func TestVerifyAllAsExpected(t *testing.T) {
	checks := sampleChecks(7)
	a := newAuthorizer(false)
	for _, c := range checks {
		a.allow[c.String()] = c.Allowed
	}
	res, err := Verify(context.Background(), a.client(), Identity{User: "u"}, checks, 3)
	if err != nil || !res.OK() || res.Missing != nil || res.Excess != nil {
		t.Fatalf("res %+v, err %v", res, err)
	}
	if len(a.specs) != 7 || a.specs[0].Extra != nil {
		t.Errorf("specs %+v", a.specs)
	}
}

// TestVerifyRespectsConcurrency holds every review in flight until the test releases it, one at a time
// and newest first, and records the most reviews ever in flight together.
func TestVerifyRespectsConcurrency(t *testing.T) {
	for _, tc := range []struct{ concurrency, checks, want int }{
		{1, 6, 1}, {3, 12, 3}, {4, 3, 3}, {0, 4, 1}, {-2, 4, 1},
	} {
		t.Run(fmt.Sprintf("concurrency %d, %d checks", tc.concurrency, tc.checks), func(t *testing.T) {
			a := newAuthorizer(true)
			checks := sampleChecks(tc.checks)
			type out struct {
				res Result
				err error
			}
			done := make(chan out, 1)
			go func() {
				res, err := Verify(context.Background(), a.client(), Identity{User: "u"}, checks, tc.concurrency)
				done <- out{res, err}
			}()
			var waiting []string
			for remaining := tc.checks; remaining > 0; remaining-- {
				// Wait until the bound is reached (or every remaining review is in flight).
				for len(waiting) < min(tc.want, remaining) {
					waiting = append(waiting, <-a.entered)
				}
				// Give a review beyond the bound, if Verify started one, the chance to arrive.
				for range 100 {
					runtime.Gosched()
				}
				for drained := false; !drained; {
					select {
					case k := <-a.entered:
						waiting = append(waiting, k)
					default:
						drained = true
					}
				}
				last := waiting[len(waiting)-1]
				waiting = waiting[:len(waiting)-1]
				a.releaseOne(last)
			}
			o := <-done
			if o.err != nil {
				t.Fatal(o.err)
			}
			if a.maxSeen != tc.want {
				t.Errorf("at most %d reviews in flight, want %d", a.maxSeen, tc.want)
			}
			// Every second check expects a denial, which the authorizer (allowing nothing) gives.
			if len(o.res.Missing) != (tc.checks+1)/2 || len(o.res.Excess) != 0 {
				t.Errorf("missing %d, excess %d", len(o.res.Missing), len(o.res.Excess))
			}
		})
	}
}

// TestVerifyOrderIsStable: whatever order the reviews complete in, the failures come sorted.
func TestVerifyOrderIsStable(t *testing.T) {
	checks := sampleChecks(10)
	// Allow the denied ones and deny the allowed ones: every check fails, half missing, half excess.
	run := func(order func([]string) string) Result {
		a := newAuthorizer(true)
		for _, c := range checks {
			a.allow[c.String()] = !c.Allowed
		}
		done := make(chan Result, 1)
		go func() {
			res, err := Verify(context.Background(), a.client(), Identity{User: "u"}, checks, len(checks))
			if err != nil {
				t.Error(err)
			}
			done <- res
		}()
		var waiting []string
		for range checks {
			waiting = append(waiting, <-a.entered)
		}
		for len(waiting) > 0 {
			next := order(waiting)
			a.releaseOne(next)
			for i, w := range waiting {
				if w == next {
					waiting = append(waiting[:i], waiting[i+1:]...)
					break
				}
			}
		}
		return <-done
	}
	smallest := func(w []string) string { s := append([]string(nil), w...); sort.Strings(s); return s[0] }
	largest := func(w []string) string { s := append([]string(nil), w...); sort.Strings(s); return s[len(s)-1] }
	interleaved := func(w []string) string {
		s := append([]string(nil), w...)
		sort.Strings(s)
		return s[len(s)/2]
	}
	results := make([]Result, 0, 3)
	for _, order := range []func([]string) string{smallest, largest, interleaved} {
		results = append(results, run(order))
	}
	for i, r := range results {
		if len(r.Missing) != 5 || len(r.Excess) != 5 {
			t.Fatalf("run %d: missing %d, excess %d", i, len(r.Missing), len(r.Excess))
		}
		for _, fs := range [][]Failure{r.Missing, r.Excess} {
			if s := failureStrings(fs); !sort.StringsAreSorted(s) {
				t.Errorf("run %d: not sorted: %v", i, s)
			}
		}
		if !reflect.DeepEqual(r, results[0]) {
			t.Errorf("run %d differs from run 0:\n%v\n%v", i, r, results[0])
		}
	}
}

func TestVerifyReturnsTheFirstError(t *testing.T) {
	errDown := errors.New("authorizer down")
	errOther := errors.New("another failure")
	checks := sampleChecks(6)
	tests := []struct {
		name        string
		concurrency int
		fail        map[int]error
		want        error
		names       string
	}{
		{name: "one error", concurrency: 3, fail: map[int]error{4: errDown}, want: errDown, names: checks[4].String()},
		{name: "serial: the first check's error", concurrency: 1, fail: map[int]error{2: errDown, 4: errOther}, want: errDown, names: checks[2].String()},
		{name: "serial: the first error even when a later one differs", concurrency: 1, fail: map[int]error{1: errOther, 5: errDown}, want: errOther, names: checks[1].String()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := newAuthorizer(false)
			for i, err := range tt.fail {
				a.fail[checks[i].String()] = err
			}
			res, err := Verify(context.Background(), a.client(), Identity{User: "u"}, checks, tt.concurrency)
			if !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
			if !strings.Contains(err.Error(), fmt.Sprintf("%q", tt.names)) {
				t.Errorf("error %q does not name the check %q", err, tt.names)
			}
			if !reflect.DeepEqual(res, Result{}) {
				t.Errorf("a result came with the error: %+v", res)
			}
			if len(a.asked) != len(checks) {
				t.Errorf("asked %d reviews, want all %d", len(a.asked), len(checks))
			}
		})
	}
}

func TestVerifyNoChecks(t *testing.T) {
	a := newAuthorizer(false)
	res, err := Verify(context.Background(), a.client(), Identity{User: "u"}, nil, 4)
	if err != nil || !res.OK() || len(a.asked) != 0 {
		t.Fatalf("res %+v, err %v, asked %v", res, err, a.asked)
	}
}
