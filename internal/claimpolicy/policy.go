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
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
)

// Defaults for class fields the API server would have defaulted; they matter only for objects that
// skipped defaulting (unit tests, or classes written before a field existed).
const (
	DefaultClusterRole = "edit"
	DefaultTTL         = 24 * time.Hour
	DefaultMaxTTL      = 7 * 24 * time.Hour
	DefaultTokenTTL    = time.Hour
	DefaultRenewBefore = 20 * time.Minute
)

// Refusal is a user-fixable reason why a claim cannot proceed. Reason is one of the API's reasons;
// Message names the field to change.
type Refusal struct {
	Reason  string
	Message string
}

// Error makes a Refusal usable as an error.
func (r *Refusal) Error() string { return r.Reason + ": " + r.Message }

// ResolveClass picks the class for a claim from all classes. A claim that holds a namespace keeps the
// class the namespace was made from (status.className), so a default class added or moved later
// changes nothing for it. Otherwise: the one spec.className names, else the one marked default. It
// refuses when that class does not exist, when there is no default class, and when several classes
// are marked default.
func ResolveClass(claim *tenancyv1alpha1.NamespaceClaim, classes []tenancyv1alpha1.NamespaceClass) (*tenancyv1alpha1.NamespaceClass, *Refusal) {
	if name := claim.Status.ClassName; name != "" && claim.Status.Namespace != "" {
		for i := range classes {
			if classes[i].Name == name {
				return &classes[i], nil
			}
		}
		return nil, &Refusal{tenancyv1alpha1.ClassNotFoundReason, fmt.Sprintf(
			"NamespaceClass %q, which namespace %s was made from, no longer exists: its objects are not repaired and it is deleted at its recorded expiry", name, claim.Status.Namespace)}
	}
	if name := claim.Spec.ClassName; name != "" {
		for i := range classes {
			if classes[i].Name == name {
				return &classes[i], nil
			}
		}
		return nil, &Refusal{tenancyv1alpha1.ClassNotFoundReason, fmt.Sprintf("spec.className: NamespaceClass %q does not exist", name)}
	}
	var defaults []string
	var found *tenancyv1alpha1.NamespaceClass
	for i := range classes {
		if classes[i].Spec.Default {
			defaults = append(defaults, classes[i].Name)
			found = &classes[i]
		}
	}
	switch len(defaults) {
	case 0:
		return nil, &Refusal{tenancyv1alpha1.ClassNotFoundReason, "spec.className is unset and no NamespaceClass is marked default"}
	case 1:
		return found, nil
	default:
		sort.Strings(defaults)
		return nil, &Refusal{tenancyv1alpha1.AmbiguousDefaultClassReason, fmt.Sprintf("spec.className is unset and several NamespaceClasses are marked default (%s): name one", strings.Join(defaults, ", "))}
	}
}

// CheckAccess refuses a claim whose namespace (with the given labels) the class's
// requesterNamespaceSelector does not select.
func CheckAccess(class *tenancyv1alpha1.NamespaceClass, requesterNamespaceLabels map[string]string) *Refusal {
	sel := class.Spec.Access.RequesterNamespaceSelector
	if sel == nil {
		return nil
	}
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		return &Refusal{tenancyv1alpha1.ClassNotAllowedReason, fmt.Sprintf("NamespaceClass %q has an invalid access.requesterNamespaceSelector: %v", class.Name, err)}
	}
	if !s.Matches(labels.Set(requesterNamespaceLabels)) {
		return &Refusal{tenancyv1alpha1.ClassNotAllowedReason, fmt.Sprintf("spec.className: NamespaceClass %q does not admit claims from this namespace (access.requesterNamespaceSelector)", class.Name)}
	}
	return nil
}

