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
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
	"github.com/nsclaim/nsclaim-operator/internal/claimpolicy"
	"github.com/nsclaim/nsclaim-operator/test/invariants"
)

type chaosOptions struct {
	n              int
	scenarios      string
	killEvery      time.Duration
	restoreTimeout time.Duration
	timeout        time.Duration
	perNS          int
	parallel       int
	etcdPort       int
	out            string
}

func chaosFlags(fs *flag.FlagSet) *chaosOptions {
	o := &chaosOptions{}
	fs.IntVar(&o.n, "claims", 500, "Claims of each scenario's burst.")
	fs.StringVar(&o.scenarios, "scenarios", "leader,apiserver,etcd,children", "Scenarios to run, in order.")
	fs.DurationVar(&o.killEvery, "kill-every", 5*time.Second, "Leader scenario: time between the operator's recovery and the next kill of the leader.")
	fs.DurationVar(&o.restoreTimeout, "restore-timeout", 12*time.Minute, "Children scenario: longest wait for a deleted object to be restored"+
		" (a deleted credentials Secret returns at the manager's next credentials check, every 10 minutes by default).")
	fs.DurationVar(&o.timeout, "timeout", 30*time.Minute, "Longest wait for a scenario's claims to be Ready.")
	fs.IntVar(&o.perNS, "claims-per-namespace", 100, "Claims per requester namespace.")
	fs.IntVar(&o.parallel, "create-parallel", 50, "Concurrent claim creates.")
	fs.IntVar(&o.etcdPort, "etcd-port", envInt("ETCD_CLIENT_PORT", 27379), "etcd client port (ETCD_CLIENT_PORT).")
	fs.StringVar(&o.out, "out", "", "Markdown file the summary is written to (relative to the repository root).")
	return o
}

// supervisor keeps two manager replicas running, restarting any that exits after a second, as a
// Deployment would.
type supervisor struct {
	e        *env
	mu       sync.Mutex
	reps     []*replica
	restarts int
	stopped  bool
}

func (s *supervisor) start(ctx context.Context) error {
	s.reps = make([]*replica, 2)
	for i := range s.reps {
		r, err := s.e.startReplica(i)
		if err != nil {
			return err
		}
		s.reps[i] = r
	}
	go func() {
		for ctx.Err() == nil {
			_ = sleep(ctx, time.Second)
			s.mu.Lock()
			for i, r := range s.reps {
				if !r.alive() && !s.stopped {
					if nr, err := s.e.startReplica(i); err == nil {
						s.reps[i] = nr
						s.restarts++
					}
				}
			}
			s.mu.Unlock()
		}
	}()
	return nil
}

func (s *supervisor) stop() {
	s.mu.Lock()
	s.stopped = true
	reps := slices.Clone(s.reps)
	s.mu.Unlock()
	for _, r := range reps {
		if r != nil {
			r.stop(syscall.SIGTERM)
		}
	}
}

// leader returns the replica that holds the lease, or nil.
func (s *supervisor) leader() *replica {
	s.mu.Lock()
	reps := slices.Clone(s.reps)
	s.mu.Unlock()
	for _, r := range reps {
		if r.alive() && r.isLeader() {
			return r
		}
	}
	return nil
}

// scenarioResult is one scenario's outcome.
type scenarioResult struct {
	name       string
	claims     int
	ready      int
	span       time.Duration
	events     []string
	recoveries []time.Duration
	failures   []string
}

// chaos runs the scenarios against a cluster: two supervised manager replicas and a tracker of the
// claims' readiness.
type chaos struct {
	e     *env
	o     *chaosOptions
	k     *clients
	track *readyTracker
	sup   *supervisor
}

