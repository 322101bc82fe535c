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
	"errors"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
	"github.com/nsclaim/nsclaim-operator/internal/credentials"
	"github.com/nsclaim/nsclaim-operator/internal/credentials/tokensecret"
)

// The probe's classification against the real API server: a Secret without the claim's label (none at
// all, or another claim's) is foreign; a 422 for any other reason is an error, never "foreign".
func TestSecretProbeClassifiesOnlyTheOwnershipTest(t *testing.T) {
	requireEnvtest(t)
	t.Parallel()
	g := NewWithT(t)
	ns := newRequesterNamespace(t, nil)
	const uid = "11111111-2222-3333-4444-555555555555"
	cases := []struct {
		name   string
		labels map[string]string
		patch  []byte
		want   bool
	}{
		{"no labels", nil, credentials.ProbePatch(uid), true},
		{"another claim's label", map[string]string{tenancyv1alpha1.ClaimUIDLabel: "other"}, credentials.ProbePatch(uid), true},
		{"ours, but the patch makes the Secret invalid", map[string]string{tenancyv1alpha1.ClaimUIDLabel: uid},
			[]byte(`[{"op":"test","path":"/metadata/labels/tenancy.nsclaim.dev~1claim-uid","value":"` + uid + `"},{"op":"add","path":"/data/bad key!","value":"eA=="}]`), false},
	}
	for _, tc := range cases {
		sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: uniq("probe"), Namespace: ns, Labels: tc.labels}, Data: map[string][]byte{"a": []byte("b")}}
		g.Expect(k8s.Create(ctx, sec)).To(Succeed())
		err := k8s.Patch(ctx, sec, client.RawPatch(types.JSONPatchType, tc.patch))
		g.Expect(err).To(HaveOccurred(), tc.name)
		var st apierrors.APIStatus
		_ = errors.As(err, &st)
		g.Expect(tokensecret.IsPatchTestFailure(err)).To(Equal(tc.want), "%s: %v %#v", tc.name, err, st.Status())
	}
}
