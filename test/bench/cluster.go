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
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/flowcontrol"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
)

// Identity of the operator as the API server sees it (hack/local-operator.sh runs the manager under it).
const (
	operatorNamespace = "nsclaim-operator-system"
	operatorSA        = "nsclaim-operator-controller-manager"
	operatorUser      = "system:serviceaccount:" + operatorNamespace + ":" + operatorSA
	adminUser         = "nsclaim-admin"
	leaseName         = "nsclaim.tenancy.nsclaim.dev"
)

var scheme = runtime.NewScheme()

func init() {
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(tenancyv1alpha1.AddToScheme(scheme))
}

// restConfig loads a kubeconfig with client-side throttling off: the bench's own traffic must not be
// the bottleneck it measures.
func restConfig(path string) (*rest.Config, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return nil, fmt.Errorf("loading %s: %w", path, err)
	}
	cfg.RateLimiter = flowcontrol.NewFakeAlwaysRateLimiter()
	cfg.Timeout = 60 * time.Second
	return cfg, nil
}

// clients are the admin's: a controller-runtime client without cache and a clientset for raw paths.
type clients struct {
	cfg *rest.Config
	c   client.Client
	cs  *kubernetes.Clientset
}

func newClients(kubeconfig string) (*clients, error) {
	cfg, err := restConfig(kubeconfig)
	if err != nil {
		return nil, err
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &clients{cfg: cfg, c: c, cs: cs}, nil
}

// apiserverMetrics scrapes kube-apiserver's /metrics as admin.
func (k *clients) apiserverMetrics(ctx context.Context) ([]sample, error) {
	raw, err := k.cs.Discovery().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading kube-apiserver /metrics: %w", err)
	}
	return parseMetrics(string(raw)), nil
}

// ---------------------------------------------------------------------------------------------------
// Manager processes
// ---------------------------------------------------------------------------------------------------

// replica is one manager process started by this program.
type replica struct {
	idx     int
	ports   replicaPorts
	cmd     *exec.Cmd
	exited  chan struct{}
	started time.Time
}

func (e *env) pidFile(idx int) string {
	if idx == 0 {
		return filepath.Join(e.state, "pids", "operator.pid")
	}
	return filepath.Join(e.state, "pids", fmt.Sprintf("operator-%d.pid", idx+1))
}

// startReplica starts manager replica idx with the command line of hack/local-operator.sh (the
// operator's own ServiceAccount kubeconfig, written there by `start`), plain-HTTP metrics so this
// program can read them, and the configured workers and extra flags. Its PID goes where
// local-operator.sh (replica 0) or the scripts' traps look for it.
func (e *env) startReplica(idx int) (*replica, error) {
	p := e.replicas[idx]
	logPath := filepath.Join(e.state, "logs", "operator.log")
	if idx > 0 {
		logPath = filepath.Join(e.state, "logs", fmt.Sprintf("operator-%d.log", idx+1))
	}
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, err
	}
	defer func() { _ = logf.Close() }()
	args := append([]string{
		"--health-probe-bind-address", fmt.Sprintf("127.0.0.1:%d", p.probe),
		"--metrics-bind-address", fmt.Sprintf("127.0.0.1:%d", p.metrics),
		"--metrics-secure=false",
		"--kubeconfig-server", fmt.Sprintf("https://127.0.0.1:%d", e.apiserverPort),
	}, strings.Fields(e.operatorArgs)...)
	cmd := exec.Command(e.managerBin, args...)
	cmd.Env = append(os.Environ(),
		"KUBECONFIG="+filepath.Join(e.state, "operator.kubeconfig"),
		"POD_NAMESPACE="+operatorNamespace)
	cmd.Env = append(cmd.Env, e.shippedEnv...)
	if e.workers > 0 {
		cmd.Env = append(cmd.Env, fmt.Sprintf("NSCLAIM_WORKERS=%d", e.workers))
	}
	cmd.Env = append(cmd.Env, strings.Fields(e.operatorEnv)...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting manager: %w", err)
	}
	r := &replica{idx: idx, ports: p, cmd: cmd, exited: make(chan struct{}), started: time.Now()}
	go func() { _ = cmd.Wait(); close(r.exited) }()
	if err := os.WriteFile(e.pidFile(idx), []byte(strconv.Itoa(cmd.Process.Pid)+"\n"), 0o644); err != nil {
		return nil, err
	}
	return r, nil
}