// startChaos ensures the bench class, starts the readiness tracker and the two supervised manager
// replicas. Stop the replicas with c.sup.stop.
func startChaos(ctx context.Context, e *env, o *chaosOptions) (*chaos, error) {
	k, err := newClients(e.kubeconfig)
	if err != nil {
		return nil, err
	}
	if _, err := ensureClass(ctx, k); err != nil {
		return nil, err
	}
	c := &chaos{e: e, o: o, k: k}
	if c.track, err = startTracker(ctx, k); err != nil {
		return nil, err
	}
	c.sup = &supervisor{e: e}
	if err := c.sup.start(ctx); err != nil {
		c.sup.stop()
		return nil, err
	}
	return c, nil
}

// scenarioNames returns the names of the scenarios to run, in order.
func (o *chaosOptions) scenarioNames() []string {
	var out []string
	for _, name := range strings.Split(o.scenarios, ",") {
		if name = strings.TrimSpace(name); name != "" {
			out = append(out, name)
		}
	}
	return out
}

// run runs one scenario, then checks the invariants over the whole cluster (invariants.Check, settled,
// with TokenReviews); the violations are the result's failures, with the scenario's own (claims not
// Ready in time, deleted objects not restored).
func (c *chaos) run(ctx context.Context, name string) (scenarioResult, error) {
	var res scenarioResult
	switch name {
	case "leader":
		res = c.leaderScenario(ctx)
	case "apiserver":
		res = c.restartScenario(ctx, "kube-apiserver")
	case "etcd":
		res = c.restartScenario(ctx, "etcd")
	case "children":
		res = c.childrenScenario(ctx)
	default:
		return res, fmt.Errorf("unknown scenario %q (leader, apiserver, etcd, children)", name)
	}
	if err := ctx.Err(); err != nil {
		return res, err
	}
	violations, err := invariants.Check(ctx, c.k.c, invariants.Options{Settled: true, Tokens: true})
	if err != nil {
		res.failures = append(res.failures, "checking the invariants: "+err.Error())
	}
	res.failures = append(res.failures, violations...)
	logf("%s: %d/%d Ready in %s; %d invariant failures", res.name, res.ready, res.claims, res.span.Round(time.Millisecond), len(res.failures))
	return res, nil
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s chaos: %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}

// burst creates the scenario's claims in the background; the returned function waits for the creates.
func (c *chaos) burst(ctx context.Context, series string) (func() []claimRef, time.Time) {
	var refs []claimRef
	done := make(chan struct{})
	t0 := time.Now()
	go func() {
		defer close(done)
		var err error
		refs, err = createClaims(ctx, c.k, series, 0, c.o.n, c.o.perNS, c.o.parallel, nil)
		if err != nil {
			logf("creating claims: %v", err)
		}
	}()
	return func() []claimRef { <-done; return refs }, t0
}

// readyCount counts the claims of a series the tracker saw Ready.
func (c *chaos) readyCount(series string) int {
	c.track.mu.Lock()
	defer c.track.mu.Unlock()
	n := 0
	for k := range c.track.readyAt {
		if strings.Contains(k, "/"+series+"-") {
			n++
		}
	}
	return n
}

// progressAfter waits until a claim becomes Ready after t and returns how long after t that was.
func (c *chaos) progressAfter(ctx context.Context, t time.Time, series string, limit time.Duration) (time.Duration, bool) {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		if last := c.track.lastReady(); last.After(t) {
			return last.Sub(t), true
		}
		if c.readyCount(series) >= c.o.n {
			return 0, false
		}
		_ = sleep(ctx, 100*time.Millisecond)
	}
	return 0, false
}

func (c *chaos) finish(ctx context.Context, res *scenarioResult, wait func() []claimRef, t0 time.Time) {
	refs := wait()
	res.claims = len(refs)
	if missing := c.track.waitAll(ctx, refs, c.o.timeout); missing > 0 {
		res.failures = append(res.failures, fmt.Sprintf("%d of %d claims not Ready after %s", missing, len(refs), c.o.timeout))
	}
	lat, last := c.track.latencies(refs)
	res.ready = len(lat)
	res.span = last.Sub(t0)
}