// CheckPrefix restricts a class without naming.prefix: its namespaces take names from the whole
// cluster's name space, so a requester could take a name (monitoring, cert-manager, argocd-...) before
// an admin creates it. Such a class admits only claims made by the ConfigMap protocol (whose names the
// protocol's name patterns govern), or claims from the namespaces a non-empty
// access.requesterNamespaceSelector selects.
func CheckPrefix(class *tenancyv1alpha1.NamespaceClass, requestClaim bool) *Refusal {
	if class.Spec.Naming.Prefix != "" || requestClaim {
		return nil
	}
	if sel := class.Spec.Access.RequesterNamespaceSelector; sel != nil && (len(sel.MatchLabels) > 0 || len(sel.MatchExpressions) > 0) {
		return nil
	}
	return &Refusal{tenancyv1alpha1.ClassNotAllowedReason, fmt.Sprintf(
		"spec.className: NamespaceClass %q has no naming.prefix and no access.requesterNamespaceSelector, so it admits only requests of the ConfigMap protocol: use a class with a prefix", class.Name)}
}

// podSecurityRank orders the Pod Security levels from weakest to strictest.
var podSecurityRank = map[tenancyv1alpha1.PodSecurityLevel]int{
	tenancyv1alpha1.PodSecurityPrivileged: 0, tenancyv1alpha1.PodSecurityBaseline: 1, tenancyv1alpha1.PodSecurityRestricted: 2,
}

// PodSecurityOf returns the class's Pod Security level, baseline when unset.
func PodSecurityOf(class *tenancyv1alpha1.NamespaceClass) tenancyv1alpha1.PodSecurityLevel {
	if class.Spec.PodSecurity == "" {
		return tenancyv1alpha1.PodSecurityBaseline
	}
	return class.Spec.PodSecurity
}

// CheckPodSecurity refuses a class whose spec.podSecurity is weaker than minimum (empty: baseline).
// The admission fence denies the operator a namespace weaker than baseline anyway; this names the field.
func CheckPodSecurity(class *tenancyv1alpha1.NamespaceClass, minimum tenancyv1alpha1.PodSecurityLevel) *Refusal {
	if minimum == "" {
		minimum = tenancyv1alpha1.PodSecurityBaseline
	}
	if level := PodSecurityOf(class); podSecurityRank[level] < podSecurityRank[minimum] {
		return &Refusal{tenancyv1alpha1.PodSecurityNotAllowedReason, fmt.Sprintf(
			"NamespaceClass %q: spec.podSecurity %s is weaker than %s, the minimum the operator creates namespaces with", class.Name, level, minimum)}
	}
	return nil
}

// ClusterRoleField is a ClusterRole a class binds and the field that names it.
type ClusterRoleField struct {
	Field string
	Name  string
}

// ClusterRoleFields lists every ClusterRole a class binds, with the field that names it.
func ClusterRoleFields(class *tenancyv1alpha1.NamespaceClass) []ClusterRoleField {
	out := make([]ClusterRoleField, 0, 1+len(class.Spec.ExtraRoleBindings))
	out = append(out, ClusterRoleField{Field: "spec.clusterRole", Name: clusterRoleOf(class)})
	for i, x := range class.Spec.ExtraRoleBindings {
		out = append(out, ClusterRoleField{Field: fmt.Sprintf("spec.extraRoleBindings[%d].clusterRole", i), Name: x.ClusterRole})
	}
	return out
}

// NotBindable is the refusal for ClusterRoles of a class that the operator may not bind.
func NotBindable(class *tenancyv1alpha1.NamespaceClass, fields []ClusterRoleField) *Refusal {
	if len(fields) == 0 {
		return nil
	}
	parts := make([]string, 0, len(fields))
	for _, f := range fields {
		parts = append(parts, fmt.Sprintf("%s %q", f.Field, f.Name))
	}
	return &Refusal{tenancyv1alpha1.ClusterRoleNotBindableReason, fmt.Sprintf(
		"NamespaceClass %q names ClusterRoles the operator may not bind (%s): grant the operator bind on them, or name another role; nothing is bound", class.Name, strings.Join(parts, ", "))}
}

