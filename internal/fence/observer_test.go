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

package fence

import (
	"testing"
)

// TestFenceProblemSaysWhatIsInstalled: the problem a held claim shows names what is wrong, which
// releases' fence objects were found and which the operator accepts.
func TestFenceProblemSaysWhatIsInstalled(t *testing.T) {
	cases := []struct {
		name        string
		last        *Status
		wantChecked bool
		want        string
	}{
		{"not checked yet", nil, false, ""},
		{"intact", &Status{Intact: true, Release: "0.4.0", Found: []string{"0.4.0"}}, true, ""},
		{"an older release's fence", &Status{Problems: []string{"ValidatingAdmissionPolicy nsclaim-operator-fence: spec.validations differs from the shipped fence"}, Found: []string{"0.2.0"}}, true,
			"ValidatingAdmissionPolicy nsclaim-operator-fence: spec.validations differs from the shipped fence (found objects labelled app.kubernetes.io/version=0.2.0; this operator accepts the fence of release 0.4.0 or 0.3.0)"},
		{"nothing installed", &Status{Problems: []string{"ValidatingAdmissionPolicy nsclaim-operator-fence is missing"}}, true,
			"ValidatingAdmissionPolicy nsclaim-operator-fence is missing (found none of its objects; this operator accepts the fence of release 0.4.0 or 0.3.0)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := &Observer{accepts: []string{"0.4.0", "0.3.0"}, last: tc.last}
			checked, problem := o.FenceProblem()
			if checked != tc.wantChecked || problem != tc.want {
				t.Errorf("FenceProblem() = %v, %q; want %v, %q", checked, problem, tc.wantChecked, tc.want)
			}
		})
	}
}

// TestFenceIntactMessage: an intact fence that is not exactly this release's (another release's content,
// or objects labelled for another release) is accepted with a hint to apply this release's fence.yaml.
func TestFenceIntactMessage(t *testing.T) {
	const prefix = "The admission fence is installed as shipped: it matches the fence of release "
	cases := []struct {
		name string
		st   Status
		want string
	}{
		{"this release's", Status{Intact: true, Release: "0.4.0", Found: []string{"0.4.0"}},
			prefix + "0.4.0 (objects labelled app.kubernetes.io/version=0.4.0)"},
		{"the previous release's", Status{Intact: true, Release: "0.3.0", Found: []string{"unlabelled"}},
			prefix + "0.3.0 (objects labelled app.kubernetes.io/version=unlabelled); accepted, as during an upgrade: apply fence.yaml of release 0.4.0 to bring it up to date"},
		{"this release's content, older labels", Status{Intact: true, Release: "0.4.0", Found: []string{"0.3.0", "0.4.0"}},
			prefix + "0.4.0 (objects labelled app.kubernetes.io/version=0.3.0, 0.4.0); accepted, as during an upgrade: apply fence.yaml of release 0.4.0 to bring it up to date"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := &Observer{accepts: []string{"0.4.0", "0.3.0"}}
			if got := o.intactMessage(tc.st); got != tc.want {
				t.Errorf("intactMessage() = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestFenceIsCurrent: only this release's intact fence covers sleep and wake; the previous release's,
// accepted during an upgrade, does not.
func TestFenceIsCurrent(t *testing.T) {
	for _, tc := range []struct {
		name string
		last *Status
		want bool
	}{
		{"not checked yet", nil, false},
		{"this release's", &Status{Intact: true, Release: "0.4.0"}, true},
		{"the previous release's", &Status{Intact: true, Release: "0.3.0"}, false},
		{"broken", &Status{Problems: []string{"missing"}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := &Observer{accepts: []string{"0.4.0", "0.3.0"}, last: tc.last}
			if got := o.FenceIsCurrent(); got != tc.want {
				t.Errorf("FenceIsCurrent() = %t, want %t", got, tc.want)
			}
		})
	}
}