func (r *replica) pid() int { return r.cmd.Process.Pid }

func (r *replica) alive() bool {
	select {
	case <-r.exited:
		return false
	default:
		return true
	}
}

// waitReady polls the replica's /readyz.
func (r *replica) waitReady(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	url := fmt.Sprintf("http://127.0.0.1:%d/readyz", r.ports.probe)
	for time.Now().Before(deadline) {
		if !r.alive() {
			return fmt.Errorf("manager replica %d exited", r.idx+1)
		}
		if resp, err := http.Get(url); err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if err := sleep(ctx, 200*time.Millisecond); err != nil {
			return err
		}
	}
	return fmt.Errorf("manager replica %d not ready after %s", r.idx+1, timeout)
}

// stop sends sig and waits up to 40 s for the process to exit, then kills it.
func (r *replica) stop(sig syscall.Signal) {
	if !r.alive() {
		return
	}
	_ = r.cmd.Process.Signal(sig)
	select {
	case <-r.exited:
	case <-time.After(40 * time.Second):
		_ = r.cmd.Process.Kill()
		<-r.exited
	}
}

// metrics scrapes the replica's metrics endpoint.
func (r *replica) metrics() ([]sample, error) {
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", r.ports.metrics))
	if err != nil {
		return nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	return parseMetrics(string(b)), nil
}

// The label names of controller-runtime's controller and work queue metrics.
const (
	labelController = "controller"
	labelName       = "name"
)

// isLeader reports whether the replica holds the leader election lease, from its own metric.
func (r *replica) isLeader() bool {
	m, err := r.metrics()
	if err != nil {
		return false
	}
	return sum(m, "leader_election_master_status", map[string]string{labelName: leaseName}) == 1
}

// caughtUp reports whether the replica has reconciled at least n claims since it started and has
// nothing queued or in progress.
func (r *replica) caughtUp(n int) (bool, float64) {
	m, err := r.metrics()
	if err != nil {
		return false, 0
	}
	total := sum(m, "controller_runtime_reconcile_total", map[string]string{labelController: claimController})
	depth := sum(m, "workqueue_depth", map[string]string{labelName: claimController})
	active := sum(m, "controller_runtime_active_workers", map[string]string{labelController: claimController})
	return total >= float64(n) && depth == 0 && active == 0, total
}

// waitCaughtUp waits until caughtUp(n) holds twice in a row, 250 ms apart, and returns when it first did.
func (r *replica) waitCaughtUp(ctx context.Context, n int, timeout time.Duration) (time.Time, error) {
	deadline := time.Now().Add(timeout)
	var first time.Time
	for time.Now().Before(deadline) {
		if !r.alive() {
			return time.Time{}, fmt.Errorf("manager replica %d exited", r.idx+1)
		}
		ok, _ := r.caughtUp(n)
		switch {
		case ok && first.IsZero():
			first = time.Now()
		case ok:
			return first, nil
		default:
			first = time.Time{}
		}
		if err := sleep(ctx, 250*time.Millisecond); err != nil {
			return time.Time{}, err
		}
	}
	_, total := r.caughtUp(n)
	return time.Time{}, fmt.Errorf("manager not caught up after %s (%.0f of %d reconciles)", timeout, total, n)
}

// ---------------------------------------------------------------------------------------------------
// /proc
// ---------------------------------------------------------------------------------------------------

// procStat is a process's CPU time so far and its resident memory.
type procStat struct {
	cpu      time.Duration
	rssKiB   int64
	peakKiB  int64
	readTime time.Time
}

// clockTick is USER_HZ, 100 on every Linux architecture Go supports.
const clockTick = 100

func readProc(pid int) (procStat, error) {
	st := procStat{readTime: time.Now()}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return st, err
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	if len(f) < 13 {
		return st, errors.New("short /proc stat")
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	stt, _ := strconv.ParseInt(f[12], 10, 64)
	st.cpu = time.Duration(ut+stt) * time.Second / clockTick
	sf, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return st, err
	}
	defer func() { _ = sf.Close() }()
	sc := bufio.NewScanner(sf)
	for sc.Scan() {
		k, v, _ := strings.Cut(sc.Text(), ":")
		n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		switch k {
		case "VmRSS":
			st.rssKiB = n
		case "VmHWM":
			st.peakKiB = n
		}
	}
	return st, nil
}

// resetPeak resets the process's VmHWM to its current RSS (Linux clear_refs), so the peak of a phase
// can be read at its end.
func resetPeak(pid int) {
	_ = os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0)
}

