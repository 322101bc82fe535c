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
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
	"github.com/nsclaim/nsclaim-operator/internal/controller/fleet"
)

// The fleet scenario (--fleet, hack/bench-fleet.sh; issue 46) runs against a hub and three members
// started by hack/lib/fleet.sh, none registered yet. It measures
//
//  1. the hub's RSS per member cluster: the hub idle with no member, then for each member in turn its
//     RSS once the member is registered and once --fleet-claims claims are placed there and Ready on
//     the hub (LeastAllocated puts every new claim on the newest member, the one with fewest);
//  2. a burst of --fleet-burst claims on the hub across the three members (create call -> Ready on the
//     hub), against the usable ceiling of a raw client making the same namespaces across the same three
//     members at once: on each member, as that member's operator ServiceAccount, exactly the objects of
//     the single-cluster ceiling (a), --ceiling-workers at a time per member, until
//     kube-controller-manager made each namespace usable (usable.go). The raw client has no claim to
//     create, so its clock starts when it starts, for every namespace.

// fleetOptions are the fleet scenario's flags.
type fleetOptions struct {
	dir    string
	claims int
	burst  int
	quiet  time.Duration
}

func fleetFlags(fs *flag.FlagSet, o *benchOptions) {
	fs.BoolVar(&o.fleet, "fleet", false, "Run the fleet scenario only (hack/bench-fleet.sh starts the hub and three members):"+
		" the hub's RSS per member, and a burst across the members against a raw client's usable ceiling.")
	fs.StringVar(&o.fleetOpts.dir, "fleet-dir", envOr("FLEET_DIR", "tmp/fleet-bench"), "State directory of the fleet (hub, m1, m2, m3 below it; FLEET_DIR).")
	fs.IntVar(&o.fleetOpts.claims, "fleet-claims", 100, "Claims placed on each member before the hub's RSS is read (issue 46: 1,000).")
	fs.IntVar(&o.fleetOpts.burst, "fleet-burst", 500, "Claims of the burst across the members, and namespaces of the raw client's ceiling.")
	fs.DurationVar(&o.fleetOpts.quiet, "fleet-quiet", 3*time.Minute, "Window over which the hub's requests are counted while every claim is Ready and nothing changes (0: not measured).")
}

var fleetMembers = []string{"m1", "m2", "m3"}

type fleetMember struct {
	name   string
	admin  *clients
	raw    *rawClient
	usable *usableTracker
}

type fleetBench struct {
	o       *benchOptions
	dir     string
	hub     *clients
	hubOp   *clients
	hubPID  int
	track   *readyTracker
	members []*fleetMember
	withQ   bool
	claims  int
}

// hubController is the controller-runtime name of the hub's claim controller.
const hubController = "fleet"

// hubMetrics scrapes the hub's metrics endpoint: hack/bench-fleet.sh serves it over plain HTTP on
// FLEET_PORT_BASE+44 (the hub is cluster 0 of hack/lib/fleet.sh).
func (f *fleetBench) hubMetrics() ([]sample, error) {
	base := 12000
	if v, err := strconv.Atoi(os.Getenv("FLEET_PORT_BASE")); err == nil {
		base = v
	}
	return (&replica{ports: replicaPorts{metrics: base + 44}}).metrics()
}

func (f *fleetBench) logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s bench fleet: %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}

