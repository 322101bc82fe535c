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
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
	"github.com/nsclaim/nsclaim-operator/internal/claimpolicy"
)

// benchOptions are the sizes and knobs of a bench run; the defaults are the issue's.
type benchOptions struct {
	bursts, restarts, scales intList
	perNS                    int
	createParallel           int
	ceilingWorkers           int
	fillWorkers              int
	latency                  int
	pool                     int
	poolLimit                int
	poolSpread               int
	seeds                    int
	seedsOnly                bool
	latencyPause             time.Duration
	idle                     time.Duration
	settle                   time.Duration
	memWatch                 time.Duration
	timeout                  time.Duration
	ceiling                  bool
	out                      string
	budgetBurst              int
	budgetReleases           int
	fleet                    bool
	fleetOpts                fleetOptions
}

func benchFlags(fs *flag.FlagSet) *benchOptions {
	o := &benchOptions{bursts: intList{500}, restarts: intList{1000, 5000}, scales: intList{1000, 10000}}
	fs.Var(&o.bursts, "bursts", "Burst sizes: claims created at once (comma-separated); each is compared with the ceilings of the same size.")
	fs.Var(&o.restarts, "restarts", "Claim counts at which the manager is restarted (comma-separated; empty to skip).")
	fs.Var(&o.scales, "scales", "Claim counts at which RSS, CPU and one more claim's latency are measured (comma-separated; empty to skip).")
	fs.IntVar(&o.perNS, "claims-per-namespace", 100, "Claims per requester namespace.")
	fs.IntVar(&o.createParallel, "create-parallel", 32, "Concurrent claim (and ceiling (b) request) creates of a burst.")
	fs.IntVar(&o.ceilingWorkers, "ceiling-workers", 32, "Concurrency of the ceilings' raw client: the best this control plane serves, whatever the operator's workers.")
	fs.IntVar(&o.latency, "latency", 20, "Single claims, one at a time on an idle cluster, for the created -> Ready median (nsclaim) and the raw client's (0 to skip).")
	fs.IntVar(&o.pool, "pool", 50, "Size of the warm pool of the pool phase (a class with spec.pool.size; single claims from the full pool, then a burst of that size"+
		" in one requester namespace, then one spread over --pool-spread requester namespaces); 0 to skip.")
	fs.IntVar(&o.poolLimit, "pool-limit", 1000, "The pool class's access.maxClaimsPerNamespace, as the classes users have set one (the shipped ci class: 20);"+
		" keep it above --pool so the burst in one requester namespace is not refused; 0: no claim limit.")
	fs.IntVar(&o.poolSpread, "pool-spread", 10, "Requester namespaces the pool's second burst is spread over; 0 to skip that burst.")
	fs.IntVar(&o.seeds, "seeds", 0, "Claimed namespaces of the seeds scenario (docs/seeds.md): the manager's RSS with and without one pull Secret seed in each,"+
		" and the latency of a rotation of its source to every copy (0 to skip; the manager then runs with "+seedsArgs()+").")
	fs.BoolVar(&o.seedsOnly, "seeds-only", false, "Run the seeds scenario (--seeds) and nothing else: no single claims, bursts, ceilings, pool, budget,"+
		" idle window, restarts or scales, whatever those flags say.")
	fs.DurationVar(&o.latencyPause, "latency-pause", time.Second, "Pause after each single claim, so the next starts on an idle cluster.")
	fs.IntVar(&o.fillWorkers, "fill-workers", 16, "Concurrency of the unmeasured fill that grows the cluster to the restart and scale sizes.")
	fs.DurationVar(&o.idle, "idle", time.Minute, "Idle window: requests per minute with nothing changing.")
	fs.DurationVar(&o.settle, "settle", 3*time.Second, "Pause after a phase before its counters are read.")
	fs.DurationVar(&o.memWatch, "mem-watch", 0, "After each scale point, keep the manager idle this long and print its RSS and memory classes every 30s (0 to skip).")
	fs.DurationVar(&o.timeout, "timeout", 45*time.Minute, "Longest wait for any one phase.")
	fs.BoolVar(&o.ceiling, "ceiling", true, "Run the ceilings after each burst.")
	fs.StringVar(&o.out, "out", "tmp/bench/results.md", "Markdown file the final table is written to.")
	fs.IntVar(&o.budgetBurst, "budget-burst", 500, "Budget cost: four bursts of this many claims, in the order without a budget, with a budget that never binds, "+
		"with, without (ABBA); the mean throughputs compared (0 to skip).")
	fs.IntVar(&o.budgetReleases, "budget-releases", 20, "Budget release: queued -> Ready latencies after this many releases of a budget of one claim (0 to skip).")
	fleetFlags(fs, o)
	return o
}

