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

// Command kubectl-nsclaim is the kubectl plugin for pipelines: "kubectl nsclaim claim" asks for a
// namespace and waits for it with a watch, "kubeconfig" hands out its credentials, "extend", "release",
// "list" and "why" manage and explain claims, and "pipeline-identity" makes a pipeline's
// ServiceAccount, binding and bounded kubeconfig. Stdout carries only what -o asks for; diagnostics go
// to stderr; exit codes are those of internal/cli (docs/pipelines.md).
package main

import (
	"fmt"
	"os"

	"github.com/nsclaim/nsclaim-operator/internal/cli"
)

func main() {
	err := newRootCommand(newOptions(os.Stdout, os.Stderr)).Execute()
	if err != nil {
		fmt.Fprintln(os.Stderr, "error:", cli.Message(err))
	}
	os.Exit(cli.ExitCode(err))
}