func runFleet(ctx context.Context, o *benchOptions) error {
	f := &fleetBench{o: o, dir: o.fleetOpts.dir}
	var err error
	if f.hub, err = newClients(filepath.Join(f.dir, fleetHub, "kubeconfig")); err != nil {
		return err
	}
	if f.hubOp, err = newClients(filepath.Join(f.dir, fleetHub, "operator.kubeconfig")); err != nil {
		return err
	}
	pid, err := os.ReadFile(filepath.Join(f.dir, fleetHub, "pids", "operator.pid"))
	if err != nil {
		return fmt.Errorf("the hub's PID (start the fleet with hack/bench-fleet.sh): %w", err)
	}
	if f.hubPID, err = strconv.Atoi(strings.TrimSpace(string(pid))); err != nil {
		return err
	}
	hubClass := benchClass()
	hubClass.Spec.Placement = &tenancyv1alpha1.PlacementSpec{Strategy: tenancyv1alpha1.PlacementLeastAllocated}
	if err := f.hub.c.Create(ctx, hubClass); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating the hub's class: %w", err)
	}
	for _, m := range fleetMembers {
		fm := &fleetMember{name: m}
		if fm.admin, err = newClients(filepath.Join(f.dir, m, "kubeconfig")); err != nil {
			return err
		}
		class, err := ensureClass(ctx, fm.admin)
		if err != nil {
			return err
		}
		f.withQ = class.Spec.ResourceQuota != nil
		if fm.raw, err = newRawClientAt(filepath.Join(f.dir, m, "operator.kubeconfig"), class); err != nil {
			return err
		}
		fm.raw.unstored = true
		if fm.usable, err = startUsableTracker(ctx, fm.admin); err != nil {
			return err
		}
		f.members = append(f.members, fm)
	}
	if f.track, err = startTracker(ctx, f.hub); err != nil {
		return err
	}
	if err := f.memory(ctx); err != nil {
		return err
	}
	if err := f.quietRequests(ctx); err != nil {
		return err
	}
	return f.burst(ctx)
}

// quietRequests counts the hub's requests, by API server, over --fleet-quiet while every claim is Ready
// and nothing changes (client-go's rest_client_requests_total of the hub process): what a Ready claim
// costs the hub and its members between its events. The window is longer than the hub's look at a
// Ready claim (2 minutes on a watched member).
func (f *fleetBench) quietRequests(ctx context.Context) error {
	if f.o.fleetOpts.quiet <= 0 {
		return nil
	}
	hosts := map[string]string{strings.TrimPrefix(f.hub.cfg.Host, "https://"): fleetHub}
	for _, m := range f.members {
		hosts[strings.TrimPrefix(m.admin.cfg.Host, "https://")] = m.name
	}
	count := func() (map[string]float64, error) {
		samples, err := f.hubMetrics()
		if err != nil {
			return nil, err
		}
		out := map[string]float64{}
		for _, s := range samples {
			if s.name == "rest_client_requests_total" {
				name := hosts[s.labels["host"]]
				if name == "" {
					name = s.labels["host"]
				}
				out[name] += s.value
			}
		}
		return out, nil
	}
	before, err := count()
	if err != nil {
		return fmt.Errorf("reading the hub's metrics: %w", err)
	}
	if err := sleep(ctx, f.o.fleetOpts.quiet); err != nil {
		return err
	}
	after, err := count()
	if err != nil {
		return fmt.Errorf("reading the hub's metrics: %w", err)
	}
	var parts []string
	var total float64
	known := append([]string{fleetHub}, fleetMembers...)
	for _, name := range known {
		d := after[name] - before[name]
		total += d
		parts = append(parts, fmt.Sprintf("%s %.0f", name, d))
	}
	// Any other server the hub spoke to (none is expected) is counted too, not dropped.
	var other float64
	for name, v := range after {
		if !slices.Contains(known, name) {
			other += v - before[name]
		}
	}
	if other > 0 {
		total += other
		parts = append(parts, fmt.Sprintf("other %.0f", other))
	}
	perMin := total / f.o.fleetOpts.quiet.Minutes()
	f.logf("RESULT hub requests over %s with %d claims Ready and nothing changing: %s (%.1f a minute, %.3f per Ready claim a minute; load %s)",
		f.o.fleetOpts.quiet, f.claims, strings.Join(parts, ", "), perMin, perMin/float64(max(f.claims, 1)), loadAvg())
	return nil
}

