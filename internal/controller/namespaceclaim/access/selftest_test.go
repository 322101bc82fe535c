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

package access

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
	"github.com/nsclaim/nsclaim-operator/internal/controller/namespaceclaim/memory"
)

// Failures that come from events before the scheduled retry keep the schedule; only retries grow it.
func TestSelfTestRetryAfter(t *testing.T) {
	r := &Phase{Memory: &memory.Memory{}}
	claim := &tenancyv1alpha1.NamespaceClaim{ObjectMeta: metav1.ObjectMeta{UID: "u"}}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	steps := []struct {
		at   time.Duration
		want time.Duration
	}{
		{0, 2 * time.Second},                              // first failure
		{500 * time.Millisecond, 1500 * time.Millisecond}, // an event before the retry: same schedule
		{time.Second, time.Second},                        // another one
		{2 * time.Second, 4 * time.Second},                // the retry fails: doubled
		{6 * time.Second, 8 * time.Second},                // and again
	}
	for i, st := range steps {
		s := &Claim{Claim: claim, Now: t0.Add(st.at)}
		if got := r.selfTestRetryAfter(s); got != st.want {
			t.Fatalf("step %d at +%s: retry after %s, want %s", i, st.at, got, st.want)
		}
	}
}
