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

// Package olmcondition reports the operator's conditions to OLM through its OperatorCondition
// (operators.coreos.com/v2), using operator-lib's conditions package. OLM creates the
// OperatorCondition and sets OPERATOR_CONDITION_NAME in the operator's Deployment; without that
// variable (installed with kustomize, or run as a local process without it) every call is a no-op.
//
// The condition OLM acts on is Upgradeable: while it is False, OLM does not replace the operator
// with a newer version. nsclaim sets it False while the leader runs its startup pass (StartupGate).
package olmcondition

import (
	"context"
	"errors"
	"fmt"
	"os"

	apiv2 "github.com/operator-framework/api/pkg/operators/v2"
	"github.com/operator-framework/operator-lib/conditions"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// +kubebuilder:rbac:groups=operators.coreos.com,resources=operatorconditions,verbs=get;update;patch

// NameEnv is the environment variable in which OLM passes the OperatorCondition's name.
const NameEnv = "OPERATOR_CONDITION_NAME"

// UpgradeableCondition is the condition type OLM reads before replacing the operator.
const UpgradeableCondition = apiv2.Upgradeable

// Reasons of the Upgradeable condition set by nsclaim.
const (
	// StartupPassReason: the leader is syncing its caches or running a startup task.
	StartupPassReason = "StartupPass"
	// StartupFailedReason: a startup task failed; the message names it.
	StartupFailedReason = "StartupFailed"
	// ReadyReason: nothing in progress forbids a replacement.
	ReadyReason = "Ready"
)

// Reporter sets conditions on the operator's OperatorCondition. A nil *Reporter is valid and does
// nothing, so callers need not check whether the operator was installed by OLM.
type Reporter struct {
	factory conditions.Factory
}

// NewReporter returns a Reporter for the OperatorCondition named by OPERATOR_CONDITION_NAME, or nil
// when the variable is unset. Inside a Pod the namespace comes from the Pod's ServiceAccount (as
// operator-lib finds it); outside one (a local process) it is namespace, the operator's namespace.
// The Reporter uses its own uncached client, so the operator needs only get and update on its one
// OperatorCondition, not a cluster-wide watch.
func NewReporter(cfg *rest.Config, namespace string) (*Reporter, error) {
	name := os.Getenv(NameEnv)
	if name == "" {
		return nil, nil
	}
	scheme := runtime.NewScheme()
	if err := apiv2.AddToScheme(scheme); err != nil {
		return nil, err
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, fmt.Errorf("creating client for OperatorCondition: %w", err)
	}
	if _, err := (conditions.InClusterFactory{}).GetNamespacedName(); err == nil {
		return &Reporter{factory: conditions.InClusterFactory{Client: c}}, nil
	}
	if namespace == "" {
		return nil, fmt.Errorf("%s is set but the operator's namespace is unknown (set POD_NAMESPACE)", NameEnv)
	}
	return NewReporterFor(c, types.NamespacedName{Namespace: namespace, Name: name}), nil
}

// NewReporterFor returns a Reporter for the named OperatorCondition through c, for a process that
// does not run in a Pod (and for tests).
func NewReporterFor(c client.Client, key types.NamespacedName) *Reporter {
	return &Reporter{factory: namedFactory{client: c, key: key}}
}

// Set sets a condition of the given type on the OperatorCondition's spec.conditions (where OLM reads
// it), retrying on update conflicts. It is a no-op on a nil Reporter. The condition type is usually
// UpgradeableCondition; OLM ignores other types but keeps them for people to read.
func (r *Reporter) Set(ctx context.Context, condType string, status metav1.ConditionStatus, reason, message string) error {
	if r == nil {
		return nil
	}
	cond, err := r.factory.NewCondition(apiv2.ConditionType(condType))
	if err != nil {
		return fmt.Errorf("resolving OperatorCondition: %w", err)
	}
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		return cond.Set(ctx, status, conditions.WithReason(reason), conditions.WithMessage(message))
	})
	if err != nil {
		return fmt.Errorf("setting %s=%s on OperatorCondition: %w", condType, status, err)
	}
	return nil
}

// SetUpgradeable sets the Upgradeable condition: upgradeable false keeps OLM from replacing the
// operator. It is a no-op on a nil Reporter.
func (r *Reporter) SetUpgradeable(ctx context.Context, upgradeable bool, reason, message string) error {
	status := metav1.ConditionFalse
	if upgradeable {
		status = metav1.ConditionTrue
	}
	return r.Set(ctx, UpgradeableCondition, status, reason, message)
}

// namedFactory is a conditions.Factory for an OperatorCondition whose namespace is known, for use
// outside a Pod, where operator-lib's InClusterFactory cannot find the namespace.
type namedFactory struct {
	client client.Client
	key    types.NamespacedName
}

var _ conditions.Factory = namedFactory{}

// NewCondition implements conditions.Factory.
func (f namedFactory) NewCondition(t apiv2.ConditionType) (conditions.Condition, error) {
	return namedCondition{client: f.client, key: f.key, condType: t}, nil
}

// GetNamespacedName implements conditions.Factory.
func (f namedFactory) GetNamespacedName() (*types.NamespacedName, error) {
	key := f.key
	return &key, nil
}

// namedCondition implements conditions.Condition like operator-lib's own: read the
// OperatorCondition, set the condition in spec.conditions, update.
type namedCondition struct {
	client   client.Client
	key      types.NamespacedName
	condType apiv2.ConditionType
}

// Get implements conditions.Condition.
func (c namedCondition) Get(ctx context.Context) (*metav1.Condition, error) {
	var oc apiv2.OperatorCondition
	if err := c.client.Get(ctx, c.key, &oc); err != nil {
		return nil, err
	}
	if cond := meta.FindStatusCondition(oc.Spec.Conditions, string(c.condType)); cond != nil {
		return cond, nil
	}
	return nil, errors.New("condition " + string(c.condType) + " not found")
}

// Set implements conditions.Condition.
func (c namedCondition) Set(ctx context.Context, status metav1.ConditionStatus, opts ...conditions.Option) error {
	var oc apiv2.OperatorCondition
	if err := c.client.Get(ctx, c.key, &oc); err != nil {
		return err
	}
	cond := metav1.Condition{Type: string(c.condType), Status: status}
	for _, o := range opts {
		o(&cond)
	}
	meta.SetStatusCondition(&oc.Spec.Conditions, cond)
	return c.client.Update(ctx, &oc)
}