// onlySeeds clears, when o.seedsOnly is set, every option that would run anything but the seeds
// scenario.
func (o *benchOptions) onlySeeds() {
	if !o.seedsOnly {
		return
	}
	o.bursts, o.restarts, o.scales = nil, nil, nil
	o.latency, o.pool, o.budgetBurst, o.budgetReleases, o.idle, o.ceiling = 0, 0, 0, 0, 0, false
}

// window measures a phase: the operator's CPU and peak RSS, kube-apiserver's request counters and the
// audit log between its start and end.
type window struct {
	b       *bencher
	pid     int
	from    int64
	before  map[string]float64
	seconds map[string]float64
	proc    procStat
	started time.Time
	// mgr is the manager's metrics at the start (nil without a manager).
	mgr []sample
}

// load is what a window measured.
type load struct {
	dur       time.Duration
	cpu       time.Duration
	peakKiB   int64
	rssKiB    int64
	requests  requestCounts
	apiserver map[string]float64
	// seconds is kube-apiserver's time serving the window's requests, as "<verb resource> sum" and
	// "<verb resource> count" (everyone's, not only the operator's).
	seconds map[string]float64
	// queue is the claim controller's reconciles, work and queue waits (the same manager process only).
	queue *queueStats
}

// meanMillis is the mean server-side time of the window's requests "verb resource", in milliseconds.
func (l load) meanMillis(what string) float64 {
	n := l.seconds[what+" count"]
	if n == 0 {
		return 0
	}
	return 1000 * l.seconds[what+" sum"] / n
}

func (l load) apiserverTotal() float64 {
	t := 0.0
	for _, v := range l.apiserver {
		t += v
	}
	return t
}

// uncachedReads are the operator's reads of API objects that an informer cache did not answer: every
// get and list. Informers start with a streaming watch (no list); the leader election's lease reads
// and discovery (/api, /apis) are not object reads of the controller and are left out.
func (l load) uncachedReads() int {
	return l.requests.count("operator", func(w string) bool {
		verb, res, _ := strings.Cut(w, " ")
		return (verb == "get" || verb == "list") && !strings.HasPrefix(res, "/") && res != "leases"
	})
}

func (l load) operatorWrites() int {
	return l.requests.count("operator", func(w string) bool { v, _, _ := strings.Cut(w, " "); return isWrite(v) })
}

func (l load) tokens() int {
	return l.requests.rcount("operator", "create serviceaccounts/token")
}

func (rc requestCounts) rcount(who, what string) int { return rc[who][what] }

type bencher struct {
	e     *env
	o     *benchOptions
	k     *clients
	audit auditLog
	class *tenancyv1alpha1.NamespaceClass
	track *readyTracker
	// usable records when kube-controller-manager made each namespace usable (the usable ceiling).
	usable *usableTracker
	op     *replica
	log    io.Writer
	// claims is the number of claims in the cluster.
	claims int
	rows   report
	// raw is the ceilings' client (the operator's ServiceAccount, unthrottled).
	raw *rawClient
}