// leaderScenario kills the leader every few seconds during a burst, alternating SIGKILL (the lease
// must expire) and SIGTERM (the lease is released), and lets the supervisor restart it.
func (c *chaos) leaderScenario(ctx context.Context) scenarioResult {
	series := "leader"
	res := scenarioResult{name: "leader killed every " + c.o.killEvery.String()}
	logf("%s, during a burst of %d", res.name, c.o.n)
	wait, t0 := c.burst(ctx, series)
	deadline := time.Now().Add(c.o.timeout)
	for kill := 0; c.readyCount(series) < c.o.n && time.Now().Before(deadline) && ctx.Err() == nil; kill++ {
		_ = sleep(ctx, c.o.killEvery)
		l := c.sup.leader()
		if l == nil {
			continue
		}
		sig, how := syscall.SIGKILL, "SIGKILL"
		if kill%2 == 1 {
			sig, how = syscall.SIGTERM, "SIGTERM"
		}
		at := time.Now()
		_ = l.cmd.Process.Signal(sig)
		rec, ok := c.progressAfter(ctx, at, series, 2*time.Minute)
		if ok {
			res.recoveries = append(res.recoveries, rec)
			res.events = append(res.events, fmt.Sprintf("%s to leader pid %d at %d Ready: next claim Ready %s later", how, l.pid(), c.readyCount(series), rec.Round(time.Millisecond)))
		} else {
			res.events = append(res.events, fmt.Sprintf("%s to leader pid %d: no claim became Ready afterwards (burst done?)", how, l.pid()))
		}
	}
	c.finish(ctx, &res, wait, t0)
	return res
}

// restartScenario restarts a control plane process (kube-apiserver or etcd) once a quarter of a burst
// is Ready, with the command line it ran with.
func (c *chaos) restartScenario(ctx context.Context, component string) scenarioResult {
	series := strings.TrimPrefix(component, "kube-")
	res := scenarioResult{name: component + " restarted"}
	logf("%s in the middle of a burst of %d", res.name, c.o.n)
	wait, t0 := c.burst(ctx, series)
	for c.readyCount(series) < c.o.n/4 && time.Since(t0) < c.o.timeout && ctx.Err() == nil {
		_ = sleep(ctx, 200*time.Millisecond)
	}
	at := time.Now()
	down, err := c.restartComponent(ctx, component)
	if err != nil {
		res.failures = append(res.failures, fmt.Sprintf("restarting %s: %v", component, err))
		c.finish(ctx, &res, wait, t0)
		return res
	}
	res.events = append(res.events, fmt.Sprintf("%s restarted at %d Ready, healthy again after %s", component, c.readyCount(series), down.Round(time.Millisecond)))
	if rec, ok := c.progressAfter(ctx, at, series, 5*time.Minute); ok {
		res.recoveries = append(res.recoveries, rec)
		res.events = append(res.events, fmt.Sprintf("next claim Ready %s after the restart began", rec.Round(time.Millisecond)))
	}
	c.finish(ctx, &res, wait, t0)
	return res
}

