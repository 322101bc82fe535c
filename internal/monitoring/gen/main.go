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

// Command gen writes docs/metrics.md from the metrics table in internal/monitoring.
// Usage: go run ./internal/monitoring/gen [output file, default docs/metrics.md]
package main

import (
	"fmt"
	"os"

	"github.com/nsclaim/nsclaim-operator/internal/monitoring"
)

func main() {
	out := "docs/metrics.md"
	if len(os.Args) > 1 {
		out = os.Args[1]
	}
	if err := os.WriteFile(out, monitoring.Markdown(), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