// ---------------------------------------------------------------------------------------------------
// Prometheus text format
// ---------------------------------------------------------------------------------------------------

// sample is one line of the Prometheus text exposition format.
type sample struct {
	name   string
	labels map[string]string
	value  float64
}

// parseMetrics parses the Prometheus text format (comments skipped; exemplars and timestamps ignored).
func parseMetrics(text string) []sample {
	var out []sample
	for _, line := range strings.Split(text, "\n") {
		if line == "" || line[0] == '#' {
			continue
		}
		s := sample{labels: map[string]string{}}
		remainder := line
		if i := strings.IndexAny(line, "{ "); i >= 0 && line[i] == '{' {
			s.name = line[:i]
			remainder = parseLabels(line[i+1:], s.labels)
		} else if i >= 0 {
			s.name, remainder = line[:i], line[i:]
		}
		fields := strings.Fields(remainder)
		if len(fields) == 0 {
			continue
		}
		v, err := strconv.ParseFloat(fields[0], 64)
		if err != nil {
			continue
		}
		s.value = v
		out = append(out, s)
	}
	return out
}

// parseLabels reads `k="v",...}` into into and returns what follows the closing brace.
func parseLabels(s string, into map[string]string) string {
	for {
		s = strings.TrimLeft(s, ", ")
		if s == "" {
			return ""
		}
		if s[0] == '}' {
			return s[1:]
		}
		eq := strings.IndexByte(s, '=')
		if eq < 0 || eq+1 >= len(s) || s[eq+1] != '"' {
			return ""
		}
		key := s[:eq]
		var b strings.Builder
		i := eq + 2
		for ; i < len(s) && s[i] != '"'; i++ {
			if s[i] == '\\' && i+1 < len(s) {
				i++
				switch s[i] {
				case 'n':
					b.WriteByte('\n')
				default:
					b.WriteByte(s[i])
				}
				continue
			}
			b.WriteByte(s[i])
		}
		into[key] = b.String()
		if i >= len(s) {
			return ""
		}
		s = s[i+1:]
	}
}

// sum adds the values of the samples of metric name whose labels include match.
func sum(samples []sample, name string, match map[string]string) float64 {
	var t float64
	for _, s := range samples {
		if s.name != name {
			continue
		}
		ok := true
		for k, v := range match {
			if s.labels[k] != v {
				ok = false
				break
			}
		}
		if ok {
			t += s.value
		}
	}
	return t
}

// requestTotals sums apiserver_request_total by "verb resource[/subresource]".
func requestTotals(samples []sample) map[string]float64 {
	out := map[string]float64{}
	for _, s := range samples {
		if s.name != "apiserver_request_total" {
			continue
		}
		res := s.labels["resource"]
		if sub := s.labels["subresource"]; sub != "" {
			res += "/" + sub
		}
		out[strings.ToLower(s.labels["verb"])+" "+res] += s.value
	}
	return out
}

// requestSeconds sums apiserver_request_duration_seconds (its _sum and _count) by "verb
// resource[/subresource]", as "<key> sum" and "<key> count": the server-side time of the requests.
func requestSeconds(samples []sample) map[string]float64 {
	out := map[string]float64{}
	for _, s := range samples {
		var part string
		switch s.name {
		case "apiserver_request_duration_seconds_sum":
			part = " sum"
		case "apiserver_request_duration_seconds_count":
			part = " count"
		default:
			continue
		}
		res := s.labels["resource"]
		if sub := s.labels["subresource"]; sub != "" {
			res += "/" + sub
		}
		out[auditVerb(s.labels["verb"])+" "+res+part] += s.value
	}
	return out
}

// auditVerb names a verb of kube-apiserver's metrics (the HTTP method, APPLY for a server-side apply)
// as the audit log does.
func auditVerb(v string) string {
	switch v {
	case "POST":
		return verbCreate
	case "PUT":
		return verbUpdate
	case "APPLY":
		return verbPatch
	}
	return strings.ToLower(v)
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
