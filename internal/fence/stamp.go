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
	"context"
	_ "embed"
	"fmt"
	"sync"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The creator stamp as shipped: copies of config/fence/base/stamp-creator*.yaml.
var (
	//go:embed manifests/stamp-creator.yaml
	stampYAML []byte
	//go:embed manifests/stamp-creator-binding.yaml
	stampBindingYAML []byte
)

// StampName is the name config/fence gives the creator-stamping MutatingAdmissionPolicy and its binding.
const StampName = NamePrefix + "stamp-creator"

// Reading the stamp needs only get on the policy and its binding by name.
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=mutatingadmissionpolicies;mutatingadmissionpolicybindings,verbs=get,resourceNames=nsclaim-operator-stamp-creator

// Stamp is the MutatingAdmissionPolicy that records a claim's creator in spec.creator at CREATE, and its
// binding. It is not part of the fence's Intact: token-mode claims do not depend on it, and an operator
// upgraded before its admin re-applies config/fence keeps provisioning them. Only claims of credentials
// mode Requester need it.
type Stamp struct {
	Policy  *admissionregistrationv1.MutatingAdmissionPolicy
	Binding *admissionregistrationv1.MutatingAdmissionPolicyBinding
}

// ShippedStamp returns the creator stamp as config/fence renders it (NamePrefix on both names and on
// the binding's policyName).
func ShippedStamp() (Stamp, error) {
	policy := &admissionregistrationv1.MutatingAdmissionPolicy{}
	if err := yaml.UnmarshalStrict(stampYAML, policy); err != nil {
		return Stamp{}, fmt.Errorf("decoding the shipped MutatingAdmissionPolicy: %w", err)
	}
	binding := &admissionregistrationv1.MutatingAdmissionPolicyBinding{}
	if err := yaml.UnmarshalStrict(stampBindingYAML, binding); err != nil {
		return Stamp{}, fmt.Errorf("decoding the shipped MutatingAdmissionPolicyBinding: %w", err)
	}
	policy.Name = NamePrefix + policy.Name
	binding.Name = NamePrefix + binding.Name
	binding.Spec.PolicyName = NamePrefix + binding.Spec.PolicyName
	return Stamp{Policy: policy, Binding: binding}, nil
}

// StampStatus is the result of one check of the creator stamp.
type StampStatus struct {
	// Intact is true when the policy and its binding exist, are not being deleted, and match the
	// shipped ones.
	Intact bool
	// Problems name the object and what is wrong with it; empty when Intact.
	Problems []string
	// InForceSince is the latest moment the policy or its binding was created or written (creation
	// timestamps and managedFields times): a claim created at or before it may have been created
	// while the stamp was absent or different, so its spec.creator cannot be trusted. Zero unless
	// Intact.
	InForceSince time.Time
}

// shippedStamp is the creator stamp as config/fence ships it, loaded once.
var shippedStamp = sync.OnceValues(ShippedStamp)

// CheckShippedStamp compares the creator stamp in force at the API server (read through c) with the
// one config/fence ships. The error is only that the shipped stamp could not be loaded.
func CheckShippedStamp(ctx context.Context, c client.Reader) (StampStatus, error) {
	want, err := shippedStamp()
	if err != nil {
		return StampStatus{}, fmt.Errorf("loading the shipped creator stamp: %w", err)
	}
	return CheckStamp(ctx, c, want), nil
}

// CheckStamp reads the live policy and binding named in want (c should read from the API server: the
// marker above grants get only) and compares them with want. A read that fails for another reason than
// NotFound is a problem: a stamp the operator cannot see is not known to be intact.
func CheckStamp(ctx context.Context, c client.Reader, want Stamp) StampStatus {
	var problems []string
	policy := &admissionregistrationv1.MutatingAdmissionPolicy{}
	if err := c.Get(ctx, client.ObjectKey{Name: want.Policy.Name}, policy); err != nil {
		policy = nil
		if !apierrors.IsNotFound(err) {
			problems = append(problems, fmt.Sprintf("MutatingAdmissionPolicy %s cannot be read: %v", want.Policy.Name, err))
		}
	}
	binding := &admissionregistrationv1.MutatingAdmissionPolicyBinding{}
	if err := c.Get(ctx, client.ObjectKey{Name: want.Binding.Name}, binding); err != nil {
		binding = nil
		if !apierrors.IsNotFound(err) {
			problems = append(problems, fmt.Sprintf("MutatingAdmissionPolicyBinding %s cannot be read: %v", want.Binding.Name, err))
		}
	}
	if len(problems) > 0 {
		return StampStatus{Problems: problems}
	}
	return CompareStamp(want, Stamp{Policy: policy, Binding: binding})
}

// CompareStamp compares the live policy and binding in have (nil where not found) with want.
func CompareStamp(want, have Stamp) StampStatus {
	var problems []string
	const policyKind, bindingKind = "MutatingAdmissionPolicy", "MutatingAdmissionPolicyBinding"
	if have.Policy == nil {
		problems = append(problems, fmt.Sprintf("%s %s is missing", policyKind, want.Policy.Name))
	} else {
		w, h := want.Policy.Spec, have.Policy.Spec
		problems = append(problems, compareFields(policyKind, &have.Policy.ObjectMeta, []field{
			{"spec.paramKind", w.ParamKind, h.ParamKind},
			{"spec.matchConstraints", w.MatchConstraints, h.MatchConstraints},
			{"spec.matchConditions", w.MatchConditions, h.MatchConditions},
			{"spec.variables", w.Variables, h.Variables},
			{"spec.mutations", w.Mutations, h.Mutations},
			{"spec.failurePolicy", w.FailurePolicy, h.FailurePolicy},
			{"spec.reinvocationPolicy", w.ReinvocationPolicy, h.ReinvocationPolicy},
		})...)
	}
	if have.Binding == nil {
		problems = append(problems, fmt.Sprintf("%s %s is missing", bindingKind, want.Binding.Name))
	} else {
		w, h := want.Binding.Spec, have.Binding.Spec
		problems = append(problems, compareFields(bindingKind, &have.Binding.ObjectMeta, []field{
			{"spec.policyName", w.PolicyName, h.PolicyName},
			{"spec.paramRef", w.ParamRef, h.ParamRef},
			{"spec.matchResources", w.MatchResources, h.MatchResources},
		})...)
	}
	if len(problems) > 0 {
		return StampStatus{Problems: problems}
	}
	return StampStatus{Intact: true, InForceSince: latestWrite(&have.Policy.ObjectMeta, &have.Binding.ObjectMeta)}
}

// latestWrite is the latest creation or managedFields time of the objects.
func latestWrite(objs ...*metav1.ObjectMeta) time.Time {
	var t time.Time
	later := func(u time.Time) {
		if u.After(t) {
			t = u
		}
	}
	for _, o := range objs {
		later(o.CreationTimestamp.Time)
		for _, f := range o.ManagedFields {
			if f.Time != nil {
				later(f.Time.Time)
			}
		}
	}
	return t
}