// rss reads the hub's RSS after the settle pause.
func (f *fleetBench) rss(ctx context.Context, what string) (int64, error) {
	if err := sleep(ctx, f.o.settle); err != nil {
		return 0, err
	}
	p, err := readProc(f.hubPID)
	if err != nil {
		return 0, fmt.Errorf("reading the hub's /proc: %w", err)
	}
	f.logf("hub RSS %s: %.1f MiB (%d claims on the hub; load %s)", what, float64(p.rssKiB)/1024, f.claims, loadAvg())
	return p.rssKiB, nil
}

// memory registers the members one at a time and reads the hub's RSS before and after each member's
// claims.
func (f *fleetBench) memory(ctx context.Context) error {
	base, err := f.rss(ctx, "with no member")
	if err != nil {
		return err
	}
	last := base
	for i, m := range f.members {
		if err := f.register(ctx, m.name); err != nil {
			return err
		}
		reg, err := f.rss(ctx, "after registering "+m.name)
		if err != nil {
			return err
		}
		n := f.o.fleetOpts.claims
		refs, err := createClaims(ctx, f.hub, "fmem-"+m.name, 0, n, f.o.perNS, f.o.createParallel, nil)
		if err != nil {
			return err
		}
		f.claims += len(refs)
		if missing := f.track.waitAll(ctx, refs, f.o.timeout); missing > 0 {
			return fmt.Errorf("%d of %d claims not Ready on the hub after %s", missing, n, f.o.timeout)
		}
		if counts, err := f.placedOn(ctx, refs); err != nil || counts[m.name] != n {
			f.logf("claims of %s placed %v (want all %d there)", m.name, counts, n)
		}
		after, err := f.rss(ctx, fmt.Sprintf("with %s's %d claims Ready", m.name, n))
		if err != nil {
			return err
		}
		f.logf("member %d (%s): +%.1f MiB registering it, +%.1f MiB for its %d claims, +%.1f MiB in all",
			i+1, m.name, float64(reg-last)/1024, float64(after-reg)/1024, n, float64(after-last)/1024)
		last = after
	}
	f.logf("RESULT hub RSS: %.1f MiB with no member, %.1f MiB with %d members of %d claims each: %.1f MiB per member cluster (issue 46: at most 15 MiB, 1,000 claims each)",
		float64(base)/1024, float64(last)/1024, len(f.members), f.o.fleetOpts.claims, float64(last-base)/1024/float64(len(f.members)))
	return nil
}

// register stores member m's kubeconfig of the hub's identity there as a member Secret on the hub; the
// RSS read after it waits the settle pause, and the hub checks a member's readiness every 3 s.
func (f *fleetBench) register(ctx context.Context, m string) error {
	kc, err := os.ReadFile(filepath.Join(f.dir, m, "hub-identity.kubeconfig"))
	if err != nil {
		return err
	}
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: m, Namespace: operatorNamespace, Labels: map[string]string{fleet.MemberLabel: "true"}},
		Data: map[string][]byte{fleet.KubeconfigKey: kc}}
	if err := f.hub.c.Create(ctx, s); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("registering %s: %w", m, err)
	}
	return nil
}

// placedOn counts the claims of refs by their status.cluster on the hub.
func (f *fleetBench) placedOn(ctx context.Context, refs []claimRef) (map[string]int, error) {
	counts := map[string]int{}
	for _, r := range refs {
		c := &tenancyv1alpha1.NamespaceClaim{}
		if err := f.hub.c.Get(ctx, clientKey(r.namespace, r.name), c); err != nil {
			return counts, err
		}
		counts[c.Status.Cluster]++
	}
	return counts, nil
}

