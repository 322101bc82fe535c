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
	_ "embed"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
)

//go:embed starting-class.yaml
var startingClassYAML []byte

// Creating the starting class when none exists; no other write on classes.
// +kubebuilder:rbac:groups=tenancy.nsclaim.dev,resources=namespaceclasses,verbs=create

// StartingClass returns the NamespaceClass of starting-class.yaml (--starting-class).
func StartingClass() (*tenancyv1alpha1.NamespaceClass, error) {
	class := &tenancyv1alpha1.NamespaceClass{}
	if err := yaml.UnmarshalStrict(startingClassYAML, class); err != nil {
		return nil, fmt.Errorf("decoding the starting NamespaceClass: %w", err)
	}
	return class, nil
}

// StartingClassCreator is a leader-only manager.Runnable that, once at start, creates the starting class
// when the API server has no NamespaceClass at all, so that a claim works right after an install that
// brought none (a release's install.yaml cannot carry a CRD and an object of it; an OLM bundle cannot
// carry a custom resource). It retries a failed read or create until it succeeds or the manager stops.
type StartingClassCreator struct {
	// Reader lists the classes (the API server: the cache may not have synced).
	Reader client.Reader
	// Writer creates the class.
	Writer client.Client
	// Class is the class to create (StartingClass).
	Class *tenancyv1alpha1.NamespaceClass
	// Log gets a line when the class is created or cannot be.
	Log logr.Logger
}

// Start implements manager.Runnable.
func (s *StartingClassCreator) Start(ctx context.Context) error {
	backoff := wait.Backoff{Duration: time.Second, Factor: 2, Steps: 8, Cap: time.Minute}
	_ = wait.ExponentialBackoffWithContext(ctx, backoff, func(ctx context.Context) (bool, error) {
		created, err := ensureStartingClass(ctx, s.Reader, s.Writer, s.Class)
		switch {
		case err != nil:
			s.Log.Error(err, "Cannot create the starting NamespaceClass; retrying", "class", s.Class.Name)
			return false, nil
		case created:
			s.Log.Info("No NamespaceClass existed: created the starting class (--starting-class)", "class", s.Class.Name)
		}
		return true, nil
	})
	<-ctx.Done()
	return nil
}

// NeedLeaderElection reports that only the leader creates the class.
func (s *StartingClassCreator) NeedLeaderElection() bool { return true }

// ensureStartingClass creates class unless reader (the API server) lists any NamespaceClass; a class
// of the same name created meanwhile counts as done.
func ensureStartingClass(ctx context.Context, reader client.Reader, writer client.Client, class *tenancyv1alpha1.NamespaceClass) (bool, error) {
	var classes tenancyv1alpha1.NamespaceClassList
	if err := reader.List(ctx, &classes, client.Limit(1)); err != nil {
		return false, fmt.Errorf("listing NamespaceClasses: %w", err)
	}
	if len(classes.Items) > 0 {
		return false, nil
	}
	if err := writer.Create(ctx, class.DeepCopy()); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return false, nil
		}
		return false, fmt.Errorf("creating NamespaceClass %s: %w", class.Name, err)
	}
	return true, nil
}
