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

package placement

import (
	"math"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/labels"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
)

func TestChoose(t *testing.T) {
	eu := labels.SelectorFromSet(labels.Set{"region": "eu"})
	cases := []struct {
		name        string
		req         Request
		members     []Member
		want        string
		wantReasons []string
	}{
		{name: "no member", want: ""},
		{name: "least allocated by count", members: []Member{{Name: "a", Placed: 3}, {Name: "b", Placed: 1}, {Name: "c", Placed: 2}}, want: "b"},
		{name: "tie goes to the first name, whatever the order", members: []Member{{Name: "c", Placed: 1}, {Name: "b", Placed: 1}, {Name: "a", Placed: 1}}, want: "a"},
		{name: "least allocated by share of the member's cap", members: []Member{{Name: "a", Placed: 40, MaxClaims: 100}, {Name: "b", Placed: 25, MaxClaims: 50}}, want: "a"},
		{name: "class cap counts the class's claims", req: Request{MaxPerCluster: 10}, members: []Member{{Name: "a", Placed: 50, PlacedOfClass: 2}, {Name: "b", Placed: 0, PlacedOfClass: 3}}, want: "a"},
		{name: "packed takes the first eligible", req: Request{Strategy: tenancyv1alpha1.PlacementPacked}, members: []Member{{Name: "b"}, {Name: "a", Placed: 99}}, want: "a"},
		{name: "packed skips a full member", req: Request{Strategy: tenancyv1alpha1.PlacementPacked}, members: []Member{{Name: "a", Placed: 5, MaxClaims: 5}, {Name: "b"}}, want: "b", wantReasons: []string{"a: full: 5 of its 5 claims placed"}},
		{name: "preferred when eligible", req: Request{Preferred: "c"}, members: []Member{{Name: "a"}, {Name: "c", Placed: 9}}, want: "c"},
		{name: "preferred ignored when not eligible", req: Request{Preferred: "c"}, members: []Member{{Name: "a"}, {Name: "c", NotReady: "marked NotReady"}}, want: "a", wantReasons: []string{"c: NotReady: marked NotReady"}},
		{name: "preferred ignored when unknown", req: Request{Preferred: "z"}, members: []Member{{Name: "a", Placed: 1}, {Name: "b"}}, want: "b"},
		{name: "selector", req: Request{Selector: eu}, members: []Member{{Name: "a", Labels: map[string]string{"region": "us"}}, {Name: "b", Labels: map[string]string{"region": "eu"}, Placed: 7}}, want: "b",
			wantReasons: []string{"a: not selected by the class's spec.placement.clusterSelector (region=eu)"}},
		{name: "none eligible, one line each", req: Request{MaxPerCluster: 2, Selector: eu}, members: []Member{
			{Name: "d", Labels: map[string]string{"region": "eu"}, PlacedOfClass: 2},
			{Name: "c", Labels: map[string]string{"region": "eu"}, FenceNotIntact: "ValidatingAdmissionPolicy nsclaim-operator-fence is missing"},
			{Name: "b", Labels: map[string]string{"region": "us"}},
			{Name: "a", NotReady: "API server does not answer"},
		}, want: "", wantReasons: []string{
			"a: NotReady: API server does not answer",
			"b: not selected by the class's spec.placement.clusterSelector (region=eu)",
			"c: fence not intact: ValidatingAdmissionPolicy nsclaim-operator-fence is missing",
			"d: full for this class: 2 of spec.placement.maxClaimsPerCluster 2",
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := Choose(tc.req, tc.members)
			if d.Cluster != tc.want {
				t.Errorf("cluster = %q, want %q", d.Cluster, tc.want)
			}
			if strings.Join(d.Ineligible, "|") != strings.Join(tc.wantReasons, "|") {
				t.Errorf("ineligible = %q, want %q", d.Ineligible, tc.wantReasons)
			}
		})
	}
}

func TestMessage(t *testing.T) {
	if got := (Decision{}).Message(); !strings.Contains(got, "no member cluster is registered") {
		t.Errorf("empty fleet: %q", got)
	}
	got := Decision{Ineligible: []string{"a: x", "b: y"}}.Message()
	if got != "no member cluster may take the claim:\na: x\nb: y" {
		t.Errorf("message = %q", got)
	}
}

// place runs n placements over members with the given caps, one after the other, as the hub does.
func place(n int, strategy tenancyv1alpha1.PlacementStrategy, caps ...int32) (counts map[string]int32, order []string) {
	members := make([]Member, len(caps))
	for i, c := range caps {
		members[i] = Member{Name: string(rune('a' + i)), MaxClaims: c}
	}
	counts = map[string]int32{}
	for range n {
		d := Choose(Request{Strategy: strategy}, members)
		if d.Cluster == "" {
			break
		}
		order = append(order, d.Cluster)
		for i := range members {
			if members[i].Name == d.Cluster {
				members[i].Placed++
				members[i].PlacedOfClass++
			}
		}
		counts[d.Cluster]++
	}
	return counts, order
}

// TestLeastAllocatedSharesFollowTheCaps: 300 claims over caps 100/100/50 fill them; any smaller number
// lands within 5% of the cap-proportional shares at every step.
func TestLeastAllocatedSharesFollowTheCaps(t *testing.T) {
	caps := []int32{100, 100, 50}
	for _, n := range []int{300, 250, 150, 60, 20} {
		counts, _ := place(n, tenancyv1alpha1.PlacementLeastAllocated, caps...)
		placed := min(n, 250)
		total := int32(0)
		for i, c := range caps {
			name := string(rune('a' + i))
			want := float64(placed) * float64(c) / 250
			if got := float64(counts[name]); math.Abs(got-want) > 0.05*want+1 {
				t.Errorf("n=%d: %s got %v claims, want %.1f (within 5%%)", n, name, got, want)
			}
			if counts[name] > c {
				t.Errorf("n=%d: %s got %d claims over its cap %d", n, name, counts[name], c)
			}
			total += counts[name]
		}
		if int(total) != placed {
			t.Errorf("n=%d: %d placed, want %d (the rest find no eligible cluster)", n, total, placed)
		}
	}
}

// TestPackedFillsTheFirst: with Packed, member a takes every claim up to its cap before b gets one.
func TestPackedFillsTheFirst(t *testing.T) {
	counts, order := place(300, tenancyv1alpha1.PlacementPacked, 100, 100, 50)
	if counts["a"] != 100 || counts["b"] != 100 || counts["c"] != 50 {
		t.Fatalf("counts = %v, want a=100 b=100 c=50", counts)
	}
	for i, c := range order {
		want := "a"
		if i >= 200 {
			want = "c"
		} else if i >= 100 {
			want = "b"
		}
		if c != want {
			t.Fatalf("claim %d went to %s, want %s", i, c, want)
		}
	}
}
