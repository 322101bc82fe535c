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
	"crypto/sha256"
	"encoding/hex"
	"maps"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
)

const (
	// HubClaimUIDLabel on a mirror claim on a member names the hub claim it mirrors.
	HubClaimUIDLabel = "fleet.nsclaim.dev/hub-claim-uid"
	// HubClaimAnnotation on a mirror claim names the hub claim as namespace/name.
	HubClaimAnnotation = "fleet.nsclaim.dev/hub-claim"
	// ClusterAnnotation on a mirror claim names the member cluster the hub placed it on (the name of the
	// member's Secret on the hub): with HubClaimUIDLabel and HubClaimAnnotation, the hub's ownership
	// record of the mirror. The orphan sweep deletes only mirrors whose record names the member it reads.
	ClusterAnnotation = "fleet.nsclaim.dev/cluster"
)

// MirrorName is the name of the claim that mirrors hub claim namespace/name on its member: the claim's
// name (cut to 54 characters) and 8 hex characters of a hash of namespace/name, a DNS-1123 label.
func MirrorName(namespace, name string) string {
	sum := sha256.Sum256([]byte(namespace + "/" + name))
	base := name
	if len(base) > 54 {
		base = base[:54]
	}
	return base + "-" + hex.EncodeToString(sum[:4])
}

// desiredMirror is the claim the hub keeps on the member for hub claim c, in the member's requester
// namespace: the class the hub resolved, the claim's namespace name, lifetimes and labels. The
// member's own operator provisions it exactly as a claim made there.
func desiredMirror(c *tenancyv1alpha1.NamespaceClaim, memberNamespace string) *tenancyv1alpha1.NamespaceClaim {
	return &tenancyv1alpha1.NamespaceClaim{
		ObjectMeta: metav1.ObjectMeta{
			Name:        MirrorName(c.Namespace, c.Name),
			Namespace:   memberNamespace,
			Labels:      map[string]string{HubClaimUIDLabel: string(c.UID)},
			Annotations: map[string]string{HubClaimAnnotation: c.Namespace + "/" + c.Name, ClusterAnnotation: c.Status.Cluster},
		},
		Spec: tenancyv1alpha1.NamespaceClaimSpec{
			ClassName:     c.Status.ClassName,
			NamespaceName: c.Spec.NamespaceName,
			TTL:           c.Spec.TTL,
			Keep:          c.Spec.Keep,
			Labels:        maps.Clone(c.Spec.Labels),
		},
	}
}

// mirrorDrift says whether the mirror's mutable fields (ttl, keep, labels) or the hub's ownership
// record of it (ClusterAnnotation) differ from desired.
func mirrorDrift(have, want *tenancyv1alpha1.NamespaceClaim) bool {
	return have.Annotations[ClusterAnnotation] != want.Annotations[ClusterAnnotation] || !equality.Semantic.DeepEqual(have.Spec.TTL, want.Spec.TTL) || !equality.Semantic.DeepEqual(have.Spec.Keep, want.Spec.Keep) ||
		!equality.Semantic.DeepEqual(have.Spec.Labels, want.Spec.Labels)
}

// statusFromMirror is the hub claim's status from its mirror's: what the member's operator reports,
// with the hub's cluster, the hub's generation, the hub-side credentials Secret (empty until copied)
// and ClusterReachable=True.
func statusFromMirror(hub, mirror *tenancyv1alpha1.NamespaceClaim, secretName string) tenancyv1alpha1.NamespaceClaimStatus {
	st := *mirror.Status.DeepCopy()
	st.Cluster = hub.Status.Cluster
	st.ClassName = hub.Status.ClassName
	st.CredentialsSecretName = secretName
	st.ObservedGeneration = 0
	if mirror.Status.ObservedGeneration == mirror.Generation {
		st.ObservedGeneration = hub.Generation
	}
	for i := range st.Conditions {
		st.Conditions[i].ObservedGeneration = hub.Generation
	}
	if c := meta.FindStatusCondition(hub.Status.Conditions, tenancyv1alpha1.ClusterReachableCondition); c != nil {
		st.Conditions = append(st.Conditions, *c)
	}
	setCondition(&st, hub.Generation, tenancyv1alpha1.ClusterReachableCondition, metav1.ConditionTrue, tenancyv1alpha1.ReachableReason,
		"member cluster "+hub.Status.Cluster+" answers")
	return st
}

// setCondition sets one condition of st (metav1.Condition semantics: the transition time moves only
// when the status does).
func setCondition(st *tenancyv1alpha1.NamespaceClaimStatus, gen int64, typ string, status metav1.ConditionStatus, reason, msg string) {
	meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: typ, Status: status, Reason: reason, Message: msg, ObservedGeneration: gen})
}

// hubSecretName is the credentials Secret next to the hub claim.
func hubSecretName(c *tenancyv1alpha1.NamespaceClaim) string {
	if c.Spec.CredentialsSecretName != "" {
		return c.Spec.CredentialsSecretName
	}
	return c.Name + "-kubeconfig"
}
