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
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
)

// TestChaos runs the chaos scenarios (docs/benchmarks.md) against the local cluster whose admin
// kubeconfig is NSCLAIM_CHAOS_KUBECONFIG, started by hack/chaos.sh (`make chaos`) with audit logging,
// the CRDs, the operator's RBAC and its ServiceAccount kubeconfig; it is skipped without it. Each
// scenario is a subtest that fails on a claim not Ready in time, a deleted object not restored, or a
// broken invariant (test/invariants) after the scenario. NSCLAIM_CHAOS_ARGS holds the scenario flags
// (-claims, -scenarios, -kill-every, -restore-timeout, ... and those of the cluster and manager, whose
// defaults come from the environment hack/bench.sh exports), separated by spaces.
func TestChaos(t *testing.T) {
	kubeconfig := os.Getenv("NSCLAIM_CHAOS_KUBECONFIG")
	if kubeconfig == "" {
		t.Skip("NSCLAIM_CHAOS_KUBECONFIG is not set: run `make chaos`, which starts a cluster of its own and sets it")
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if os.Getenv("LOCAL_CLUSTER_DIR") == "" {
		t.Setenv("LOCAL_CLUSTER_DIR", filepath.Dir(kubeconfig))
	}
	fs := flag.NewFlagSet("chaos", flag.ContinueOnError)
	envOf := envFlags(fs, root)
	o := chaosFlags(fs)
	if err := fs.Parse(strings.Fields(os.Getenv("NSCLAIM_CHAOS_ARGS"))); err != nil {
		t.Fatalf("NSCLAIM_CHAOS_ARGS: %v", err)
	}
	e := envOf()
	e.kubeconfig = kubeconfig
	// The informers' watch errors during chaos are expected; the test reports what it measures.
	ctrllog.SetLogger(zap.New(zap.WriteTo(io.Discard)))

	ctx := t.Context()
	c, err := startChaos(ctx, e, o)
	if err != nil {
		t.Fatalf("starting the chaos run: %v", err)
	}
	defer c.sup.stop()

	var results []scenarioResult
	for _, name := range o.scenarioNames() {
		t.Run(name, func(t *testing.T) {
			res, err := c.run(ctx, name)
			if err != nil {
				t.Fatal(err)
			}
			results = append(results, res)
			for _, ev := range res.events {
				t.Log(ev)
			}
			for _, f := range res.failures {
				t.Error(f)
			}
		})
	}
	md := chaosMarkdown(results, c.sup.restarts)
	fmt.Println()
	fmt.Println(md)
	if o.out != "" {
		out := o.out
		if !filepath.IsAbs(out) {
			out = filepath.Join(root, out)
		}
		if err := os.WriteFile(out, []byte(md), 0o644); err != nil {
			t.Errorf("writing the summary: %v", err)
		}
	}
}
