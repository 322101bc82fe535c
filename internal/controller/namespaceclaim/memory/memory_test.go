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

package memory

import (
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
)

// The status this process wrote stands in for a cached copy that lags the write, and is forgotten once
// the cache holds the write (its resourceVersion) or the name holds another claim: a settled claim
// keeps no copy of its status in memory.
func TestWrittenStatusLivesUntilTheCacheHoldsTheWrite(t *testing.T) {
	g := NewWithT(t)
	m := &Memory{}
	req := ctrl.Request{NamespacedName: types.NamespacedName{Namespace: "ci", Name: "c"}}
	written := tenancyv1alpha1.NamespaceClaimStatus{Namespace: "team-a"}
	m.written.Store(req.NamespacedName, writtenStatus{uid: "uid-1", resourceVersion: "7", status: written.DeepCopy()})
	stored := func() bool { _, ok := m.written.Load(req.NamespacedName); return ok }
	cached := func(uid types.UID, rv string) *tenancyv1alpha1.NamespaceClaim {
		return &tenancyv1alpha1.NamespaceClaim{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ci", UID: uid, ResourceVersion: rv}}
	}

	stale := cached("uid-1", "6")
	m.Overlay(req.NamespacedName, stale)
	g.Expect(stale.Status).To(Equal(written), "a copy older than the write gets the written status")
	g.Expect(stored()).To(BeTrue(), "kept while the cache lags")

	caughtUp := cached("uid-1", "7")
	caughtUp.Status = written
	m.Overlay(req.NamespacedName, caughtUp)
	g.Expect(caughtUp.Status).To(Equal(written))
	g.Expect(stored()).To(BeFalse(), "forgotten once the cache holds the write")

	m.written.Store(req.NamespacedName, writtenStatus{uid: "uid-1", resourceVersion: "7", status: written.DeepCopy()})
	other := cached("uid-2", "9")
	m.Overlay(req.NamespacedName, other)
	g.Expect(other.Status).To(Equal(tenancyv1alpha1.NamespaceClaimStatus{}), "another claim of the same name keeps its own status")
	g.Expect(stored()).To(BeFalse())
}
