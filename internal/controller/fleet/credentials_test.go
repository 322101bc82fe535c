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

package fleet

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
)

func TestCredentialsCurrent(t *testing.T) {
	t0 := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	exp := metav1.NewTime(t0.Add(time.Hour))
	later := metav1.NewTime(t0.Add(2 * time.Hour))
	first := tenancyv1alpha1.IssuedToken{CredentialID: "id-1", IssuedAt: metav1.NewTime(t0)}
	issued := []tenancyv1alpha1.IssuedToken{first}
	renewed := []tenancyv1alpha1.IssuedToken{first, {CredentialID: "id-2", IssuedAt: metav1.NewTime(t0.Add(time.Minute))}}
	mirror := func(secret string, e *metav1.Time, ids []tenancyv1alpha1.IssuedToken) *tenancyv1alpha1.NamespaceClaim {
		m := &tenancyv1alpha1.NamespaceClaim{}
		m.Status.CredentialsSecretName, m.Status.TokenExpiresAt, m.Status.IssuedTokens = secret, e, ids
		return m
	}
	hub := func(secret string, e *metav1.Time, ids []tenancyv1alpha1.IssuedToken) *tenancyv1alpha1.NamespaceClaim {
		h := mirror(secret, e, ids)
		h.Name, h.UID = "pr-1", "uid-1"
		return h
	}
	cases := []struct {
		name        string
		hub, mirror *tenancyv1alpha1.NamespaceClaim
		copiedAgo   time.Duration // < 0: never copied by this process
		want        bool
	}{
		{"the hub records the mirror's token, copied a minute ago", hub("pr-1-kubeconfig", &exp, issued), mirror("m-kubeconfig", &exp, issued), time.Minute, true},
		{"never copied by this process (a restart)", hub("pr-1-kubeconfig", &exp, issued), mirror("m-kubeconfig", &exp, issued), -1, false},
		{"copied the resync interval ago", hub("pr-1-kubeconfig", &exp, issued), mirror("m-kubeconfig", &exp, issued), 10 * time.Minute, false},
		{"the member renewed the token: a later expiry", hub("pr-1-kubeconfig", &exp, issued), mirror("m-kubeconfig", &later, issued), time.Minute, false},
		{"the member issued another credential", hub("pr-1-kubeconfig", &exp, issued), mirror("m-kubeconfig", &exp, renewed), time.Minute, false},
		{"the hub's status names no Secret yet", hub("", &exp, issued), mirror("m-kubeconfig", &exp, issued), time.Minute, false},
		{"the hub's status names another Secret", hub("other", &exp, issued), mirror("m-kubeconfig", &exp, issued), time.Minute, false},
		{"the mirror has no credentials", hub("pr-1-kubeconfig", nil, nil), mirror("", nil, nil), time.Minute, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			clk := clocktesting.NewFakeClock(t0)
			r := &Reconciler{Clock: clk, CredentialsResync: 10 * time.Minute}
			if tc.copiedAgo >= 0 {
				r.copied.record(tc.hub.UID, t0.Add(-tc.copiedAgo))
			}
			if got := r.credentialsCurrent(tc.hub, tc.mirror); got != tc.want {
				t.Errorf("credentialsCurrent = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestCopyTimesForget(t *testing.T) {
	var c copyTimes
	t0 := time.Now()
	c.record("a", t0)
	if !c.within("a", t0.Add(time.Second), time.Minute) {
		t.Fatal("a copy a second ago is not within a minute")
	}
	c.forget("a")
	if c.within("a", t0.Add(time.Second), time.Minute) {
		t.Error("a forgotten claim still counts as copied")
	}
}

func TestCredentialsResyncDefault(t *testing.T) {
	if got := (&Reconciler{}).credentialsResync(); got != defaultCredentialsResync {
		t.Errorf("unset CredentialsResync = %s, want %s", got, defaultCredentialsResync)
	}
	if got := (&Reconciler{CredentialsResync: time.Second}).credentialsResync(); got != time.Second {
		t.Errorf("CredentialsResync 1s = %s", got)
	}
}