// burst creates --fleet-burst claims on the hub at once and waits for them to be Ready there, then runs
// the raw client's usable ceiling for the same number of namespaces across the members.
func (f *fleetBench) burst(ctx context.Context) error {
	n := f.o.fleetOpts.burst
	if n == 0 {
		return nil
	}
	f.logf("burst of %d claims on the hub (load %s)", n, loadAvg())
	p0, _ := readProc(f.hubPID)
	m0, _ := f.hubMetrics()
	c0 := fleetCPU(f.dir)
	refs, err := createClaims(ctx, f.hub, "fburst", 0, n, f.o.perNS, f.o.createParallel, nil)
	if err != nil {
		return err
	}
	f.claims += len(refs)
	missing := f.track.waitAll(ctx, refs, f.o.timeout)
	lat, last := f.track.latencies(refs)
	p1, _ := readProc(f.hubPID)
	m1, _ := f.hubMetrics()
	c1 := fleetCPU(f.dir)
	row := burstRow{n: n, ready: len(lat), lat: lat, span: last.Sub(refs[0].created)}
	counts, _ := f.placedOn(ctx, refs)
	f.logf("burst %d: %d Ready on the hub in %s (%.1f/s), p50 %s p99 %s, %d not Ready; placed %v; hub CPU %.1fs, RSS %.1f MiB (load %s)",
		n, len(lat), row.span.Round(time.Millisecond), row.throughput(), percentile(lat, 50).Round(time.Millisecond),
		percentile(lat, 99).Round(time.Millisecond), missing, counts, (p1.cpu - p0.cpu).Seconds(), float64(p1.rssKiB)/1024, loadAvg())
	if m0 != nil && m1 != nil {
		f.logf("burst %d: the hub's %s", n, controllerStatsBetween(hubController, m0, m1).String(n, row.span))
	}
	f.logf("burst %d: %s", n, cpuLine(c0, c1, n))

	c0 = fleetCPU(f.dir)
	ceil, err := f.ceiling(ctx, n, false)
	if err != nil {
		return err
	}
	f.logf("usable ceiling %d: %s (the bench's raw clients are in the machine's figure only)", n, cpuLine(c0, fleetCPU(f.dir), n))
	f.logf("usable ceiling, a raw client making %d namespaces across %d members at once (%d workers per member): %d usable in %s (%.1f/s), p50 %s (load %s)",
		n, len(f.members), f.o.ceilingWorkers, ceil.ready, ceil.span.Round(time.Millisecond), ceil.throughput(), percentile(ceil.lat, 50).Round(time.Millisecond), loadAvg())
	c0 = fleetCPU(f.dir)
	withHub, err := f.ceiling(ctx, n, true)
	if err != nil {
		return err
	}
	f.logf("usable ceiling with the hub's least work %d: %s", n, cpuLine(c0, fleetCPU(f.dir), n))
	f.logf("usable ceiling with the hub's least work (the request stored on the hub, then the credentials Secret and the request's answer written there): %d usable in %s (%.1f/s), p50 %s (load %s)",
		withHub.ready, withHub.span.Round(time.Millisecond), withHub.throughput(), percentile(withHub.lat, 50).Round(time.Millisecond), loadAvg())
	f.logf("RESULT burst %d across %d members: nsclaim %.1f/s, usable ceiling %.1f/s: %.2fx (issue 46: at least 0.9x); with the hub's least work %.1f/s: %.2fx",
		n, len(f.members), row.throughput(), ceil.throughput(), row.throughput()/ceil.throughput(), withHub.throughput(), row.throughput()/withHub.throughput())
	return nil
}

