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

// Package fence checks the admission fence around the operator's own identity and the label guard
// around nsclaim's ownership labels: the two ValidatingAdmissionPolicies and their bindings of
// config/fence. The fence confines the operator's writes to the namespaces it created; the label guard
// keeps everyone else from labelling objects as nsclaim's (docs/security.md). The operator cannot
// install or repair them (it has no write access to admission policies, by design); it can only notice
// that they are missing or altered, say so, and (with --require-fence) stop provisioning.
package fence

import (
	"context"
	_ "embed"
	"fmt"
	"sort"
	"strings"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// The fence as shipped. These are copies of config/fence/base/*.yaml (go:embed cannot reach outside
// the package); TestEmbeddedManifestsMatchConfig keeps them equal.
var (
	//go:embed manifests/policy.yaml
	policyYAML []byte
	//go:embed manifests/binding.yaml
	bindingYAML []byte
	//go:embed manifests/label-guard.yaml
	labelGuardYAML []byte
	//go:embed manifests/label-guard-binding.yaml
	labelGuardBindingYAML []byte
)

// NamePrefix is the prefix config/fence and config/default give the policy and binding names.
const NamePrefix = "nsclaim-operator-"

// Reading the fence needs only get on the four objects by name: the checker reads them uncached.
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=validatingadmissionpolicies;validatingadmissionpolicybindings,verbs=get,resourceNames=nsclaim-operator-fence;nsclaim-operator-label-guard

// VersionLabel on each of the fence's objects names the release it belongs to. The comparison ignores
// it (a fence whose content did not change between releases stays intact); it only tells an admin which
// release's fence is installed.
const VersionLabel = "app.kubernetes.io/version"

// Expected is the fence the operator expects to find: two policies and the bindings that enforce them.
type Expected struct {
	// Release is the release whose fence this is.
	Release string
	// Policy and Binding are the fence around the operator's own writes (nsclaim-operator-fence).
	Policy  *admissionregistrationv1.ValidatingAdmissionPolicy
	Binding *admissionregistrationv1.ValidatingAdmissionPolicyBinding
	// LabelGuard and LabelGuardBinding keep every other identity from adding nsclaim's ownership
	// labels (nsclaim-operator-label-guard).
	LabelGuard        *admissionregistrationv1.ValidatingAdmissionPolicy
	LabelGuardBinding *admissionregistrationv1.ValidatingAdmissionPolicyBinding
}

// pairs lists the policies and their bindings in the order problems are reported.
func (e Expected) pairs() []pair {
	return []pair{{e.Policy, e.Binding}, {e.LabelGuard, e.LabelGuardBinding}}
}

type pair struct {
	policy  *admissionregistrationv1.ValidatingAdmissionPolicy
	binding *admissionregistrationv1.ValidatingAdmissionPolicyBinding
}

// Shipped returns the fence as config/fence renders it: the embedded policies and bindings with
// NamePrefix on their names and on the bindings' policyName.
func Shipped() (Expected, error) {
	fence, err := decodePair(policyYAML, bindingYAML)
	if err != nil {
		return Expected{}, err
	}
	guard, err := decodePair(labelGuardYAML, labelGuardBindingYAML)
	if err != nil {
		return Expected{}, err
	}
	release := fence.policy.Labels[VersionLabel]
	if release == "" {
		return Expected{}, fmt.Errorf("the shipped fence carries no %s label", VersionLabel)
	}
	return Expected{Release: release, Policy: fence.policy, Binding: fence.binding, LabelGuard: guard.policy, LabelGuardBinding: guard.binding}, nil
}

// The previous release's fence (copies of its config/fence/base, made when this release's version was
// set; TestPreviousFenceIsThePreviousRelease keeps them equal to the previous release's commit).
var (
	//go:embed previous/policy.yaml
	previousPolicyYAML []byte
	//go:embed previous/binding.yaml
	previousBindingYAML []byte
	//go:embed previous/label-guard.yaml
	previousLabelGuardYAML []byte
	//go:embed previous/label-guard-binding.yaml
	previousLabelGuardBindingYAML []byte
	//go:embed previous/VERSION
	previousVersion string
)

// Previous returns the fence of the previous release, which the operator accepts too: during an
// upgrade the operator of this release may run before an admin applied this release's fence.yaml.
func Previous() (Expected, error) {
	fence, err := decodePair(previousPolicyYAML, previousBindingYAML)
	if err != nil {
		return Expected{}, err
	}
	guard, err := decodePair(previousLabelGuardYAML, previousLabelGuardBindingYAML)
	if err != nil {
		return Expected{}, err
	}
	return Expected{Release: strings.TrimSpace(previousVersion), Policy: fence.policy, Binding: fence.binding, LabelGuard: guard.policy, LabelGuardBinding: guard.binding}, nil
}

func decodePair(policyData, bindingData []byte) (pair, error) {
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{}
	if err := yaml.UnmarshalStrict(policyData, policy); err != nil {
		return pair{}, fmt.Errorf("decoding a shipped ValidatingAdmissionPolicy: %w", err)
	}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}
	if err := yaml.UnmarshalStrict(bindingData, binding); err != nil {
		return pair{}, fmt.Errorf("decoding a shipped ValidatingAdmissionPolicyBinding: %w", err)
	}
	policy.Name = NamePrefix + policy.Name
	binding.Name = NamePrefix + binding.Name
	binding.Spec.PolicyName = NamePrefix + binding.Spec.PolicyName
	return pair{policy, binding}, nil
}