func (b *bencher) begin(ctx context.Context, pid int) *window {
	w := &window{b: b, pid: pid, from: b.audit.offset(), started: time.Now()}
	if pid > 0 {
		resetPeak(pid)
		w.proc, _ = readProc(pid)
		w.mgr, _ = b.op.metrics()
	}
	if m, err := b.k.apiserverMetrics(ctx); err == nil {
		w.before, w.seconds = requestTotals(m), requestSeconds(m)
	}
	return w
}

// end reads the counters after the settle pause. pid is the process measured at the end (the restart
// phase measures a process that did not exist at the start).
func (w *window) end(ctx context.Context, pid int) load {
	_ = sleep(ctx, w.b.o.settle)
	l := load{dur: time.Since(w.started), apiserver: map[string]float64{}}
	if pid > 0 {
		p, _ := readProc(pid)
		l.cpu, l.peakKiB, l.rssKiB = p.cpu, p.peakKiB, p.rssKiB
		if pid == w.pid {
			l.cpu -= w.proc.cpu
			if m, err := w.b.op.metrics(); err == nil && w.mgr != nil {
				q := queueStatsBetween(w.mgr, m)
				l.queue = &q
			}
		}
	}
	if m, err := w.b.k.apiserverMetrics(ctx); err == nil {
		for k, v := range requestTotals(m) {
			if d := v - w.before[k]; d > 0 {
				l.apiserver[k] = d
			}
		}
		l.seconds = map[string]float64{}
		for k, v := range requestSeconds(m) {
			if d := v - w.seconds[k]; d > 0 {
				l.seconds[k] = d
			}
		}
	}
	l.requests, _ = w.b.audit.read(w.from, w.b.audit.offset())
	return l
}

