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

// Command bench measures nsclaim against the limit of the control plane it runs on: how fast it
// turns claims into Ready namespaces compared with a program that makes the same writes and nothing
// else (the ceiling), how much it asks of the API server, and what a restart and scale cost. It drives
// a local cluster started by hack/local-cluster.sh and a manager run as its own process; hack/bench.sh
// sets them up. Figures are printed, never asserted.
//
// The chaos scenarios (leader, kube-apiserver and etcd restarts, children deleted) share this
// package's cluster and manager code and run as a Go test, TestChaos, which fails on a broken
// invariant (test/invariants); hack/chaos.sh runs it.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
)

// env holds what the bench and the chaos test need to find the cluster and the manager.
type env struct {
	state         string
	kubeconfig    string
	apiserverPort int
	managerBin    string
	workers       int
	operatorArgs  string
	operatorEnv   string
	// shippedEnv is the environment of the shipped Deployment (config/manager/manager.yaml) the manager
	// starts with, before NSCLAIM_WORKERS and operatorEnv; nil with --shipped-env=false.
	shippedEnv []string
	// replicas are the manager processes this program may start: the first is the one
	// hack/local-operator.sh runs; chaos starts a second.
	replicas []replicaPorts
}

// replicaPorts are one manager replica's probe and metrics ports.
type replicaPorts struct{ probe, metrics int }

// envFlags registers on fs the flags that locate the cluster and the manager, with defaults from the
// environment hack/bench.sh exports, and paths relative to root. The returned function gives the env
// once fs is parsed.
func envFlags(fs *flag.FlagSet, root string) func() *env {
	e := &env{}
	fs.StringVar(&e.state, "state", envOr("LOCAL_CLUSTER_DIR", filepath.Join(root, "tmp/bench-cluster")), "State directory of the local cluster (LOCAL_CLUSTER_DIR).")
	fs.StringVar(&e.kubeconfig, "kubeconfig", "", "Admin kubeconfig (default: kubeconfig in the state directory).")
	fs.IntVar(&e.apiserverPort, "apiserver-port", envInt("APISERVER_PORT", 31443), "kube-apiserver port (APISERVER_PORT).")
	fs.StringVar(&e.managerBin, "manager", envOr("MANAGER_BIN", filepath.Join(root, "tmp/bench/manager")), "Manager binary (MANAGER_BIN).")
	fs.IntVar(&e.workers, "workers", envInt("NSCLAIM_WORKERS", 0), "Operator workers (NSCLAIM_WORKERS); 0: the manager's shipped default.")
	fs.StringVar(&e.operatorArgs, "operator-args", os.Getenv("OPERATOR_ARGS"), "Extra manager flags, e.g. --kube-api-qps=200 (OPERATOR_ARGS).")
	fs.StringVar(&e.operatorEnv, "operator-env", os.Getenv("OPERATOR_ENV"),
		"Extra environment of the manager, space-separated KEY=VALUE, e.g. NSCLAIM_MEMORY_LIMIT=268435456, as the Deployment sets it from its 256Mi memory limit;"+
			" the manager sets 90% of what it leaves beside its mapped binary as its soft memory limit (OPERATOR_ENV).")
	var shipped bool
	fs.BoolVar(&shipped, "shipped-env", true, "Start the manager with the environment of the shipped Deployment (config/manager/manager.yaml: its literal values"+
		" and NSCLAIM_MEMORY_LIMIT from its memory limit; not its CPU limit); --workers and --operator-env override it.")
	probe := fs.Int("probe-port", envInt("OPERATOR_PROBE_PORT", 20481), "First replica's probe port (OPERATOR_PROBE_PORT).")
	metrics := fs.Int("metrics-port", envInt("OPERATOR_METRICS_PORT", 20843), "First replica's metrics port (OPERATOR_METRICS_PORT).")
	probe2 := fs.Int("probe-port-2", envInt("OPERATOR2_PROBE_PORT", 20581), "Second replica's probe port (chaos).")
	metrics2 := fs.Int("metrics-port-2", envInt("OPERATOR2_METRICS_PORT", 20943), "Second replica's metrics port (chaos).")
	return func() *env {
		if e.kubeconfig == "" {
			e.kubeconfig = filepath.Join(e.state, "kubeconfig")
		}
		e.replicas = []replicaPorts{{*probe, *metrics}, {*probe2, *metrics2}}
		if shipped {
			var err error
			if e.shippedEnv, err = shippedEnv(filepath.Join(root, "config/manager/manager.yaml")); err != nil {
				fmt.Fprintln(os.Stderr, "error: --shipped-env:", err)
				os.Exit(1)
			}
		}
		return e
	}
}

func main() {
	args := os.Args[1:]
	// hack/bench.sh used to name the mode first; chaos is now a test (TestChaos).
	if len(args) > 0 && args[0] == cmdBench {
		args = args[1:]
	}
	fs := flag.NewFlagSet(cmdBench, flag.ExitOnError)
	cwd, err := os.Getwd()
	if err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
	envOf := envFlags(fs, cwd)
	o := benchFlags(fs)
	_ = fs.Parse(args)
	o.onlySeeds()
	e := envOf()
	// The informers' watch errors while the manager restarts are expected; the program reports what it measures.
	ctrllog.SetLogger(zap.New(zap.WriteTo(io.Discard)))

	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	run := func() error { return runBench(ctx, e, o) }
	if o.fleet {
		run = func() error { return runFleet(ctx, o) }
	}
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		cancel()
		os.Exit(1)
	}
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

func envInt(key string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(key)); err == nil && n > 0 {
		return n
	}
	return def
}

// intList is a flag holding comma-separated integers.
type intList []int

func (l *intList) String() string {
	s := make([]string, len(*l))
	for i, n := range *l {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ",")
}

func (l *intList) Set(v string) error {
	*l = nil
	for _, f := range strings.Split(v, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil || n < 0 {
			return fmt.Errorf("%q is not a count", f)
		}
		*l = append(*l, n)
	}
	return nil
}
