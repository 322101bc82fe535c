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

package olmcondition

import (
	"context"
	"errors"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/operator-framework/api/crds"
	apiv2 "github.com/operator-framework/api/pkg/operators/v2"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/nsclaim/nsclaim-operator/internal/testenv"
)

// startEnv starts envtest's kube-apiserver and etcd from KUBEBUILDER_ASSETS with the OperatorCondition
// CRD and returns a client, a started cache and an OperatorCondition created in namespace "operators".
func startEnv(t *testing.T) (client.Client, cache.Cache, types.NamespacedName) {
	t.Helper()
	cfg := testenv.Start(t, &envtest.Environment{CRDs: []*apiextensionsv1.CustomResourceDefinition{crds.OperatorCondition()}})
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{apiv2.AddToScheme, corev1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	key := types.NamespacedName{Namespace: "operators", Name: "nsclaim-operator.v0.2.0"}
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: key.Namespace}}); err != nil {
		t.Fatal(err)
	}
	if err := c.Create(ctx, &apiv2.OperatorCondition{ObjectMeta: metav1.ObjectMeta{Name: key.Name, Namespace: key.Namespace}}); err != nil {
		t.Fatal(err)
	}
	ca, err := cache.New(cfg, cache.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	// The gate waits for this cache; an informer on Namespaces gives it something to sync.
	if _, err := ca.GetInformer(ctx, &corev1.Namespace{}); err != nil {
		t.Fatal(err)
	}
	go func() { _ = ca.Start(ctx) }()
	return c, ca, key
}

func upgradeable(ctx context.Context, c client.Client, key types.NamespacedName) func(Gomega) *metav1.Condition {
	return func(g Gomega) *metav1.Condition {
		var oc apiv2.OperatorCondition
		g.Expect(c.Get(ctx, key, &oc)).To(Succeed())
		return meta.FindStatusCondition(oc.Spec.Conditions, UpgradeableCondition)
	}
}

func TestStartupGate(t *testing.T) {
	c, ca, key := startEnv(t)
	ctx := t.Context()

	t.Run("holds Upgradeable=False while a task runs, then sets True", func(t *testing.T) {
		g := NewWithT(t)
		release := make(chan struct{})
		gate := &StartupGate{Reporter: NewReporterFor(c, key), Cache: ca, Tasks: []StartupTask{{
			Name: "relabel",
			Run:  func(ctx context.Context) error { <-release; return nil },
		}}}
		done := make(chan error, 1)
		go func() { done <- gate.Start(ctx) }()
		g.Eventually(upgradeable(ctx, c, key)).Should(And(
			HaveField("Status", metav1.ConditionFalse), HaveField("Reason", StartupPassReason),
			HaveField("Message", ContainSubstring("relabel"))))
		g.Consistently(done, 500*time.Millisecond).ShouldNot(Receive())
		close(release)
		g.Eventually(done).Should(Receive(BeNil()))
		g.Expect(upgradeable(ctx, c, key)(g)).To(And(
			HaveField("Status", metav1.ConditionTrue), HaveField("Reason", ReadyReason)))
	})

	t.Run("a failed task leaves Upgradeable=False and stops the manager", func(t *testing.T) {
		g := NewWithT(t)
		gate := &StartupGate{Reporter: NewReporterFor(c, key), Cache: ca, Tasks: []StartupTask{{
			Name: "relabel",
			Run:  func(context.Context) error { return errors.New("boom") },
		}}}
		g.Expect(gate.Start(ctx)).To(MatchError(ContainSubstring("startup task relabel: boom")))
		g.Expect(upgradeable(ctx, c, key)(g)).To(And(
			HaveField("Status", metav1.ConditionFalse), HaveField("Reason", StartupFailedReason)))
	})

	t.Run("Set keeps other conditions", func(t *testing.T) {
		g := NewWithT(t)
		r := NewReporterFor(c, key)
		g.Expect(r.Set(ctx, "FenceIntact", metav1.ConditionTrue, "Intact", "The admission fence is in place")).To(Succeed())
		g.Expect(r.SetUpgradeable(ctx, true, ReadyReason, "ok")).To(Succeed())
		var oc apiv2.OperatorCondition
		g.Expect(c.Get(ctx, key, &oc)).To(Succeed())
		g.Expect(meta.IsStatusConditionTrue(oc.Spec.Conditions, "FenceIntact")).To(BeTrue())
		g.Expect(meta.IsStatusConditionTrue(oc.Spec.Conditions, UpgradeableCondition)).To(BeTrue())
	})
}

func TestNilReporterIsNoOp(t *testing.T) {
	t.Setenv(NameEnv, "")
	r, err := NewReporter(nil, "")
	if err != nil || r != nil {
		t.Fatalf("NewReporter without %s = %v, %v; want nil, nil", NameEnv, r, err)
	}
	if err := r.SetUpgradeable(t.Context(), false, StartupPassReason, "x"); err != nil {
		t.Fatal(err)
	}
}