func (b *bencher) logf(format string, args ...any) {
	_, _ = fmt.Fprintf(b.log, "%s bench: %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}

func runBench(ctx context.Context, e *env, o *benchOptions) error {
	k, err := newClients(e.kubeconfig)
	if err != nil {
		return err
	}
	b := &bencher{e: e, o: o, k: k, audit: auditLog{path: filepath.Join(e.state, "audit", "audit.log")}, log: os.Stderr}
	if b.audit.offset() == 0 {
		return fmt.Errorf("no audit log at %s: start the cluster with hack/bench.sh (it enables audit logging)", b.audit.path)
	}
	if b.class, err = ensureClass(ctx, k); err != nil {
		return err
	}
	list := &tenancyv1alpha1.NamespaceClaimList{}
	if err := k.c.List(ctx, list); err != nil {
		return err
	}
	b.claims = len(list.Items)
	if b.track, err = startTracker(ctx, k); err != nil {
		return err
	}
	if b.usable, err = startUsableTracker(ctx, k); err != nil {
		return err
	}
	if b.raw, err = newRawClient(e, b.class); err != nil {
		return err
	}
	defer func() {
		if b.op != nil {
			b.op.stop(syscall.SIGTERM)
		}
	}()
	if err := prepareSeeds(ctx, k, e, o.seeds); err != nil {
		return err
	}
	if err := b.singleClaims(ctx); err != nil {
		return err
	}
	if err := b.loadPhases(ctx); err != nil {
		return err
	}
	sizes := slices.Clone(o.restarts)
	sizes = append(sizes, o.scales...)
	slices.Sort(sizes)
	sizes = slices.Compact(sizes)
	for _, size := range sizes {
		if err := b.fill(ctx, size); err != nil {
			return err
		}
		if slices.Contains(o.restarts, size) || slices.Contains(o.scales, size) {
			if err := b.restart(ctx, size, slices.Contains(o.scales, size)); err != nil {
				return err
			}
		}
	}
	b.rows.machine = machine()
	workers := "workers=shipped default"
	if e.workers > 0 {
		workers = fmt.Sprintf("workers=%d", e.workers)
	}
	b.rows.operatorArgs = strings.TrimSpace(fmt.Sprintf("%s %s %s %s", workers, e.operatorArgs, describeEnv(e.shippedEnv), e.operatorEnv))
	b.rows.ceilingWorkers = b.ceilingWorkers()
	md := b.rows.markdown()
	fmt.Println()
	fmt.Println(md)
	if o.out != "" {
		if err := os.MkdirAll(filepath.Dir(o.out), 0o755); err == nil {
			_ = os.WriteFile(o.out, []byte(md), 0o644)
		}
	}
	return nil
}

// loadPhases runs, in order, the bursts, the pool phase, the budget scenarios, the idle window and
// the seeds scenario that the options ask for.
func (b *bencher) loadPhases(ctx context.Context) error {
	for _, n := range b.o.bursts {
		if err := b.burst(ctx, n); err != nil {
			return err
		}
	}
	if b.o.pool > 0 {
		if err := b.poolPhase(ctx); err != nil {
			return err
		}
	}
	if b.o.budgetBurst > 0 || b.o.budgetReleases > 0 {
		if err := b.budgetPhase(ctx); err != nil {
			return err
		}
	}
	if b.o.idle > 0 {
		if err := b.idlePhase(ctx); err != nil {
			return err
		}
	}
	if b.o.seeds > 0 {
		return b.seedsPhase(ctx, b.o.seeds)
	}
	return nil
}

// singleClaims measures the raw client's single claims, starts the manager and measures its single
// claims (--latency; with 0 it only starts the manager).
func (b *bencher) singleClaims(ctx context.Context) error {
	n := b.o.latency
	lat := &latencyRow{}
	var err error
	if n > 0 {
		b.logf("raw client: %d single claims, one at a time, before the manager starts", n)
		if lat.raw, lat.rawWrites, err = b.rawLatency(ctx, b.raw, n); err != nil {
			return err
		}
		b.logf("raw client single claim: median %s to usable, %s to its last write (load %s)",
			percentile(lat.raw, 50).Round(time.Millisecond), percentile(lat.rawWrites, 50).Round(time.Millisecond), loadAvg())
	}
	if err := b.startOperator(ctx); err != nil {
		return err
	}
	if n == 0 {
		return nil
	}
	b.logf("nsclaim: %d single claims, one at a time", n)
	if lat.nsclaim, err = b.nsclaimLatency(ctx, n); err != nil {
		return err
	}
	b.logf("nsclaim single claim: median %s (load %s)", percentile(lat.nsclaim, 50).Round(time.Millisecond), loadAvg())
	b.rows.latency = lat
	return nil
}

// startOperator starts the manager and waits until it has caught up with every claim.
func (b *bencher) startOperator(ctx context.Context) error {
	op, err := b.startReady(ctx)
	if err != nil {
		return err
	}
	t0 := time.Now()
	// The manager took its start time before it was ready (t0); a namespace's creationTimestamp has a
	// one-second grain, so a second more.
	windowEnds := t0.Add(claimpolicy.NameReuseWindow + time.Second)
	if _, err := op.waitCaughtUp(ctx, b.claims, b.o.timeout); err != nil {
		return err
	}
	b.logf("manager (pid %d) caught up with %d claims in %s", op.pid(), b.claims, time.Since(t0).Round(time.Millisecond))
	// For NameReuseWindow after it starts, the manager holds back the grants of every new namespace (it
	// cannot know which names were in use just before it started; docs/security.md, section 4a). The
	// bursts measure a manager past that: a restart's cost is measured by the restart rows.
	if wait := time.Until(windowEnds); wait > 0 {
		b.logf("waiting %s for the manager's start-up name-reuse window", wait.Round(time.Millisecond))
		if err := sleep(ctx, wait); err != nil {
			return err
		}
	}
	return nil
}

// startReady starts the manager and waits until it is ready. A manager that exits before it is ready
// is started again, up to three times: its probe and metrics ports lie in the kernel's ephemeral
// range, so a client connection of the moment can hold one of them.
func (b *bencher) startReady(ctx context.Context) (*replica, error) {
	var err error
	for attempt := 1; attempt <= 3; attempt++ {
		var op *replica
		if op, err = b.e.startReplica(0); err != nil {
			return nil, err
		}
		b.op = op
		if err = op.waitReady(ctx, 2*time.Minute); err == nil {
			return op, nil
		}
		b.logf("manager not ready (attempt %d): %v", attempt, err)
		if op.alive() {
			return nil, err
		}
		if err := sleep(ctx, time.Second); err != nil {
			return nil, err
		}
	}
	return nil, err
}

func (b *bencher) stopOperator() {
	if b.op != nil {
		b.op.stop(syscall.SIGTERM)
		b.op = nil
	}
}

// burst creates n claims at once, waits for all to be Ready, then runs the ceiling for n more.
func (b *bencher) burst(ctx context.Context, n int) error {
	series := fmt.Sprintf("burst%d", n)
	b.logf("burst of %d claims", n)
	w := b.begin(ctx, b.op.pid())
	refs, err := createClaims(ctx, b.k, series, 0, n, b.o.perNS, b.o.createParallel, nil)
	if err != nil {
		return err
	}
	b.claims += len(refs)
	missing := b.track.waitAll(ctx, refs, b.o.timeout)
	l := w.end(ctx, b.op.pid())
	lat, last := b.track.latencies(refs)
	row := burstRow{n: n, ready: len(lat), load: l, lat: lat, span: last.Sub(refs[0].created)}
	if missing > 0 {
		b.logf("%d of %d claims not Ready after %s", missing, n, b.o.timeout)
	}
	b.logf("burst %d: %d Ready in %s (%.1f/s), p50 %s p99 %s; manager CPU %.1fs, peak RSS %d MiB; %d operator requests, %.2f status writes/claim (load %s)",
		n, len(lat), row.span.Round(time.Millisecond), row.throughput(), percentile(lat, 50).Round(time.Millisecond),
		percentile(lat, 99).Round(time.Millisecond), l.cpu.Seconds(), l.peakKiB/1024, l.requests.total("operator"), row.statusWritesPerClaim(), loadAvg())
	if l.queue != nil {
		b.logf("burst %d: %s", n, l.queue.String(n, row.span))
	}

	if b.o.ceiling {
		b.stopOperator()
		if err := b.ceilings(ctx, n, &row); err != nil {
			return err
		}
		if err := b.startOperator(ctx); err != nil {
			return err
		}
	}
	b.rows.bursts = append(b.rows.bursts, row)
	return nil
}

// ceilingWorkers is the ceilings' concurrency (--ceiling-workers).
func (b *bencher) ceilingWorkers() int {
	return max(b.o.ceilingWorkers, 1)
}

// ceilings runs ceiling (a) and then ceiling (b) for n claims each, with the manager stopped, each in
// its own measured window, and then finishes ceiling (a)'s claims outside the windows so that the
// manager adopts them as Ready.
func (b *bencher) ceilings(ctx context.Context, n int, row *burstRow) error {
	workers := b.ceilingWorkers()
	w := b.begin(ctx, 0)
	refs, res, err := ceilingObjects(ctx, b.k, b.raw, workers, fmt.Sprintf("ceil%d", n), 0, n, b.o.perNS, b.o.createParallel)
	b.claims += len(refs)
	if err != nil {
		return fmt.Errorf("ceiling (a): %w", err)
	}
	withQuota := b.class.Spec.ResourceQuota != nil
	if missing := b.usable.waitUsable(ctx, res.made, withQuota, b.o.timeout); missing > 0 {
		b.logf("%d of %d namespaces not usable after %s", missing, len(res.made), b.o.timeout)
	}
	l := w.end(ctx, 0)
	lat, last := poolLatencies(refs, res)
	row.ceilingA = &burstRow{n: n, ready: len(lat), load: l, lat: lat, span: last.Sub(refs[0].created)}
	ulat, ulast := b.usable.usableLatencies(refs, res, withQuota)
	row.usable = &burstRow{n: n, ready: len(ulat), load: l, lat: ulat, span: ulast.Sub(refs[0].created)}
	b.logf("ceiling (a), plain writes (nsclaim's objects and 2 rules reviews), %d: done in %s (%.1f/s), p50 %s; %d requests as the operator (load %s)",
		n, row.ceilingA.span.Round(time.Millisecond), row.ceilingA.throughput(), percentile(lat, 50).Round(time.Millisecond), l.requests.total("operator"), loadAvg())
	b.logf("usable ceiling, the same until kube-controller-manager made the namespace usable, %d: done in %s (%.1f/s), p50 %s; nsclaim / usable ceiling %.2fx",
		n, row.usable.span.Round(time.Millisecond), row.usable.throughput(), percentile(ulat, 50).Round(time.Millisecond), row.throughput()/row.usable.throughput())

	w = b.begin(ctx, 0)
	blat, first, blast, err := ceilingNsplease(ctx, b.k, b.raw, workers, fmt.Sprintf("b%d", n), 0, n, b.o.createParallel)
	if err != nil {
		return fmt.Errorf("ceiling (b): %w", err)
	}
	l = w.end(ctx, 0)
	row.ceilingB = &burstRow{n: n, ready: len(blat), load: l, lat: blat, span: blast.Sub(first)}
	b.logf("ceiling (b), nsplease's ten writes, %d: done in %s (%.1f/s), p50 %s; %d requests as the operator",
		n, row.ceilingB.span.Round(time.Millisecond), row.ceilingB.throughput(), percentile(blat, 50).Round(time.Millisecond), l.requests.total("operator"))

	b.logf("finishing ceiling (a)'s claims (finalizer, Ready status; not measured)")
	return finishAll(ctx, b.raw, workers, refs, res)
}

// idlePhase counts the operator's requests while nothing changes.
func (b *bencher) idlePhase(ctx context.Context) error {
	b.logf("idle for %s with %d claims", b.o.idle, b.claims)
	w := b.begin(ctx, b.op.pid())
	if err := sleep(ctx, b.o.idle); err != nil {
		return err
	}
	l := w.end(ctx, b.op.pid())
	b.rows.idle = &idleRow{claims: b.claims, load: l}
	return nil
}

// fill grows the cluster to size claims with ceiling (a)'s writes, the finalizer and a Ready status
// (no self-test, no Event) while the operator is stopped, then starts the operator and waits until it has adopted them. Nothing of it is
// measured.
func (b *bencher) fill(ctx context.Context, size int) error {
	if b.claims >= size {
		return nil
	}
	b.logf("filling the cluster from %d to %d claims (not measured)", b.claims, size)
	b.stopOperator()
	from := b.filled(ctx)
	refs, res, err := ceilingObjects(ctx, b.k, b.raw, b.o.fillWorkers, "fill", from, from+size-b.claims, b.o.perNS, b.o.createParallel)
	b.claims += len(refs)
	if err != nil {
		return fmt.Errorf("fill: %w", err)
	}
	if err := finishAll(ctx, b.raw, b.o.fillWorkers, refs, res); err != nil {
		return fmt.Errorf("fill: %w", err)
	}
	return b.startOperator(ctx)
}

// filled is the number of fill claims made so far (they are numbered from 0).
func (b *bencher) filled(ctx context.Context) int {
	list := &tenancyv1alpha1.NamespaceClaimList{}
	if err := b.k.c.List(ctx, list); err != nil {
		return 0
	}
	n := 0
	for _, c := range list.Items {
		if strings.HasPrefix(c.Name, "fill-") {
			n++
		}
	}
	return n
}

// restart stops the manager with size claims in the cluster, starts it again and measures the time to
// catch up, the writes and the tokens issued; with scale it also measures memory and one more claim.
func (b *bencher) restart(ctx context.Context, size int, scale bool) error {
	b.logf("restart with %d claims", b.claims)
	b.stopOperator()
	w := b.begin(ctx, 0)
	op, err := b.startReady(ctx)
	if err != nil {
		return err
	}
	at, err := op.waitCaughtUp(ctx, b.claims, b.o.timeout)
	if err != nil {
		return err
	}
	l := w.end(ctx, op.pid())
	row := restartRow{claims: b.claims, caughtUp: at.Sub(op.started), load: l}
	b.logf("restart %d: caught up in %s, %d writes, %d tokens, %d uncached reads, CPU %.1fs, RSS %d MiB",
		b.claims, row.caughtUp.Round(time.Millisecond), l.operatorWrites(), l.tokens(), l.uncachedReads(), l.cpu.Seconds(), l.rssKiB/1024)
	if slices.Contains(b.o.restarts, size) {
		b.rows.restarts = append(b.rows.restarts, row)
	}
	if !scale {
		return nil
	}
	sr := scaleRow{claims: b.claims, rssKiB: l.rssKiB, peakKiB: l.peakKiB, catchUpCPU: l.cpu}
	m0, ok0 := op.readMemClasses()
	if ok0 {
		b.logf("scale %d: caught up: %s", b.claims, m0)
	}
	p0, _ := readProc(op.pid())
	_ = sleep(ctx, 30*time.Second)
	p1, _ := readProc(op.pid())
	if m1, ok := op.readMemClasses(); ok && ok0 {
		b.logf("scale %d: 30s idle: %s; allocated %.1f MiB in the 30s", b.claims, m1, m1.allocs-m0.allocs)
	}
	sr.idleCPUPerMin = time.Duration(float64(p1.cpu-p0.cpu) * float64(time.Minute) / float64(p1.readTime.Sub(p0.readTime)))
	refs, err := createClaims(ctx, b.k, "one", b.claims, b.claims+1, 1, 1, nil)
	if err != nil {
		return err
	}
	b.claims++
	if b.track.waitAll(ctx, refs, b.o.timeout) == 0 {
		lat, _ := b.track.latencies(refs)
		sr.oneMore = lat[0]
	}
	p2, _ := readProc(op.pid())
	sr.rssKiB = p2.rssKiB
	b.logf("scale %d: RSS %d MiB, idle CPU %s/min, one more claim Ready in %s", sr.claims, sr.rssKiB/1024, sr.idleCPUPerMin.Round(time.Millisecond), sr.oneMore.Round(time.Millisecond))
	if m, ok := op.readMemClasses(); ok {
		b.logf("scale %d: scale point: %s", sr.claims, m)
	}
	if path, heap, sys := op.heapProfile(filepath.Dir(b.o.out), sr.claims); heap > 0 {
		b.logf("scale %d: Go heap in use %.0f MiB, Go runtime total %.0f MiB; heap profile %q", sr.claims, heap, sys, path)
		if m, ok := op.readMemClasses(); ok {
			b.logf("scale %d: after the profile's collection: %s", sr.claims, m)
		}
	}
	b.watchMemory(ctx, op, sr.claims)
	b.rows.scales = append(b.rows.scales, sr)
	return nil
}

// loadAvg is the machine's load average (1, 5, 15 minutes), printed next to every figure: the machine
// is shared.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

// machine describes where the bench ran.
func machine() string {
	mem := ""
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, "MemTotal:") {
				var kb int64
				_, _ = fmt.Sscanf(strings.TrimSpace(strings.TrimPrefix(l, "MemTotal:")), "%d", &kb)
				mem = fmt.Sprintf("%.1f GiB", float64(kb)/1024/1024)
			}
		}
	}
	model := ""
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, "model name") {
				_, model, _ = strings.Cut(l, ":")
				model = strings.TrimSpace(model)
				break
			}
		}
	}
	load := ""
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		load = strings.Join(strings.Fields(string(b))[:3], " ")
	}
	return fmt.Sprintf("%s; %d CPUs (%s), %s RAM, %s; load average at the end %s",
		time.Now().UTC().Format("2006-01-02 15:04 UTC"), runtime.NumCPU(), model, mem, runtime.Version(), load)
}