// restartComponent stops a local-cluster.sh process (SIGTERM, then SIGKILL after 20 s) and starts it
// again with the same command line, recording the new PID where local-cluster.sh looks for it. It
// returns the time until the component answered its health check again.
func (c *chaos) restartComponent(ctx context.Context, component string) (time.Duration, error) {
	pidFile := filepath.Join(c.e.state, "pids", component+".pid")
	b, err := os.ReadFile(pidFile)
	if err != nil {
		return 0, err
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return 0, err
	}
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return 0, err
	}
	argv := strings.Split(strings.TrimRight(string(raw), "\x00"), "\x00")
	if !strings.HasSuffix(argv[0], "/"+component) || !strings.Contains(string(raw), c.e.state+"/") {
		return 0, fmt.Errorf("pid %d is not this cluster's %s", pid, component)
	}
	t0 := time.Now()
	proc, _ := os.FindProcess(pid)
	_ = proc.Signal(syscall.SIGTERM)
	for i := 0; i < 200 && syscall.Kill(pid, 0) == nil; i++ {
		time.Sleep(100 * time.Millisecond)
	}
	if syscall.Kill(pid, 0) == nil {
		_ = proc.Kill()
		time.Sleep(500 * time.Millisecond)
	}
	logFile, err := os.OpenFile(filepath.Join(c.e.state, "logs", component+".log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return 0, err
	}
	defer func() { _ = logFile.Close() }()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	go func() { _ = cmd.Wait() }()
	if err := os.WriteFile(pidFile, []byte(strconv.Itoa(cmd.Process.Pid)+"\n"), 0o644); err != nil {
		return 0, err
	}
	healthy := func() bool {
		if component == "etcd" {
			resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/health", c.o.etcdPort))
			if err != nil {
				return false
			}
			_ = resp.Body.Close()
			return resp.StatusCode == http.StatusOK
		}
		raw, err := c.k.cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		return err == nil && string(raw) == "ok"
	}
	for time.Since(t0) < 3*time.Minute {
		if healthy() {
			return time.Since(t0), nil
		}
		_ = sleep(ctx, 100*time.Millisecond)
	}
	return time.Since(t0), fmt.Errorf("%s not healthy 3 minutes after the restart", component)
}

// deletion is a child object deleted behind the operator's back.
type deletion struct {
	kind, namespace, name string
	uid                   string
	at                    time.Time
	restored              time.Duration
}

// childrenScenario deletes a RoleBinding, a credentials Secret or a ResourceQuota of a Ready claim of
// the burst every half second while the burst runs, and waits for each to come back.
func (c *chaos) childrenScenario(ctx context.Context) scenarioResult {
	series := "children"
	res := scenarioResult{name: "children deleted"}
	logf("children deleted behind the operator's back during a burst of %d", c.o.n)
	wait, t0 := c.burst(ctx, series)
	var dels []*deletion
	kinds := []string{kindRoleBinding, "Secret", kindResourceQuota}
	used := map[string]bool{}
	for i := 0; c.readyCount(series) < c.o.n && time.Since(t0) < c.o.timeout && ctx.Err() == nil; {
		_ = sleep(ctx, 500*time.Millisecond)
		claim := c.randomReadyClaim(ctx, series, used)
		if claim == nil {
			continue
		}
		d := &deletion{kind: kinds[i%len(kinds)]}
		obj := childObject(d.kind, claim)
		d.namespace, d.name = obj.GetNamespace(), obj.GetName()
		if err := c.k.c.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			continue
		}
		d.uid = string(obj.GetUID())
		d.at = time.Now()
		if err := c.k.c.Delete(ctx, obj); err != nil {
			continue
		}
		used[claim.Namespace+"/"+claim.Name] = true
		dels = append(dels, d)
		i++
	}
	c.finish(ctx, &res, wait, t0)
	// Wait for every deleted object to be back (a new object of that name).
	deadline := time.Now().Add(c.o.restoreTimeout)
	for {
		pending := 0
		for _, d := range dels {
			if d.restored > 0 {
				continue
			}
			obj := childObject(d.kind, nil)
			err := c.k.c.Get(ctx, client.ObjectKey{Namespace: d.namespace, Name: d.name}, obj)
			if err == nil && string(obj.GetUID()) != d.uid {
				d.restored = time.Since(d.at)
				continue
			}
			pending++
		}
		if pending == 0 || time.Now().After(deadline) || ctx.Err() != nil {
			break
		}
		_ = sleep(ctx, 250*time.Millisecond)
	}
	byKind := map[string][]time.Duration{}
	lost := map[string][]*deletion{}
	for _, d := range dels {
		if d.restored > 0 {
			res.recoveries = append(res.recoveries, d.restored)
			byKind[d.kind] = append(byKind[d.kind], d.restored)
		} else {
			lost[d.kind] = append(lost[d.kind], d)
		}
	}
	for _, k := range kinds {
		n := 0
		for _, d := range dels {
			if d.kind == k {
				n++
			}
		}
		ds := byKind[k]
		slices.Sort(ds)
		res.events = append(res.events, fmt.Sprintf("%s: %d deleted, %d restored, p50 %s max %s", k, n, len(ds),
			percentile(ds, 50).Round(time.Millisecond), percentile(ds, 100).Round(time.Millisecond)))
		if l := lost[k]; len(l) > 0 {
			res.failures = append(res.failures, fmt.Sprintf("%d of %d deleted %ss not restored within %s of the end of the burst (first: %s/%s, deleted at %s)",
				len(l), n, k, c.o.restoreTimeout, l[0].namespace, l[0].name, l[0].at.Format("15:04:05")))
		}
	}
	return res
}