// Status is the result of one check of the fence.
type Status struct {
	// Intact is true when both policies and both bindings exist and match the expected ones.
	Intact bool
	// Problems name the object and what is wrong with it, one entry per problem; empty when Intact.
	Problems []string
	// Release is, when Intact, the release whose fence matched (CheckAccepted only).
	Release string
	// Found lists the VersionLabel values of the live objects, sorted and distinct ("unlabelled" for an
	// object without it; empty when none exists) (CheckAccepted only).
	Found []string
}

// CheckAccepted reads the live fence once and compares it with each of accepted in turn (this
// release's first, then the previous release's): the first that matches makes it Intact, with its
// Release. Otherwise the problems are those against accepted[0], and Found says which releases' objects
// are installed.
func CheckAccepted(ctx context.Context, c client.Reader, accepted []Expected) Status {
	have, problems := readLive(ctx, c, accepted[0])
	if len(problems) > 0 {
		return Status{Problems: problems}
	}
	found := foundVersions(have)
	for _, want := range accepted {
		if st := Compare(want, have); st.Intact {
			st.Release, st.Found = want.Release, found
			return st
		}
	}
	st := Compare(accepted[0], have)
	st.Found = found
	return st
}

// foundVersions lists the VersionLabel values of the live objects in have.
func foundVersions(have Expected) []string {
	var objs []*metav1.ObjectMeta
	for _, p := range have.pairs() {
		if p.policy != nil {
			objs = append(objs, &p.policy.ObjectMeta)
		}
		if p.binding != nil {
			objs = append(objs, &p.binding.ObjectMeta)
		}
	}
	seen := map[string]bool{}
	for _, o := range objs {
		if v := o.Labels[VersionLabel]; v != "" {
			seen[v] = true
		} else {
			seen["unlabelled"] = true
		}
	}
	out := make([]string, 0, len(seen))
	for v := range seen {
		out = append(out, v)
	}
	sort.Strings(out)
	return out
}

// Check reads the live policies and bindings named in want from c and compares them with want. A read
// that fails for another reason than NotFound (for example missing RBAC) is a problem too: a fence the
// operator cannot see is not known to be intact. c should read from the API server (the manager's
// APIReader): the RBAC marker above grants get only.
func Check(ctx context.Context, c client.Reader, want Expected) Status {
	have, problems := readLive(ctx, c, want)
	if len(problems) > 0 {
		return Status{Problems: problems}
	}
	return Compare(want, have)
}

// readLive reads the live policies and bindings named in want (nil where not found); problems are the
// reads that failed for another reason than NotFound.
func readLive(ctx context.Context, c client.Reader, want Expected) (Expected, []string) {
	var problems []string
	pairs := want.pairs()
	live := make([]pair, 0, len(pairs))
	for _, p := range pairs {
		policy := &admissionregistrationv1.ValidatingAdmissionPolicy{}
		if err := c.Get(ctx, client.ObjectKey{Name: p.policy.Name}, policy); err != nil {
			policy = nil
			if !apierrors.IsNotFound(err) {
				problems = append(problems, fmt.Sprintf("ValidatingAdmissionPolicy %s cannot be read: %v", p.policy.Name, err))
			}
		}
		binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}
		if err := c.Get(ctx, client.ObjectKey{Name: p.binding.Name}, binding); err != nil {
			binding = nil
			if !apierrors.IsNotFound(err) {
				problems = append(problems, fmt.Sprintf("ValidatingAdmissionPolicyBinding %s cannot be read: %v", p.binding.Name, err))
			}
		}
		live = append(live, pair{policy, binding})
	}
	if len(problems) > 0 {
		return Expected{}, problems
	}
	return Expected{Policy: live[0].policy, Binding: live[0].binding, LabelGuard: live[1].policy, LabelGuardBinding: live[1].binding}, nil
}

