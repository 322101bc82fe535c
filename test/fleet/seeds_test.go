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
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
)

// seedNS is the members' seed namespace (hack/lib/fleet.sh starts their operators with it).
const seedNS = "nsclaim-seeds"

// seedsFromMember: a class whose member-side definition names a ConfigMap seed; each member's seed
// namespace holds a source of that name with the member's own data. A hub claim placed on m2 gets, in
// its namespace there, the copy of m2's source: the hub copies nothing, the member's operator seeds
// from the member (docs/fleet.md).
func (e *env) seedsFromMember(t *testing.T) {
	ctx := context.Background()
	must(t, e.hubAdmin.Create(ctx, &tenancyv1alpha1.NamespaceClass{ObjectMeta: metav1.ObjectMeta{Name: "seeded"},
		Spec: tenancyv1alpha1.NamespaceClassSpec{Placement: &tenancyv1alpha1.PlacementSpec{}}}))
	for _, m := range members {
		must(t, e.admins[m].Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "corp-ca", Namespace: seedNS,
			Labels: map[string]string{tenancyv1alpha1.SeedClassLabel: "seeded"}}, Data: map[string]string{"ca.crt": "the CA of " + m}}))
		must(t, e.admins[m].Create(ctx, &tenancyv1alpha1.NamespaceClass{ObjectMeta: metav1.ObjectMeta{Name: "seeded"},
			Spec: tenancyv1alpha1.NamespaceClassSpec{Naming: tenancyv1alpha1.NamingSpec{Prefix: "seeded-"},
				Seeds: []tenancyv1alpha1.Seed{{Kind: tenancyv1alpha1.SeedKindConfigMap, Name: "corp-ca", Required: true}}}}))
	}
	t.Cleanup(func() { e.release(t, "seeded-0") })
	e.claim(t, "seeded-0", "seeded", "m2")
	e.readyReason(t, "seeded-0", tenancyv1alpha1.ProvisionedReason)
	c, err := e.get(ctx, "seeded-0")
	must(t, err)
	if c.Status.Cluster != "m2" {
		t.Fatalf("seeded-0 placed on %s, want m2 (preferred, eligible)", c.Status.Cluster)
	}
	cm := &corev1.ConfigMap{}
	must(t, e.admins["m2"].Get(ctx, client.ObjectKey{Namespace: c.Status.Namespace, Name: "corp-ca"}, cm))
	if got := cm.Data["ca.crt"]; got != "the CA of m2" {
		t.Errorf("the seed copy in %s on m2 holds %q, want m2's own source", c.Status.Namespace, got)
	}
}
