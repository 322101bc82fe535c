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
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
)

func TestMatchUsername(t *testing.T) {
	cases := []struct {
		pattern, username string
		want              bool
	}{
		{"alice", "alice", true},
		{"alice", "alice2", false},
		{"alice", "xalice", false},
		{"", "", true},
		{"", "a", false},
		{"*", "", true},
		{"*", "anything:at/all", true},
		{"github:repo:org/app:ref:*", "github:repo:org/app:ref:refs/pull/42/merge", true},
		{"github:repo:org/app:ref:*", "github:repo:org/app2:ref:refs/heads/main", false},
		{"github:repo:org/app:ref:*", "github:repo:org/app:ref:", true},
		{"github:repo:org/*:ref:refs/heads/main", "github:repo:org/a/b:ref:refs/heads/main", true},
		{"github:repo:org/*:ref:refs/heads/main", "github:repo:org/app:ref:refs/heads/main2", false},
		{"*:ci", "system:serviceaccount:team-a:ci", true},
		{"*:ci", "system:serviceaccount:team-a:ci-evil", false},
		{"a*b*c", "abc", true},
		{"a*b*c", "aXbYbZc", true},
		{"a*b*c", "aXbYc d", false},
		{"a**c", "ac", true},
		{"*a", "bab", false},
		{"*a*", "bab", true},
		// Regular-expression syntax is literal.
		{"org/.*", "org/app", false},
		{"org/.*", "org/.*", true},
		{"a.c", "abc", false},
		{"[a-z]", "a", false},
		{"^alice$", "alice", false},
		{"a?c", "abc", false},
	}
	for _, tc := range cases {
		if got := MatchUsername(tc.pattern, tc.username); got != tc.want {
			t.Errorf("MatchUsername(%q, %q) = %v, want %v", tc.pattern, tc.username, got, tc.want)
		}
	}
}

func TestCheckCreator(t *testing.T) {
	inForce := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	intact := StampState{Intact: true, InForceSince: inForce}
	requester := func(allowed ...string) *tenancyv1alpha1.NamespaceClass {
		return &tenancyv1alpha1.NamespaceClass{ObjectMeta: metav1.ObjectMeta{Name: "ci"}, Spec: tenancyv1alpha1.NamespaceClassSpec{
			Credentials: tenancyv1alpha1.CredentialsSpec{Mode: tenancyv1alpha1.CredentialsModeRequester,
				Requester: &tenancyv1alpha1.RequesterCredentials{AllowedUsernames: allowed}}}}
	}
	claim := func(user string, created time.Time) *tenancyv1alpha1.NamespaceClaim {
		c := &tenancyv1alpha1.NamespaceClaim{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "team-a", CreationTimestamp: metav1.NewTime(created)}}
		if user != "" {
			c.Spec.Creator = &tenancyv1alpha1.ClaimCreator{Username: user}
		}
		return c
	}
	later := inForce.Add(time.Minute)
	cases := []struct {
		name         string
		claim        *tenancyv1alpha1.NamespaceClaim
		class        *tenancyv1alpha1.NamespaceClass
		stamp        StampState
		bound        bool
		requestClaim bool
		wantReason   string
		wantMessage  []string
	}{
		{name: "token mode needs nothing", claim: claim("", later), class: &tenancyv1alpha1.NamespaceClass{}},
		{name: "admitted", claim: claim("ci:org/app", later), class: requester("ci:org/*"), stamp: intact},
		{name: "no creator", claim: claim("", later), class: requester("*"), stamp: intact,
			wantReason: tenancyv1alpha1.CreatorNotStampedReason, wantMessage: []string{"no spec.creator", "nsclaim-operator-stamp-creator"}},
		{name: "stamp missing", claim: claim("ci:org/app", later), class: requester("*"), stamp: StampState{Problems: []string{"MutatingAdmissionPolicy x is missing"}},
			wantReason: tenancyv1alpha1.CreatorNotStampedReason, wantMessage: []string{"cannot be verified", "MutatingAdmissionPolicy x is missing"}},
		{name: "stamp not checked", claim: claim("ci:org/app", later), class: requester("*"),
			wantReason: tenancyv1alpha1.CreatorNotStampedReason, wantMessage: []string{"not checked"}},
		{name: "created before the stamp", claim: claim("ci:org/app", inForce.Add(-time.Hour)), class: requester("*"), stamp: intact,
			wantReason: tenancyv1alpha1.CreatorNotStampedReason, wantMessage: []string{"before the MutatingAdmissionPolicy", "Create the claim again"}},
		{name: "created in the same second", claim: claim("ci:org/app", inForce), class: requester("*"), stamp: intact,
			wantReason: tenancyv1alpha1.CreatorNotStampedReason},
		{name: "created while the stamp settles", claim: claim("ci:org/app", inForce.Add(StampSettle)), class: requester("*"), stamp: intact,
			wantReason: tenancyv1alpha1.CreatorNotStampedReason},
		{name: "created after it settled", claim: claim("ci:org/app", inForce.Add(StampSettle+time.Second)), class: requester("*"), stamp: intact},
		{name: "bound before: the stamp is not asked again", claim: claim("ci:org/app", inForce.Add(-time.Hour)), class: requester("*"), bound: true},
		{name: "not admitted", claim: claim("ci:evil/app", later), class: requester("ci:org/*", "alice"), stamp: intact,
			wantReason: tenancyv1alpha1.CreatorNotAdmittedReason, wantMessage: []string{`"ci:evil/app"`, "spec.credentials.requester.allowedUsernames"}},
		{name: "class tightened after binding", claim: claim("ci:org/app", later), class: requester("alice"), bound: true,
			wantReason: tenancyv1alpha1.CreatorNotAdmittedReason, wantMessage: []string{"spec.credentials.requester.allowedUsernames"}},
		{name: "operator's own claim", claim: claim("system:serviceaccount:nsclaim-operator-system:nsclaim-operator-controller-manager", later), class: requester("*"), stamp: intact,
			wantReason: tenancyv1alpha1.CreatorNotAdmittedReason, wantMessage: []string{"ConfigMap protocol supports mode Token only"}},
		{name: "protocol request", claim: claim("", later), class: requester("*"), stamp: intact, requestClaim: true,
			wantReason: tenancyv1alpha1.CreatorNotAdmittedReason, wantMessage: []string{"ConfigMap protocol"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := CheckCreator(tc.claim, tc.class, tc.stamp, tc.bound, tc.requestClaim)
			if tc.wantReason == "" {
				if got != nil {
					t.Fatalf("refused: %v", got)
				}
				return
			}
			if got == nil || got.Reason != tc.wantReason {
				t.Fatalf("got %v, want reason %s", got, tc.wantReason)
			}
			for _, m := range tc.wantMessage {
				if !strings.Contains(got.Message, m) {
					t.Errorf("message %q lacks %q", got.Message, m)
				}
			}
		})
	}
}