// ceiling makes n namespaces, namespace i on member i mod 3, as each member's operator ServiceAccount,
// all members at once, and waits until each is usable. With hub, each namespace also costs the hub
// what any hub must do for it (hubLeastWork).
func (f *fleetBench) ceiling(ctx context.Context, n int, hub bool) (burstRow, error) {
	run := strconv.FormatInt(time.Now().UnixNano(), 36)
	requester := "fceil-" + run
	if hub {
		if err := ensureNamespaces(ctx, f.hub, []string{requester}); err != nil {
			return burstRow{}, err
		}
	}
	start := time.Now()
	type result struct {
		refs []claimRef
		res  poolResult
	}
	results := make([]result, len(f.members))
	var wg sync.WaitGroup
	for mi, m := range f.members {
		if err := ensureNamespaces(ctx, m.admin, []string{requester}); err != nil {
			return burstRow{}, err
		}
		in := make(chan claimRef, n)
		for i := mi; i < n; i += len(f.members) {
			name := fmt.Sprintf("fceil-%05d", i)
			c := &tenancyv1alpha1.NamespaceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: requester, Name: name,
				UID: types.UID(fmt.Sprintf("fleet-ceiling-%s-%05d", run, i))}, Spec: tenancyv1alpha1.NamespaceClaimSpec{ClassName: benchClassName}}
			ref := claimRef{namespace: requester, name: name, created: start, obj: c}
			results[mi].refs = append(results[mi].refs, ref)
			in <- ref
		}
		close(in)
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[mi].res = runPool(ctx, f.o.ceilingWorkers, in, func(ctx context.Context, ref claimRef) (provisioned, error) {
				if !hub {
					return m.raw.objects(ctx, ref.obj)
				}
				return f.hubLeastWork(ctx, ref, func() (provisioned, error) { return m.raw.objects(ctx, ref.obj) })
			})
		}()
	}
	wg.Wait()
	row := burstRow{n: n}
	var last time.Time
	for mi, m := range f.members {
		r := results[mi]
		if r.res.first != nil {
			return row, fmt.Errorf("ceiling on %s: %d failed, first: %w", m.name, r.res.errors, r.res.first)
		}
		if missing := m.usable.waitUsable(ctx, r.res.made, f.withQ, f.o.timeout); missing > 0 {
			f.logf("%d namespaces on %s not usable after %s", missing, m.name, f.o.timeout)
		}
		lat, l := m.usable.usableLatencies(r.refs, r.res, f.withQ)
		row.lat = append(row.lat, lat...)
		row.ready += len(lat)
		if l.After(last) {
			last = l
		}
	}
	slices.Sort(row.lat)
	row.span = last.Sub(start)
	return row, nil
}

// hubLeastWork wraps a member's writes for one namespace (member) in what any hub must do for a
// request it places: store the request on the hub (as the user, the admin here, creates a claim there;
// a ConfigMap stands in for it, so the hub's operator does not act on it), then, once the member made
// the namespace, hand the credentials back on the hub (a Secret, as the hub's operator identity) and
// write the request's answer (one update of the stand-in, as the hub's status write).
func (f *fleetBench) hubLeastWork(ctx context.Context, ref claimRef, member func() (provisioned, error)) (provisioned, error) {
	req := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ref.namespace, Name: ref.name}, Data: map[string]string{"class": benchClassName}}
	if err := f.hub.c.Create(ctx, req); err != nil {
		return provisioned{}, fmt.Errorf("storing the request %s on the hub: %w", ref.key(), err)
	}
	p, err := member()
	if err != nil {
		return p, err
	}
	// Labelled and typed as the hub's own copies are: the hub's admission fence admits no other Secret
	// of the operator's.
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ref.namespace, Name: ref.name + "-kubeconfig",
		Labels: map[string]string{tenancyv1alpha1.ManagedByLabel: tenancyv1alpha1.ManagedByValue, fleet.HubClaimUIDLabel: string(ref.obj.UID)}},
		Type: corev1.SecretTypeOpaque, Data: map[string][]byte{fleet.KubeconfigKey: []byte(p.token.Value)}}
	if err := f.hubOp.c.Create(ctx, sec); err != nil {
		return p, fmt.Errorf("handing the credentials of %s back on the hub: %w", ref.key(), err)
	}
	req.Data["namespace"], req.Data["phase"] = p.namespace, string(tenancyv1alpha1.ClaimPhaseActive)
	if err := f.hub.c.Update(ctx, req); err != nil {
		return p, fmt.Errorf("answering the request %s on the hub: %w", ref.key(), err)
	}
	return p, nil
}
