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
	"os"
	"os/exec"
	"testing"
)

// TestGitHubActionUnit runs the GitHub Action's unit tests (action/test/action.test.js: the plugin's
// download for Linux, macOS and Windows on amd64 and arm64, main and post run Windows- and
// macOS-shaped, hostile inputs, the missing-release message) with node, the runtime of the Action
// (node20). Without node the test is skipped, unless NSCLAIM_REQUIRE_NODE=1 makes that a failure.
func TestGitHubActionUnit(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		if os.Getenv("NSCLAIM_REQUIRE_NODE") == "1" {
			t.Fatalf("node is required (NSCLAIM_REQUIRE_NODE=1): %v", err)
		}
		t.Skip("node is not on the PATH; the Action's unit tests need it")
	}
	out, err := exec.Command(node, "--test", "../../action/test/action.test.js").CombinedOutput()
	if err != nil {
		t.Fatalf("node --test action/test/action.test.js: %v\n%s", err, out)
	}
}