func TestCreatorSubjects(t *testing.T) {
	creator := &tenancyv1alpha1.ClaimCreator{Username: "ci:org/app", Groups: []string{"ci:org", "ci:other", "system:authenticated", "system:masters"}}
	got := CreatorSubjects(creator, []string{"ci:org", "system:masters", "ci:absent"})
	want := []rbacv1.Subject{
		{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "ci:org/app"},
		{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: "ci:org"},
	}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("subject %d: got %v, want %v", i, got[i], want[i])
		}
	}
}

func TestBindCreator(t *testing.T) {
	class := &tenancyv1alpha1.NamespaceClass{ObjectMeta: metav1.ObjectMeta{Name: "ci"}, Spec: tenancyv1alpha1.NamespaceClassSpec{
		ExtraRoleBindings: []tenancyv1alpha1.ExtraRoleBinding{{Name: "viewers", ClusterRole: "view", Subjects: []rbacv1.Subject{{Kind: rbacv1.GroupKind, Name: "auditors"}}}},
		Credentials: tenancyv1alpha1.CredentialsSpec{Mode: tenancyv1alpha1.CredentialsModeRequester,
			Requester: &tenancyv1alpha1.RequesterCredentials{AllowedUsernames: []string{"*"}, BindGroups: []string{"ci:org"}}}}}
	o := Owner{Namespace: "team-a", Name: "c", UID: "u"}
	d := Build("ci-x", o, class, nil)
	BindCreator(&d, &tenancyv1alpha1.ClaimCreator{Username: "ci:org/app", Groups: []string{"ci:org", "system:authenticated"}}, class)
	if d.ServiceAccount != nil {
		t.Error("a ServiceAccount is still desired")
	}
	user := rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "ci:org/app"}
	group := rbacv1.Subject{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: "ci:org"}
	for _, subjects := range [][]rbacv1.Subject{d.RoleBindings[0].Subjects, d.RoleBindings[1].Subjects, d.NamespaceWatcherBinding.Subjects} {
		if len(subjects) != 2 || subjects[0] != user || subjects[1] != group {
			t.Errorf("subjects %v, want the creator and its bound group", subjects)
		}
	}
	if s := d.RoleBindings[2].Subjects; len(s) != 1 || s[0].Name != "auditors" {
		t.Errorf("the class's extra binding changed: %v", s)
	}
	if d.TenantUser != "ci:org/app" || len(d.TenantGroups) != 2 {
		t.Errorf("tenant identity %s %v", d.TenantUser, d.TenantGroups)
	}

	Unbind(&d)
	for _, subjects := range [][]rbacv1.Subject{d.RoleBindings[0].Subjects, d.RoleBindings[1].Subjects, d.NamespaceWatcherBinding.Subjects} {
		if len(subjects) != 0 {
			t.Errorf("unbound, yet subjects %v", subjects)
		}
	}
	if s := d.RoleBindings[2].Subjects; len(s) != 1 {
		t.Errorf("the class's extra binding changed: %v", s)
	}
}

func TestCheckClassStamp(t *testing.T) {
	requester := &tenancyv1alpha1.NamespaceClass{Spec: tenancyv1alpha1.NamespaceClassSpec{Credentials: tenancyv1alpha1.CredentialsSpec{
		Mode: tenancyv1alpha1.CredentialsModeRequester, Requester: &tenancyv1alpha1.RequesterCredentials{AllowedUsernames: []string{"*"}}}}}
	if ref := CheckClassStamp(&tenancyv1alpha1.NamespaceClass{}, StampState{}); ref != nil {
		t.Errorf("a Token class does not depend on the stamp: %v", ref)
	}
	if ref := CheckClassStamp(requester, StampState{Intact: true}); ref != nil {
		t.Errorf("stamp intact, yet %v", ref)
	}
	ref := CheckClassStamp(requester, StampState{Problems: []string{"MutatingAdmissionPolicyBinding x is missing"}})
	if ref == nil || ref.Reason != tenancyv1alpha1.CreatorNotStampedReason || !strings.Contains(ref.Message, "MutatingAdmissionPolicyBinding x is missing") ||
		!strings.Contains(ref.Message, "spec.credentials.mode is Requester") {
		t.Errorf("got %v", ref)
	}
}
