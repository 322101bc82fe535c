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

// Package fence checks the admission fence around the operator's own identity: the
// ValidatingAdmissionPolicy and binding of config/fence, which confine the operator's writes to the
// namespaces it created (docs/security.md). The operator cannot install or repair the fence (it has no
// write access to admission policies, by design); it can only notice that the fence is missing or
// altered and say so.
package fence

import (
	"context"
	_ "embed"
	"fmt"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// The fence as shipped. These are copies of config/fence/base/{policy,binding}.yaml (go:embed cannot
// reach outside the package); TestEmbeddedManifestsMatchConfig keeps them equal.
var (
	//go:embed manifests/policy.yaml
	policyYAML []byte
	//go:embed manifests/binding.yaml
	bindingYAML []byte
)

// NamePrefix is the prefix config/fence and config/default give the policy and binding names.
const NamePrefix = "nsclaim-operator-"

// Reading the fence needs only get on the two objects by name: the checker reads them uncached.
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=validatingadmissionpolicies;validatingadmissionpolicybindings,verbs=get,resourceNames=nsclaim-operator-fence

// Expected is the fence the operator expects to find: a policy and the binding that enforces it.
type Expected struct {
	Policy  *admissionregistrationv1.ValidatingAdmissionPolicy
	Binding *admissionregistrationv1.ValidatingAdmissionPolicyBinding
}

// Shipped returns the fence as config/fence renders it: the embedded policy and binding with
// NamePrefix on their names and on the binding's policyName.
func Shipped() (Expected, error) {
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{}
	if err := yaml.UnmarshalStrict(policyYAML, policy); err != nil {
		return Expected{}, fmt.Errorf("decoding the shipped ValidatingAdmissionPolicy: %w", err)
	}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}
	if err := yaml.UnmarshalStrict(bindingYAML, binding); err != nil {
		return Expected{}, fmt.Errorf("decoding the shipped ValidatingAdmissionPolicyBinding: %w", err)
	}
	policy.Name = NamePrefix + policy.Name
	binding.Name = NamePrefix + binding.Name
	binding.Spec.PolicyName = NamePrefix + binding.Spec.PolicyName
	return Expected{Policy: policy, Binding: binding}, nil
}

// Status is the result of one check of the fence.
type Status struct {
	// Intact is true when the policy and binding exist and match the expected ones.
	Intact bool
	// Problems name the object and what is wrong with it, one entry per problem; empty when Intact.
	Problems []string
}

// Check reads the live policy and binding named in want from c and compares them with want. A read
// that fails for another reason than NotFound (for example missing RBAC) is a problem too: a fence the
// operator cannot see is not known to be intact. c should read from the API server (the manager's
// APIReader): the RBAC marker above grants get only.
func Check(ctx context.Context, c client.Reader, want Expected) Status {
	var problems []string
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{}
	if err := c.Get(ctx, client.ObjectKey{Name: want.Policy.Name}, policy); err != nil {
		policy = nil
		if !apierrors.IsNotFound(err) {
			problems = append(problems, fmt.Sprintf("ValidatingAdmissionPolicy %s cannot be read: %v", want.Policy.Name, err))
		}
	}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}
	if err := c.Get(ctx, client.ObjectKey{Name: want.Binding.Name}, binding); err != nil {
		binding = nil
		if !apierrors.IsNotFound(err) {
			problems = append(problems, fmt.Sprintf("ValidatingAdmissionPolicyBinding %s cannot be read: %v", want.Binding.Name, err))
		}
	}
	if len(problems) > 0 {
		return Status{Problems: problems}
	}
	return Compare(want, policy, binding)
}

// Compare compares a live policy and binding (nil when not found) with want. Every field the fence
// depends on must be equal; fields the API server defaults are spelled out in the shipped YAML, so a
// fence installed from it compares equal.
func Compare(want Expected, policy *admissionregistrationv1.ValidatingAdmissionPolicy, binding *admissionregistrationv1.ValidatingAdmissionPolicyBinding) Status {
	var problems []string
	if policy == nil {
		problems = append(problems, fmt.Sprintf("ValidatingAdmissionPolicy %s is missing", want.Policy.Name))
	} else {
		if !policy.DeletionTimestamp.IsZero() {
			problems = append(problems, fmt.Sprintf("ValidatingAdmissionPolicy %s is being deleted", policy.Name))
		}
		w, h := want.Policy.Spec, policy.Spec
		for _, f := range []field{
			{"spec.paramKind", w.ParamKind, h.ParamKind},
			{"spec.matchConstraints", w.MatchConstraints, h.MatchConstraints},
			{"spec.matchConditions", w.MatchConditions, h.MatchConditions},
			{"spec.variables", w.Variables, h.Variables},
			{"spec.validations", w.Validations, h.Validations},
			{"spec.failurePolicy", w.FailurePolicy, h.FailurePolicy},
			{"spec.auditAnnotations", w.AuditAnnotations, h.AuditAnnotations},
		} {
			if !equality.Semantic.DeepEqual(f.want, f.have) {
				problems = append(problems, fmt.Sprintf("ValidatingAdmissionPolicy %s: %s differs from the shipped fence", policy.Name, f.path))
			}
		}
	}
	if binding == nil {
		problems = append(problems, fmt.Sprintf("ValidatingAdmissionPolicyBinding %s is missing", want.Binding.Name))
	} else {
		if !binding.DeletionTimestamp.IsZero() {
			problems = append(problems, fmt.Sprintf("ValidatingAdmissionPolicyBinding %s is being deleted", binding.Name))
		}
		w, h := want.Binding.Spec, binding.Spec
		for _, f := range []field{
			{"spec.policyName", w.PolicyName, h.PolicyName},
			{"spec.paramRef", w.ParamRef, h.ParamRef},
			{"spec.matchResources", w.MatchResources, h.MatchResources},
			{"spec.validationActions", w.ValidationActions, h.ValidationActions},
		} {
			if !equality.Semantic.DeepEqual(f.want, f.have) {
				problems = append(problems, fmt.Sprintf("ValidatingAdmissionPolicyBinding %s: %s differs from the shipped fence", binding.Name, f.path))
			}
		}
	}
	return Status{Intact: len(problems) == 0, Problems: problems}
}

// field is one compared field of a policy or binding, named by its path for the problem message.
type field struct {
	path       string
	want, have any
}

// NewRunnable returns a manager.Runnable that checks the fence when the manager starts and then every
// `every` (which must be positive), and calls observe with each result. observe runs on the runnable's
// goroutine and must not block for long. A check cut short by shutdown is not observed. The runnable
// runs only on the elected leader, so one replica reports.
func NewRunnable(c client.Reader, want Expected, every time.Duration, observe func(Status)) manager.Runnable {
	return &checker{reader: c, want: want, every: every, observe: observe}
}

type checker struct {
	reader  client.Reader
	want    Expected
	every   time.Duration
	observe func(Status)
}

// Start checks at once, then on every tick until ctx is done.
func (c *checker) Start(ctx context.Context) error {
	if c.every <= 0 {
		return fmt.Errorf("fence check interval must be positive, got %s", c.every)
	}
	ticker := time.NewTicker(c.every)
	defer ticker.Stop()
	for {
		status := Check(ctx, c.reader, c.want)
		if ctx.Err() != nil {
			return nil
		}
		c.observe(status)
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C:
		}
	}
}

// NeedLeaderElection reports that only the leader checks the fence.
func (c *checker) NeedLeaderElection() bool { return true }
