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

package security

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	eventsv1 "k8s.io/api/events/v1"
)

// operatorNamespace is where hack/local-operator.sh runs the operator (install.yaml's namespace).
const operatorNamespace = "nsclaim-operator-system"

// TestPreviousFenceReportedNotIntact (the previous-fence run only): the operator reports the previous
// release's fence as not intact, with a Warning Event PreviousReleaseFence regarding its namespace that says
// until when it is accepted. The gauge and the OperatorCondition are tested against envtest (cmd).
func TestPreviousFenceReportedNotIntact(t *testing.T) {
	if mode != "previous" {
		t.Skip("only with the previous release's fence")
	}
	g := NewWithT(t)
	g.Eventually(func(g Gomega) {
		events := &eventsv1.EventList{}
		g.Expect(admin.List(ctx, events)).To(Succeed())
		var found *eventsv1.Event
		for i := range events.Items {
			if events.Items[i].Reason == "PreviousReleaseFence" && events.Items[i].Regarding.Name == operatorNamespace {
				found = &events.Items[i]
			}
		}
		g.Expect(found).NotTo(BeNil(), "a PreviousReleaseFence Event regarding Namespace %s", operatorNamespace)
		g.Expect(found.Type).To(Equal("Warning"))
		g.Expect(found.Note).To(ContainSubstring("claims are provisioned only until"))
	}).WithTimeout(30 * time.Second).WithPolling(time.Second).Should(Succeed())
}