// TTL returns the claim's lifetime: spec.ttl, else the class's defaultTTL. It refuses a spec.ttl above
// the class's maxTTL.
func TTL(claim *tenancyv1alpha1.NamespaceClaim, class *tenancyv1alpha1.NamespaceClass) (time.Duration, *Refusal) {
	maxTTL := durationOr(class.Spec.Lifetime.MaxTTL, DefaultMaxTTL)
	if claim.Spec.TTL == nil {
		return min(durationOr(class.Spec.Lifetime.DefaultTTL, DefaultTTL), maxTTL), nil
	}
	if ttl := claim.Spec.TTL.Duration; ttl > maxTTL {
		return 0, &Refusal{tenancyv1alpha1.TTLExceedsMaximumReason, fmt.Sprintf("spec.ttl %s exceeds the maximum %s of NamespaceClass %q (lifetime.maxTTL)", ttl, maxTTL, class.Name)}
	}
	return claim.Spec.TTL.Duration, nil
}

// CheckLabels refuses a claim whose spec.labels holds a key the class does not list in
// allowedClaimLabels.
func CheckLabels(claim *tenancyv1alpha1.NamespaceClaim, class *tenancyv1alpha1.NamespaceClass) *Refusal {
	allowed := make(map[string]bool, len(class.Spec.AllowedClaimLabels))
	for _, k := range class.Spec.AllowedClaimLabels {
		allowed[k] = true
	}
	var bad []string
	for k := range claim.Spec.Labels {
		if !allowed[k] {
			bad = append(bad, k)
		}
	}
	if len(bad) == 0 {
		return nil
	}
	sort.Strings(bad)
	return &Refusal{tenancyv1alpha1.LabelNotAllowedReason, fmt.Sprintf("spec.labels: NamespaceClass %q does not allow the label keys %s (allowedClaimLabels)", class.Name, strings.Join(bad, ", "))}
}

// AllowedLabels returns the claim's spec.labels that the class allows (all of them, unless the claim is
// refused for a label: then a namespace it already holds keeps only the allowed ones).
func AllowedLabels(claim *tenancyv1alpha1.NamespaceClaim, class *tenancyv1alpha1.NamespaceClass) map[string]string {
	out := map[string]string{}
	for _, k := range class.Spec.AllowedClaimLabels {
		if v, ok := claim.Spec.Labels[k]; ok {
			out[k] = v
		}
	}
	return out
}

// CheckClaimLimit enforces the class's maxClaimsPerNamespace. siblings are the claims of the same
// namespace (the claim itself may be among them); liveHolders are the UIDs of the claims that own a
// namespace of the class made for this requester namespace or hold a slot of its limit, as the
// caller's admission ledger counts them (internal/admission: the check and the reservation it grants
// are one step, and the ledger never counts fewer than the live namespaces). A claim that already holds its
// namespace is never refused, so lowering the limit takes nothing away. Otherwise the claim ranks among
// the active claims of its class, oldest first, and is refused if its rank reaches the limit; every
// live holder counts, whatever its claim's cached state, so a cache that lags cannot free a slot.
func CheckClaimLimit(claim *tenancyv1alpha1.NamespaceClaim, className string, limit int32, siblings []tenancyv1alpha1.NamespaceClaim, liveHolders []types.UID) *Refusal {
	if limit <= 0 || claim.Status.Namespace != "" || slices.Contains(liveHolders, claim.UID) {
		return nil
	}
	counted := map[types.UID]bool{}
	for i := range siblings {
		s := &siblings[i]
		if s.UID == claim.UID || !s.DeletionTimestamp.IsZero() || IsExpired(s) || ClassOf(s) != className {
			continue
		}
		if s.Status.Namespace != "" || olderThan(s, claim) {
			counted[s.UID] = true
		}
	}
	for _, uid := range liveHolders {
		counted[uid] = true
	}
	rank := len(counted)
	if rank < int(limit) {
		return nil
	}
	return &Refusal{tenancyv1alpha1.ClaimLimitExceededReason, fmt.Sprintf("this namespace already has %d active claims of NamespaceClass %q (access.maxClaimsPerNamespace is %d): delete one first", rank, className, limit)}
}

