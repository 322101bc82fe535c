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

package configmaprequest

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
)

// Pod Security labels of the requests namespace: it holds only ConfigMaps and Secrets, and the
// admission fence requires an enforce level of baseline or restricted on every namespace the operator
// creates.
const (
	podSecurityEnforce = "pod-security.kubernetes.io/enforce"
	podSecurityWarn    = "pod-security.kubernetes.io/warn"
	podSecurityAudit   = "pod-security.kubernetes.io/audit"
	// RequestsNamespacePodSecurity is the Pod Security level the operator creates the requests
	// namespace with.
	RequestsNamespacePodSecurity = "baseline"
)

// RequestsNamespace is the namespace the operator creates for the protocol when it is missing:
// labelled for the protocol (RequestsNamespaceLabel) and with Pod Security baseline. It carries no
// ManagedByLabel: it belongs to no claim, and the operator never changes or deletes it.
func RequestsNamespace(name string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
		tenancyv1alpha1.RequestsNamespaceLabel: "true",
		podSecurityEnforce:                     RequestsNamespacePodSecurity,
		podSecurityWarn:                        RequestsNamespacePodSecurity,
		podSecurityAudit:                       RequestsNamespacePodSecurity,
	}}}
}

// ServeNamespace decides whether the protocol may serve requests in namespace ns (nil: it does not
// exist). It may only when an admin or the operator labelled ns for the protocol, and ns is not a
// namespace provisioned for some claim: a tenant who got a namespace of that name (before the
// protocol was switched on, say) must not receive every pipeline's requests and tokens. The reason
// is for the log and the Warning Event when it may not.
func ServeNamespace(ns *corev1.Namespace) (bool, string) {
	switch {
	case ns == nil:
		return false, "the requests namespace does not exist and could not be created"
	case !ns.DeletionTimestamp.IsZero():
		return false, fmt.Sprintf("the requests namespace %s is being deleted", ns.Name)
	case hasKey(ns.Labels, tenancyv1alpha1.ManagedByLabel):
		return false, fmt.Sprintf("namespace %s carries %s: it was provisioned for a NamespaceClaim and cannot be the requests namespace; "+
			"choose another requests namespace", ns.Name, tenancyv1alpha1.ManagedByLabel)
	case ns.Labels[tenancyv1alpha1.RequestsNamespaceLabel] != "true":
		return false, fmt.Sprintf("namespace %s existed before the operator could create it and is not labelled %s=true; "+
			"if it is meant for the ConfigMap protocol, label it (kubectl label namespace %s %s=true)",
			ns.Name, tenancyv1alpha1.RequestsNamespaceLabel, ns.Name, tenancyv1alpha1.RequestsNamespaceLabel)
	}
	return true, ""
}

func hasKey(m map[string]string, k string) bool {
	_, ok := m[k]
	return ok
}

// Refusal is the value of RequestRefusalAnnotation: "<Reason>: <message>".
func Refusal(reason, message string) string {
	return reason + ": " + message
}

// Report is what the request ConfigMap should say about its claim.
type Report int

const (
	// Keep: nothing to change (the claim is being provisioned).
	Keep Report = iota
	// Refused: the claim is refused; write its reason and message.
	Refused
	// Cleared: the claim is Ready; remove an earlier refusal.
	Cleared
)

// ClaimReport decides what a request's ConfigMap says about its claim: the claim's refusal (a
// Ready=False reason of RefusalReasons, for the claim's current generation), or nothing once it is
// Ready. It returns the annotation's value for Refused.
func ClaimReport(claim *tenancyv1alpha1.NamespaceClaim) (Report, string) {
	ready := meta.FindStatusCondition(claim.Status.Conditions, tenancyv1alpha1.ReadyCondition)
	switch {
	case ready == nil || ready.ObservedGeneration != claim.Generation:
		return Keep, ""
	case ready.Status == metav1.ConditionTrue:
		return Cleared, ""
	case ready.Status == metav1.ConditionFalse && tenancyv1alpha1.IsRefusalReason(ready.Reason):
		return Refused, Refusal(ready.Reason, ready.Message)
	}
	return Keep, ""
}
