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

package claimpolicy

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestQuotaPending(t *testing.T) {
	rl := func(kv ...string) corev1.ResourceList {
		l := corev1.ResourceList{}
		for i := 0; i < len(kv); i += 2 {
			l[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
		}
		return l
	}
	want := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "q"}, Spec: corev1.ResourceQuotaSpec{Hard: rl("pods", "10", "requests.cpu", "1")}}
	withStatus := func(hard corev1.ResourceList) *corev1.ResourceQuota {
		q := want.DeepCopy()
		q.Status.Hard = hard
		return q
	}
	for _, tc := range []struct {
		name string
		have *corev1.ResourceQuota
		// waits lists what the message must name; none means in force.
		waits []string
	}{
		{name: "not observed", have: nil, waits: []string{"not observed yet"}},
		{name: "no status yet", have: withStatus(nil), waits: []string{"pods", "requests.cpu"}},
		{name: "computed", have: withStatus(rl("pods", "10", "requests.cpu", "1"))},
		{name: "same quantity, other spelling", have: withStatus(rl("pods", "10", "requests.cpu", "1000m"))},
		{name: "computed for an older spec", have: withStatus(rl("pods", "5", "requests.cpu", "1")), waits: []string{"pods"}},
		{name: "limit missing from status", have: withStatus(rl("pods", "10")), waits: []string{"requests.cpu"}},
		{name: "limit the spec dropped still in status", have: withStatus(rl("pods", "10", "requests.cpu", "1", "services", "2")), waits: []string{"services"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := QuotaPending(want, tc.have)
			if len(tc.waits) == 0 {
				if got != "" {
					t.Fatalf("QuotaPending = %q, want in force", got)
				}
				return
			}
			if !strings.Contains(got, "ResourceQuota q") {
				t.Errorf("QuotaPending = %q, does not name the quota", got)
			}
			for _, w := range tc.waits {
				if !strings.Contains(got, w) {
					t.Errorf("QuotaPending = %q, does not name %q", got, w)
				}
			}
		})
	}
}
