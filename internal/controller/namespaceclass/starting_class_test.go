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

package namespaceclass

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
	"github.com/nsclaim/nsclaim-operator/internal/testenv"
)

// TestStartingClassIsTheSample: the starting class is config/samples' `ci` class, spec for spec.
func TestStartingClassIsTheSample(t *testing.T) {
	g := NewWithT(t)
	class, err := StartingClass()
	g.Expect(err).NotTo(HaveOccurred())
	data, err := os.ReadFile(filepath.Join("..", "..", "..", "config", "samples", "tenancy_v1alpha1_namespaceclass.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	sample := &tenancyv1alpha1.NamespaceClass{}
	g.Expect(yaml.UnmarshalStrict(data, sample)).To(Succeed())
	g.Expect(class.Name).To(Equal(sample.Name))
	g.Expect(equality.Semantic.DeepEqual(class.Spec, sample.Spec)).To(BeTrue(), "starting-class.yaml and the sample class differ")
	g.Expect(class.Spec.Default).To(BeTrue())
}

// TestEnsureStartingClass, against a real API server: the class is created (and admitted by the CRD's
// validation) when there is none, not again once it exists, and not when another class exists.
func TestEnsureStartingClass(t *testing.T) {
	g := NewWithT(t)
	cfg := testenv.Start(t, &envtest.Environment{CRDDirectoryPaths: []string{filepath.Join("..", "..", "..", "config", "crd", "bases")}, ErrorIfCRDPathMissing: true})
	s := runtime.NewScheme()
	g.Expect(tenancyv1alpha1.AddToScheme(s)).To(Succeed())
	c, err := client.New(cfg, client.Options{Scheme: s})
	g.Expect(err).NotTo(HaveOccurred())
	ctx := context.Background()
	class, err := StartingClass()
	g.Expect(err).NotTo(HaveOccurred())

	created, err := ensureStartingClass(ctx, c, c, class)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(created).To(BeTrue())
	live := &tenancyv1alpha1.NamespaceClass{}
	g.Expect(c.Get(ctx, client.ObjectKey{Name: "ci"}, live)).To(Succeed())
	g.Expect(live.Spec.Default).To(BeTrue())

	created, err = ensureStartingClass(ctx, c, c, class)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(created).To(BeFalse())

	other := class.DeepCopy()
	other.Name, other.Spec.Default = "own", false
	g.Expect(c.Create(ctx, other)).To(Succeed())
	g.Expect(c.Delete(ctx, live)).To(Succeed())
	created, err = ensureStartingClass(ctx, c, c, class)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(created).To(BeFalse())
	g.Expect(c.Get(ctx, client.ObjectKey{Name: "ci"}, &tenancyv1alpha1.NamespaceClass{})).NotTo(Succeed())
}