// ClassOf returns the class a claim uses or last used: status.className once resolved, else spec.className.
func ClassOf(claim *tenancyv1alpha1.NamespaceClaim) string {
	if claim.Status.ClassName != "" {
		return claim.Status.ClassName
	}
	return claim.Spec.ClassName
}

// IsExpired reports whether the claim's Expired condition is True.
func IsExpired(claim *tenancyv1alpha1.NamespaceClaim) bool {
	for _, c := range claim.Status.Conditions {
		if c.Type == tenancyv1alpha1.ExpiredCondition {
			return c.Status == metav1.ConditionTrue
		}
	}
	return false
}

func olderThan(a, b *tenancyv1alpha1.NamespaceClaim) bool {
	if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return a.CreationTimestamp.Before(&b.CreationTimestamp)
	}
	return a.Name < b.Name
}

// TokenTTL returns the lifetime to request for each token.
func TokenTTL(class *tenancyv1alpha1.NamespaceClass) time.Duration {
	return durationOr(class.Spec.Credentials.TokenTTL, DefaultTokenTTL)
}

// RenewBefore returns how long before expiry a token is replaced. It is capped at half the token
// lifetime, so a token is never replaced the moment it is issued.
func RenewBefore(class *tenancyv1alpha1.NamespaceClass) time.Duration {
	return min(durationOr(class.Spec.Credentials.RenewBefore, DefaultRenewBefore), TokenTTL(class)/2)
}

func durationOr(d *metav1.Duration, def time.Duration) time.Duration {
	if d == nil || d.Duration <= 0 {
		return def
	}
	return d.Duration
}

// ValidTokenPolicy reports whether v is a token policy: only-once or multiple-times.
func ValidTokenPolicy(v string) bool {
	return v == tenancyv1alpha1.TokenPolicyOnlyOnce || v == tenancyv1alpha1.TokenPolicyMultipleTimes
}

// ParseTokenPolicy reads the token policy annotation of a claim or a request ConfigMap: its value, or
// def when it is absent; any other value is an error that names the annotation and the values it may
// take.
func ParseTokenPolicy(annotations map[string]string, def string) (string, error) {
	v, ok := annotations[tenancyv1alpha1.TokenPolicyAnnotation]
	if !ok {
		return def, nil
	}
	if !ValidTokenPolicy(v) {
		return "", fmt.Errorf("metadata.annotations[%s] is %q: use %q or %q", tenancyv1alpha1.TokenPolicyAnnotation, v,
			tenancyv1alpha1.TokenPolicyOnlyOnce, tenancyv1alpha1.TokenPolicyMultipleTimes)
	}
	return v, nil
}

// TokenOnlyOnce reads the claim's token policy annotation: true for only-once, false for
// multiple-times or no annotation, and a refusal naming the annotation for any other value.
func TokenOnlyOnce(claim *tenancyv1alpha1.NamespaceClaim) (bool, *Refusal) {
	v, err := ParseTokenPolicy(claim.Annotations, tenancyv1alpha1.TokenPolicyMultipleTimes)
	if err != nil {
		return false, &Refusal{tenancyv1alpha1.InvalidTokenPolicyReason, err.Error()}
	}
	return v == tenancyv1alpha1.TokenPolicyOnlyOnce, nil
}

// SecretConflict is the refusal of a claim whose credentials Secret, name in namespace, exists and was
// not created by nsclaim for it.
func SecretConflict(namespace, name string) *Refusal {
	return &Refusal{Reason: tenancyv1alpha1.SecretConflictReason, Message: fmt.Sprintf(
		"Secret %s/%s exists and was not created by nsclaim for this claim; it is left untouched. Delete that Secret (the claim then goes on by itself),"+
			" or delete this claim and create a new one with another spec.credentialsSecretName (the field cannot be changed on an existing claim)", namespace, name)}
}
