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

package main

import (
	"slices"
	"testing"
)

// TestShippedEnv: the bench starts the manager with the shipped Deployment's environment, the memory
// limit as the Downward API gives it.
func TestShippedEnv(t *testing.T) {
	env, err := shippedEnv("../../config/manager/manager.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"NSCLAIM_WORKERS=32", "NSCLAIM_MEMORY_LIMIT=268435456", "NSCLAIM_FENCE_CHECK_INTERVAL=5m"} {
		if !slices.Contains(env, want) {
			t.Errorf("%s missing from %v", want, env)
		}
	}
	if slices.ContainsFunc(env, func(kv string) bool { return len(kv) > 14 && kv[:14] == "POD_NAMESPACE=" }) {
		t.Errorf("a value from the pod's fields was taken: %v", env)
	}
}
