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

package credentials

import (
	"encoding/json"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
)

func TestSchedule(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	renew := 20 * time.Minute
	for _, tc := range []struct {
		name  string
		rec   *Record
		issue bool
		at    time.Time
	}{
		{"no token", nil, true, time.Time{}},
		{"ServiceAccount recreated", &Record{ExpiresAt: now.Add(time.Hour), ServiceAccountUID: "old"}, true, time.Time{}},
		{"renewal due", &Record{ExpiresAt: now.Add(renew), ServiceAccountUID: "sa"}, true, time.Time{}},
		{"expired", &Record{ExpiresAt: now.Add(-time.Minute), ServiceAccountUID: "sa"}, true, time.Time{}},
		{"valid", &Record{ExpiresAt: now.Add(time.Hour), ServiceAccountUID: "sa"}, false, now.Add(40 * time.Minute)},
	} {
		d := Schedule(now, tc.rec, "sa", renew)
		if d.Issue != tc.issue || !d.RenewAt.Equal(tc.at) {
			t.Errorf("%s: got %+v", tc.name, d)
		}
		if d.Issue && d.Reason == "" {
			t.Errorf("%s: no reason", tc.name)
		}
	}
}

func TestScheduleOnlyOnce(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name  string
		rec   *Record
		issue bool
	}{
		{"no token", nil, true},
		{"ServiceAccount recreated", &Record{ExpiresAt: now.Add(time.Hour), ServiceAccountUID: "old"}, true},
		{"expired", &Record{ExpiresAt: now.Add(-time.Minute), ServiceAccountUID: "sa"}, true},
		{"expires now", &Record{ExpiresAt: now, ServiceAccountUID: "sa"}, true},
		{"within what would be the renewal window: kept", &Record{ExpiresAt: now.Add(time.Minute), ServiceAccountUID: "sa"}, false},
		{"valid", &Record{ExpiresAt: now.Add(time.Hour), ServiceAccountUID: "sa"}, false},
	} {
		d := ScheduleOnlyOnce(now, tc.rec, "sa")
		if d.Issue != tc.issue || !d.RenewAt.IsZero() {
			t.Errorf("%s: got %+v, want issue %v and no renewal time", tc.name, d, tc.issue)
		}
		if d.Issue && d.Reason == "" {
			t.Errorf("%s: no reason", tc.name)
		}
	}
}

func TestOnceTTL(t *testing.T) {
	now := time.Now()
	if got := OnceTTL(now, now.Add(24*time.Hour)); got != 24*time.Hour {
		t.Errorf("until expiry: %v", got)
	}
	if got := OnceTTL(now, now.Add(time.Minute)); got != MinTokenTTL {
		t.Errorf("at least the minimum: %v", got)
	}
}

func TestPatchesTestOwnershipFirst(t *testing.T) {
	for name, b := range map[string][]byte{
		"probe":   ProbePatch("uid-1"),
		"replace": ReplaceDataPatch("uid-1", map[string][]byte{TokenKey: []byte("t")}, Token{ExpiresAt: time.Now(), ServiceAccountUID: "sa"}),
	} {
		var ops []map[string]any
		if err := json.Unmarshal(b, &ops); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if ops[0]["op"] != "test" || ops[0]["path"] != "/metadata/labels/tenancy.nsclaim.dev~1claim-uid" || ops[0]["value"] != "uid-1" {
			t.Errorf("%s: the first operation must test the claim-uid label: %v", name, ops[0])
		}
		if name == "probe" && len(ops) != 1 {
			t.Errorf("the probe must change nothing: %v", ops)
		}
	}
}

func TestKubeconfigAndSecretData(t *testing.T) {
	ep := Endpoint{Server: "https://api.example:6443", CAData: []byte("ca")}
	data, err := SecretData(ep, "ns-a", Token{Value: "tok"})
	if err != nil {
		t.Fatal(err)
	}
	kc, err := clientcmd.Load(data[KubeconfigKey])
	if err != nil {
		t.Fatal(err)
	}
	ctx := kc.Contexts[kc.CurrentContext]
	if ctx.Namespace != "ns-a" || kc.AuthInfos[ctx.AuthInfo].Token != "tok" || kc.Clusters[ctx.Cluster].Server != ep.Server {
		t.Errorf("kubeconfig: %+v", kc)
	}
	if string(data[TokenKey]) != "tok" || string(data[NamespaceKey]) != "ns-a" || string(data[CAKey]) != "ca" {
		t.Errorf("secret data: %v", data)
	}
}

func TestRecordFromAnnotations(t *testing.T) {
	exp := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	rec := RecordFromAnnotations(TokenAnnotations(Token{ExpiresAt: exp, ServiceAccountUID: "sa"}))
	if rec == nil || !rec.ExpiresAt.Equal(exp) || rec.ServiceAccountUID != "sa" {
		t.Errorf("round trip: %+v", rec)
	}
	if RecordFromAnnotations(map[string]string{"tenancy.nsclaim.dev/token-expires-at": "soon"}) != nil {
		t.Error("a malformed record is used")
	}
}

func TestOwnershipTestFailed(t *testing.T) {
	bare := func() metav1.Status {
		return metav1.Status{Status: metav1.StatusFailure, Code: 422, Reason: metav1.StatusReasonInvalid, Message: patchRejectedMessage, Details: &metav1.StatusDetails{}}
	}
	with := func(f func(*metav1.Status)) metav1.Status { st := bare(); f(&st); return st }
	cases := []struct {
		name string
		st   metav1.Status
		want bool
	}{
		{"failed test operation", bare(), true},
		{"no details at all", with(func(s *metav1.Status) { s.Details = nil }), true},
		{"validation error names the Secret", with(func(s *metav1.Status) {
			s.Message = `Secret "x" is invalid: data[bad key!]: Invalid value`
			s.Details = &metav1.StatusDetails{Kind: "Secret", Name: "x", Causes: []metav1.StatusCause{{Type: metav1.CauseTypeFieldValueInvalid, Field: "data[bad key!]"}}}
		}), false},
		{"generic message but a cause", with(func(s *metav1.Status) { s.Details.Causes = []metav1.StatusCause{{Message: "x"}} }), false},
		{"webhook denial", with(func(s *metav1.Status) { s.Message = `admission webhook "x" denied the request` }), false},
		{"conflict", with(func(s *metav1.Status) { s.Code = 409; s.Reason = metav1.StatusReasonConflict }), false},
		{"forbidden", with(func(s *metav1.Status) { s.Code = 403; s.Reason = metav1.StatusReasonForbidden }), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := OwnershipTestFailed(tc.st); got != tc.want {
				t.Fatalf("OwnershipTestFailed(%+v) = %v, want %v", tc.st, got, tc.want)
			}
		})
	}
}
