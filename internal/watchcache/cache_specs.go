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

package watchcache

import (
	"encoding/json"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
)

// sharedSpecs holds the specs that the children of every claim of a class repeat (a quota's hard
// limits, a limit range, a network policy). It is small: there are a few such
// specs per class, and each claim's own looks them up again, so they stay in its current generation;
// specs unique to one object pass through it and are forgotten.
var sharedSpecs = newSharedTable[any](1 << 10)

// shareSpec returns a value equal to v, as its JSON encoding tells (which is what childapply.Applier compares),
// that every cached object of this kind with an equal value shares. The value must never be written:
// the caches hand out deep copies.
func shareSpec[T any](kind string, v T) T {
	b, err := json.Marshal(v)
	if err != nil {
		return v
	}
	if got, ok := sharedSpecs.share(kind+"\x00"+string(b), v).(T); ok {
		return got
	}
	return v
}

// compactSpec shares or interns the parts of obj's spec that nsclaim's children repeat, and drops a
// quota's status.used.
func compactSpec(obj any) {
	switch o := obj.(type) {
	case *corev1.ResourceQuota:
		// status.used changes with every Pod and nothing reads it (the usable check reads status.hard).
		o.Status.Used = nil
		o.Spec = shareSpec("ResourceQuota.spec", o.Spec)
		if o.Status.Hard != nil {
			o.Status.Hard = shareSpec("ResourceQuota.status.hard", o.Status.Hard)
		}
	case *corev1.LimitRange:
		o.Spec = shareSpec("LimitRange.spec", o.Spec)
	case *networkingv1.NetworkPolicy:
		o.Spec = shareSpec("NetworkPolicy.spec", o.Spec)
	case *rbacv1.Role:
		o.Rules = compactRules("Role.rules", o.Rules)
	case *rbacv1.ClusterRole:
		o.Rules = compactRules("ClusterRole.rules", o.Rules)
	case *rbacv1.RoleBinding:
		o.RoleRef, o.Subjects = internRoleRef(o.RoleRef), internSubjects(o.Subjects)
	case *rbacv1.ClusterRoleBinding:
		o.RoleRef, o.Subjects = internRoleRef(o.RoleRef), internSubjects(o.Subjects)
	case *corev1.Namespace:
		for i, f := range o.Spec.Finalizers {
			o.Spec.Finalizers[i] = corev1.FinalizerName(intern(string(f)))
		}
	case *tenancyv1alpha1.NamespaceClaim:
		compactClaim(o)
	}
}

// compactClaim interns what claims repeat: the class names, the creator's name and groups (a
// pipeline's claims share them), and the type, status and reason of each condition. Messages, which
// name the claim's namespace and Secret, are left alone.
func compactClaim(o *tenancyv1alpha1.NamespaceClaim) {
	o.Spec.ClassName, o.Status.ClassName = intern(o.Spec.ClassName), intern(o.Status.ClassName)
	if c := o.Spec.Creator; c != nil {
		o.Spec.Creator = &tenancyv1alpha1.ClaimCreator{Username: intern(c.Username), UID: intern(c.UID), Groups: internAll(c.Groups), Extra: shareExtra(c.Extra)}
	}
	if len(o.Status.Conditions) > 0 {
		conds := make([]metav1.Condition, len(o.Status.Conditions))
		for i, c := range o.Status.Conditions {
			c.Type, c.Reason, c.Status = intern(c.Type), intern(c.Reason), metav1.ConditionStatus(intern(string(c.Status)))
			conds[i] = c
		}
		o.Status.Conditions = conds
	}
}

// shareExtra returns one shared map for equal creator extras. The API server fills extra with the
// credential's identity (authentication.kubernetes.io/credential-id: a client certificate's digest, a
// token's ID; for a bound token, its pod): every claim made with one credential carries the same map,
// which was one map and its slices per claim (about 4 MB at 10,000 claims made by one client; see
// docs/benchmarks-history.md, issue 30). Claims made with distinct credentials share only through the rotating
// table's bound.
func shareExtra(extra map[string][]string) map[string][]string {
	if len(extra) == 0 {
		return extra
	}
	return shareSpec("ClaimCreator.extra", extra)
}

// compactRules shares rules that name no object (the same in many roles), and interns
// the strings of rules that do (a namespace watcher's names its namespace: no other object has it).
func compactRules(kind string, rules []rbacv1.PolicyRule) []rbacv1.PolicyRule {
	if len(rules) == 0 {
		return rules
	}
	for _, r := range rules {
		if len(r.ResourceNames) > 0 {
			out := make([]rbacv1.PolicyRule, len(rules))
			for i, r := range rules {
				out[i] = rbacv1.PolicyRule{Verbs: internAll(r.Verbs), APIGroups: internAll(r.APIGroups), Resources: internAll(r.Resources),
					ResourceNames: internAll(r.ResourceNames), NonResourceURLs: internAll(r.NonResourceURLs)}
			}
			return out
		}
	}
	return shareSpec(kind, rules)
}

// internAll returns a new slice of ss's strings, each a shared copy (nil for nil).
func internAll(ss []string) []string {
	if ss == nil {
		return nil
	}
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = intern(s)
	}
	return out
}

func internRoleRef(r rbacv1.RoleRef) rbacv1.RoleRef {
	return rbacv1.RoleRef{APIGroup: intern(r.APIGroup), Kind: intern(r.Kind), Name: intern(r.Name)}
}

// internSubjects returns a new slice of subjects whose strings are shared copies.
func internSubjects(subjects []rbacv1.Subject) []rbacv1.Subject {
	if subjects == nil {
		return nil
	}
	out := make([]rbacv1.Subject, len(subjects))
	for i, s := range subjects {
		out[i] = rbacv1.Subject{Kind: intern(s.Kind), APIGroup: intern(s.APIGroup), Name: intern(s.Name), Namespace: intern(s.Namespace)}
	}
	return out
}
