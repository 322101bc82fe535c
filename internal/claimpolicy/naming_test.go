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
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"
)

func TestNamespaceName(t *testing.T) {
	long := "a-very-long-branch-name-that-goes-on-and-on-and-on-past-the-label-limit"
	tests := []struct {
		name                                  string
		prefix, requested, claimNS, claimName string
		key                                   string
		want                                  string
	}{
		{name: "requested kept as is", prefix: "ci-", requested: "pr-42", want: "ci-pr-42"},
		{name: "requested without prefix", requested: "pr-42", want: "pr-42"},
		{name: "requested exactly 63", requested: repeat("a", 63), want: repeat("a", 63)},
		{name: "requested too long with prefix gets hash", prefix: "ci-", requested: repeat("b", 62),
			key: "uid-1", want: "ci-" + repeat("b", 49) + "-" + hashOf("uid-1/ci-"+repeat("b", 62))},
		{name: "derived carries keyed hash", prefix: "ci-", claimNS: "team-a", claimName: "build", key: "uid-1",
			want: "ci-team-a-build-" + hashOf("uid-1/team-a/build")},
		{name: "derived long is cut", claimNS: "team", claimName: long, key: "uid-2",
			want: "team-a-very-long-branch-name-that-goes-on-and-on-and-" + hashOf("uid-2/team/"+long)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := NamespaceName(tt.prefix, tt.requested, tt.claimNS, tt.claimName, tt.key)
			if got != tt.want {
				t.Fatalf("NamespaceName() = %q, want %q", got, tt.want)
			}
			if errs := validation.IsDNS1123Label(got); len(errs) > 0 {
				t.Fatalf("NamespaceName() = %q is not a DNS-1123 label: %v", got, errs)
			}
		})
	}
}

func TestDerivedNamesDoNotCollideOnJoin(t *testing.T) {
	a := NamespaceName("", "", "a-b", "c", "k")
	b := NamespaceName("", "", "a", "b-c", "k")
	if a == b {
		t.Fatalf("claims a-b/c and a/b-c share namespace %q", a)
	}
}

// TestDerivedNameNeedsTheKey: another requester who knows a victim's namespace and claim name, but not
// the UID of the victim's namespace, computes a different name, so it cannot claim the victim's
// derived (or shortened) name literally ahead of it.
func TestDerivedNameNeedsTheKey(t *testing.T) {
	victim := NamespaceName("ci-", "", "team-a", "build", "3f1c-victim-namespace-uid")
	for _, guess := range []string{"", "team-a", "team-a/build", "attacker-uid"} {
		if got := NamespaceName("ci-", "", "team-a", "build", guess); got == victim {
			t.Fatalf("key %q reproduces the victim's derived name %q", guess, victim)
		}
	}
	long := repeat("b", 62)
	if NamespaceName("ci-", long, "team-a", "build", "victim-uid") == NamespaceName("ci-", long, "team-b", "x", "attacker-uid") {
		t.Fatal("a shortened requested name is the same under another requester's key")
	}
}

func TestLabel(t *testing.T) {
	tests := map[string]string{
		"ok":          "ok",
		"Upper_Case":  "upper-case-" + hashOf("Upper_Case"),
		"--":          "x" + hashOf("--"),
		"":            "x" + hashOf(""),
		"a..b":        "a-b-" + hashOf("a..b"),
		"-leading":    "leading-" + hashOf("-leading"),
		"trailing-":   "trailing-" + hashOf("trailing-"),
		"ünïcödé-ns":  "n-c-d-ns-" + hashOf("ünïcödé-ns"),
		"under_score": "under-score-" + hashOf("under_score"),
	}
	for in, want := range tests {
		if got := Label(in); got != want {
			t.Errorf("Label(%q) = %q, want %q", in, got, want)
		}
	}
}

// FuzzNamespaceName checks the naming contract on arbitrary input: a valid DNS-1123 label of at most 63
// characters, the same name for the same input, and different names for different inputs.
func FuzzNamespaceName(f *testing.F) {
	f.Add("ci-", "pr-1", "team", "claim", "pr-2", "other")
	f.Add("", "", "a-b", "c", "", "b-c")
	f.Add("p-", repeat("x", 70), "ns", "n", repeat("x", 71), "n")
	f.Fuzz(func(t *testing.T, prefix, req1, ns1, name1, req2, name2 string) {
		key := "uid-of-" + ns1
		got1 := NamespaceName(prefix, req1, ns1, name1, key)
		if errs := validation.IsDNS1123Label(got1); len(errs) > 0 {
			t.Fatalf("NamespaceName(%q, %q, %q, %q) = %q: %v", prefix, req1, ns1, name1, got1, errs)
		}
		if again := NamespaceName(prefix, req1, ns1, name1, key); again != got1 {
			t.Fatalf("not deterministic: %q then %q", got1, again)
		}
		// Distinct requested names (same prefix) give distinct namespaces.
		if req1 != "" && req2 != "" && req1 != req2 {
			if got2 := NamespaceName(prefix, req2, ns1, name1, key); got2 == got1 {
				t.Fatalf("requested %q and %q both give %q", req1, req2, got1)
			}
		}
		// Distinct claims that ask for no name give distinct namespaces.
		if name1 != name2 {
			d1 := NamespaceName(prefix, "", ns1, name1, key)
			d2 := NamespaceName(prefix, "", ns1, name2, key)
			if d1 == d2 {
				t.Fatalf("claims %q and %q in %q both give %q", name1, name2, ns1, d1)
			}
		}
	})
}

func hashOf(s string) string { return hashed("", s)[1:] }

func repeat(s string, n int) string {
	out := ""
	for range n {
		out += s
	}
	return out
}