// Compare compares the live policies and bindings in have (nil fields where not found) with want.
// Every field the fence depends on must be equal; fields the API server defaults are spelled out in
// the shipped YAML, so a fence installed from it compares equal.
func Compare(want, have Expected) Status {
	problems := make([]string, 0, 8)
	for i, w := range want.pairs() {
		h := have.pairs()[i]
		problems = append(problems, comparePolicy(w.policy, h.policy)...)
		problems = append(problems, compareBinding(w.binding, h.binding)...)
	}
	if len(problems) == 0 {
		return Status{Intact: true}
	}
	return Status{Problems: problems}
}

func comparePolicy(want, policy *admissionregistrationv1.ValidatingAdmissionPolicy) []string {
	const kind = "ValidatingAdmissionPolicy"
	if policy == nil {
		return []string{fmt.Sprintf("%s %s is missing", kind, want.Name)}
	}
	w, h := want.Spec, policy.Spec
	return compareFields(kind, &policy.ObjectMeta, []field{
		{"spec.paramKind", w.ParamKind, h.ParamKind},
		{"spec.matchConstraints", w.MatchConstraints, h.MatchConstraints},
		{"spec.matchConditions", w.MatchConditions, h.MatchConditions},
		{"spec.variables", w.Variables, h.Variables},
		{"spec.validations", w.Validations, h.Validations},
		{"spec.failurePolicy", w.FailurePolicy, h.FailurePolicy},
		{"spec.auditAnnotations", w.AuditAnnotations, h.AuditAnnotations},
	})
}

func compareBinding(want, binding *admissionregistrationv1.ValidatingAdmissionPolicyBinding) []string {
	const kind = "ValidatingAdmissionPolicyBinding"
	if binding == nil {
		return []string{fmt.Sprintf("%s %s is missing", kind, want.Name)}
	}
	w, h := want.Spec, binding.Spec
	return compareFields(kind, &binding.ObjectMeta, []field{
		{"spec.policyName", w.PolicyName, h.PolicyName},
		{"spec.paramRef", w.ParamRef, h.ParamRef},
		{"spec.matchResources", w.MatchResources, h.MatchResources},
		{"spec.validationActions", w.ValidationActions, h.ValidationActions},
	})
}

// compareFields reports a live object of kind being deleted, and each field that differs from the
// shipped fence.
func compareFields(kind string, live *metav1.ObjectMeta, fields []field) []string {
	var problems []string
	if !live.DeletionTimestamp.IsZero() {
		problems = append(problems, fmt.Sprintf("%s %s is being deleted", kind, live.Name))
	}
	for _, f := range fields {
		if !equality.Semantic.DeepEqual(f.want, f.have) {
			problems = append(problems, fmt.Sprintf("%s %s: %s differs from the shipped fence", kind, live.Name, f.path))
		}
	}
	return problems
}

// field is one compared field of a policy or binding, named by its path for the problem message.
type field struct {
	path       string
	want, have any
}

// NewRunnable returns a manager.Runnable that checks the fence when the manager starts and then every
// `every` (which must be positive), and calls observe with each result; WithWatch adds a check soon
// after any change of the fence's objects. observe runs on the runnable's goroutine and must not block
// for long. A check cut short by shutdown is not observed. The runnable runs only on the elected
// leader, so one replica reports.
func NewRunnable(c client.Reader, want Expected, every time.Duration, observe func(Status), opts ...Option) manager.Runnable {
	ch := &checker{reader: c, want: want, every: every, observe: observe}
	for _, o := range opts {
		o(ch)
	}
	return ch
}

type checker struct {
	reader      client.Reader
	want        Expected
	every       time.Duration
	observe     func(Status)
	watchConfig *rest.Config
	also        []Expected
}

// AlsoAccept makes the runnable report the fence intact when it matches one of others (the previous
// release's fence, during an upgrade) instead of want; Status.Release says which matched.
func AlsoAccept(others ...Expected) Option {
	return func(c *checker) { c.also = append(c.also, others...) }
}

// Start checks at once, then on every tick and (WithWatch) after every change of the fence, until ctx
// is done.
func (c *checker) Start(ctx context.Context) error {
	if c.every <= 0 {
		return fmt.Errorf("fence check interval must be positive, got %s", c.every)
	}
	var changes <-chan struct{}
	if c.watchConfig != nil {
		var err error
		if changes, err = watchFence(ctx, c.watchConfig, c.want); err != nil {
			return err
		}
	}
	ticker := time.NewTicker(c.every)
	defer ticker.Stop()
	for {
		status := CheckAccepted(ctx, c.reader, append([]Expected{c.want}, c.also...))
		if ctx.Err() != nil {
			return nil
		}
		c.observe(status)
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C:
		case <-changes:
			// Let the rest of an apply land, then check once for all of it.
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(settle):
			}
			select {
			case <-changes:
			default:
			}
		}
	}
}

// NeedLeaderElection reports that only the leader checks the fence.
func (c *checker) NeedLeaderElection() bool { return true }