// randomReadyClaim picks a claim of the series that is Ready and was not picked before.
func (c *chaos) randomReadyClaim(ctx context.Context, series string, used map[string]bool) *tenancyv1alpha1.NamespaceClaim {
	c.track.mu.Lock()
	var keys []string
	for k := range c.track.readyAt {
		if strings.Contains(k, "/"+series+"-") && !used[k] {
			keys = append(keys, k)
		}
	}
	c.track.mu.Unlock()
	if len(keys) == 0 {
		return nil
	}
	ns, name, _ := strings.Cut(keys[rand.IntN(len(keys))], "/")
	claim := &tenancyv1alpha1.NamespaceClaim{}
	if err := c.k.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, claim); err != nil || claim.Status.Namespace == "" {
		return nil
	}
	return claim
}

// childObject returns an empty object of kind, named for claim if claim is not nil.
func childObject(kind string, claim *tenancyv1alpha1.NamespaceClaim) client.Object {
	var o client.Object
	switch kind {
	case kindRoleBinding:
		o = &rbacv1.RoleBinding{}
		if claim != nil {
			o.SetNamespace(claim.Status.Namespace)
			o.SetName(claimpolicy.TenantRoleBindingName)
		}
	case "Secret":
		o = &corev1.Secret{}
		if claim != nil {
			o.SetNamespace(claim.Namespace)
			o.SetName(claim.Status.CredentialsSecretName)
		}
	default:
		o = &corev1.ResourceQuota{}
		if claim != nil {
			o.SetNamespace(claim.Status.Namespace)
			o.SetName(claimpolicy.ResourceQuotaName)
		}
	}
	return o
}

func chaosMarkdown(results []scenarioResult, restarts int) string {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	p("Machine: %s", machine())
	p("")
	p("| scenario | claims | Ready | all Ready after s | recoveries | recovery p50 s | recovery max s | invariant failures |")
	p("|---|---|---|---|---|---|---|---|")
	for _, r := range results {
		rec := slices.Clone(r.recoveries)
		slices.Sort(rec)
		p("| %s | %d | %d | %s | %d | %s | %s | %d |", r.name, r.claims, r.ready, secs(r.span), len(rec), secs(percentile(rec, 50)), secs(percentile(rec, 100)), len(r.failures))
	}
	p("")
	p("Manager replicas restarted by the supervisor: %d.", restarts)
	for _, r := range results {
		p("")
		p("**%s**", r.name)
		for _, e := range r.events {
			p("- %s", e)
		}
		for _, f := range r.failures {
			p("- FAIL: %s", f)
		}
		if len(r.failures) == 0 {
			p("- invariants hold (test/invariants): every claim Ready with exactly one namespace; no namespace, child or Secret" +
				" without its claim; exactly the children of the class per namespace; one Secret per claim whose token" +
				" authenticates as its tenant")
		}
	}
	return b.String()
}
