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

// Package testenv starts envtest's control plane (kube-apiserver and etcd from KUBEBUILDER_ASSETS) for
// one test, the same way for every package whose tests need a real API server, and holds what tests
// share against any API server (WaitAllowed). Only tests and the bench import it.
package testenv

import (
	"os"
	"testing"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// RequireEnv names the environment variable that turns a missing control plane from a skip into a
// failure; make test-unit sets it.
const RequireEnv = "NSCLAIM_REQUIRE_ENVTEST"

// Unavailable is the one envtest gate: it skips t because the control plane is not there (why says
// why), or fails it when RequireEnv is set, so that a control plane that does not start fails CI instead
// of skipping. An empty why means the control plane is there: it returns at once. Start calls it; a suite
// that starts its control plane once, in TestMain, calls it first in each test that needs it.
func Unavailable(t testing.TB, why string) {
	t.Helper()
	if why == "" {
		return
	}
	if os.Getenv(RequireEnv) != "" {
		t.Fatal(why)
	}
	t.Skip(why)
}

// Start starts env, stops it when the test ends and returns its admin rest.Config. Without
// KUBEBUILDER_ASSETS, or if the control plane does not start, the test is skipped with the reason, or
// fails if RequireEnv is set.
func Start(t testing.TB, env *envtest.Environment) *rest.Config {
	t.Helper()
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		Unavailable(t, "KUBEBUILDER_ASSETS is not set: run `make test-unit`, which builds the control plane and sets it")
	}
	cfg, err := env.Start()
	if err != nil {
		Unavailable(t, "the control plane in KUBEBUILDER_ASSETS="+assets+" did not start: "+err.Error())
	}
	t.Cleanup(func() { _ = env.Stop() })
	return cfg
}
