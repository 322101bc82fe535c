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

package namespaceclaim

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
	"github.com/nsclaim/nsclaim-operator/internal/claimpolicy"
)

// A namespace made by an earlier release (no record, created before the key) is recorded only when
// its namespace watcher ClusterRoleBinding, carrying the claim's labels, is owned by that namespace's
// UID; with a watcher owned by another UID, or none, it is not the claim's.
func TestEarlierReleaseNamespaceIsRecordedOnlyWithItsWatcher(t *testing.T) {
	requireEnvtest(t)
	t.Parallel()
	owner := claimpolicy.Owner{Namespace: "team-old", Name: "pr-1", UID: uniq("old-claim-uid")}
	v := verifier(k8s)
	v.KeyCreated = time.Now().Add(time.Hour) // the key is newer than every namespace made here
	for _, tc := range []struct {
		name    string
		watcher string // "own", "other" (owned by another UID), "" (none)
		want    bool
	}{
		{"its own watcher", "own", true},
		{"a watcher owned by another namespace object", "other", false},
		{"no watcher", "", false},
	} {
		g := NewWithT(t)
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: uniq("old-release"),
			Labels: claimpolicy.OwnershipLabels(owner), Annotations: claimpolicy.OwnershipAnnotations(owner)}}
		g.Expect(k8s.Create(ctx, ns)).To(Succeed())
		t.Cleanup(func() { _ = k8s.Delete(ctx, ns) })
		if tc.watcher != "" {
			ref := claimpolicy.NamespaceOwnerRef(ns)
			if tc.watcher == "other" {
				ref.UID = "another-uid"
			}
			crb := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: claimpolicy.NamespaceWatcherName(ns.Name),
				Labels: claimpolicy.OwnershipLabels(owner), OwnerReferences: []metav1.OwnerReference{ref}},
				RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: claimpolicy.NamespaceWatcherName(ns.Name)},
				Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: tenancyv1alpha1.TenantServiceAccountName, Namespace: ns.Name}}}
			g.Expect(k8s.Create(ctx, crb)).To(Succeed())
			t.Cleanup(func() { _ = k8s.Delete(ctx, crb) })
		}
		// With a key older than the namespace, it was made since, so it had to carry a record: never
		// recorded this way, even with its own watcher.
		late := verifier(k8s)
		late.KeyCreated = time.Now().Add(-time.Hour)
		got, err := late.Owns(ctx, ns, subject(owner))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(got).To(BeFalse(), "%s: recorded although made after the key", tc.name)

		got, err = v.Owns(ctx, ns, subject(owner))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(got).To(Equal(tc.want), tc.name)
		cur := &corev1.Namespace{}
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(ns), cur)).To(Succeed())
		g.Expect(ownershipKey.Verify(cur, subject(owner))).To(Equal(tc.want), "%s: the record written", tc.name)
	}
}
