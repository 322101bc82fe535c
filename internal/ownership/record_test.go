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

package ownership

import (
	"bytes"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
)

func mustKey(t *testing.T, b byte) *Key {
	t.Helper()
	k, err := NewKey(bytes.Repeat([]byte{b}, KeySize))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func namespace(name, uid string, created time.Time, record string) *corev1.Namespace {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID(uid), CreationTimestamp: metav1.NewTime(created)}}
	if record != "" {
		ns.Annotations = map[string]string{tenancyv1alpha1.OwnershipAnnotation: record}
	}
	return ns
}

// TestVerify tries every way a record could be moved, replayed or forged by someone without the key.
func TestVerify(t *testing.T) {
	key, other := mustKey(t, 1), mustKey(t, 2)
	at := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	claim := Claim("team-a", "pr-1", "claim-uid")
	pool := Pool("class-uid")
	t1 := key.AtCreate("ci-a", claim, at)
	u1 := key.ForUID("ci-a", "ns-uid", claim)
	for _, tc := range []struct {
		name string
		ns   *corev1.Namespace
		s    Subject
		key  *Key
		want bool
	}{
		{"the create's record, on the namespace it created", namespace("ci-a", "ns-uid", at.Add(time.Second), t1), claim, key, true},
		{"the create's record, API server clock behind", namespace("ci-a", "ns-uid", at.Add(-30*time.Second), t1), claim, key, true},
		{"the create's record copied onto another namespace", namespace("prod", "prod-uid", at.Add(time.Second), t1), claim, key, false},
		{"the create's record on a namespace of the same name made later", namespace("ci-a", "new-uid", at.Add(2*time.Minute), t1), claim, key, false},
		{"the create's record on a namespace of the same name made before", namespace("ci-a", "old-uid", at.Add(-2*time.Minute), t1), claim, key, false},
		{"the create's record, claimed for another claim", namespace("ci-a", "ns-uid", at, t1), Claim("team-a", "pr-1", "other-uid"), key, false},
		{"the create's record, claimed for a claim of another namespace", namespace("ci-a", "ns-uid", at, t1), Claim("team-b", "pr-1", "claim-uid"), key, false},
		{"the create's record, claimed as a pool's", namespace("ci-a", "ns-uid", at, t1), pool, key, false},
		{"the create's record with its time edited", namespace("ci-a", "ns-uid", at.Add(time.Hour), "t1.1795003200."+t1[len("t1.1795003200."):]), claim, key, false},
		{"the UID's record, on its namespace", namespace("ci-a", "ns-uid", at.Add(time.Hour), u1), claim, key, true},
		{"the UID's record copied onto another namespace of the same name", namespace("ci-a", "new-uid", at, u1), claim, key, false},
		{"the UID's record copied onto another namespace", namespace("prod", "ns-uid", at, u1), claim, key, false},
		{"a record made with another key", namespace("ci-a", "ns-uid", at, other.ForUID("ci-a", "ns-uid", claim)), claim, key, false},
		{"a pool's record, as the pool's", namespace("ci-p", "p-uid", at, key.AtCreate("ci-p", pool, at)), pool, key, true},
		{"a pool's record, as another class's pool", namespace("ci-p", "p-uid", at, key.AtCreate("ci-p", pool, at)), Pool("other-class"), key, false},
		{"a pool's record, as a claim's", namespace("ci-p", "p-uid", at, key.AtCreate("ci-p", pool, at)), claim, key, false},
		{"no record", namespace("ci-a", "ns-uid", at, ""), claim, key, false},
		{"garbage", namespace("ci-a", "ns-uid", at, "u1.AAAA"), claim, key, false},
		{"an unknown form", namespace("ci-a", "ns-uid", at, "v9."+u1), claim, key, false},
		{"a subject naming nothing", namespace("ci-a", "ns-uid", at, key.ForUID("ci-a", "ns-uid", Subject{})), Subject{}, key, false},
		{"a subject naming a claim and a pool", namespace("ci-a", "ns-uid", at, u1), Subject{ClaimNamespace: "team-a", ClaimName: "pr-1", ClaimUID: "claim-uid", PoolClassUID: "x"}, key, false},
		{"no key", namespace("ci-a", "ns-uid", at, u1), claim, nil, false},
	} {
		if got := tc.key.Verify(tc.ns, tc.s); got != tc.want {
			t.Errorf("%s: Verify = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestNewKeyRefusesShortKeys(t *testing.T) {
	if _, err := NewKey(make([]byte, KeySize-1)); err == nil {
		t.Error("a key of 31 bytes was accepted")
	}
}
