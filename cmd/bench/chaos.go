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
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
	"github.com/nsclaim/nsclaim-operator/internal/provision"
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
	fs.StringVar(&o.out, "out", "tmp/bench/results-chaos.md", "Markdown file the summary is written to.")
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

type chaos struct {
	e     *env
	o     *chaosOptions
	k     *clients
	track *readyTracker
	sup   *supervisor
}

func runChaos(ctx context.Context, e *env, o *chaosOptions) error {
	k, err := newClients(filepath.Join(e.state, "kubeconfig"))
	if err != nil {
		return err
	}
	if _, err := ensureClass(ctx, k); err != nil {
		return err
	}
	c := &chaos{e: e, o: o, k: k}
	if c.track, err = startTracker(ctx, k); err != nil {
		return err
	}
	c.sup = &supervisor{e: e}
	if err := c.sup.start(ctx); err != nil {
		return err
	}
	defer c.sup.stop()

	var results []scenarioResult
	for _, name := range strings.Split(o.scenarios, ",") {
		var res scenarioResult
		switch strings.TrimSpace(name) {
		case "leader":
			res = c.leaderScenario(ctx)
		case "apiserver":
			res = c.restartScenario(ctx, "kube-apiserver")
		case "etcd":
			res = c.restartScenario(ctx, "etcd")
		case "children":
			res = c.childrenScenario(ctx)
		case "":
			continue
		default:
			return fmt.Errorf("unknown scenario %q", name)
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		res.failures = append(res.failures, c.invariants(ctx)...)
		logf("%s: %d/%d Ready in %s; %d invariant failures", res.name, res.ready, res.claims, res.span.Round(time.Millisecond), len(res.failures))
		for _, f := range res.failures {
			logf("  FAIL %s", f)
		}
		results = append(results, res)
	}
	md := chaosMarkdown(results, c.sup.restarts)
	fmt.Println()
	fmt.Println(md)
	if o.out != "" {
		_ = os.WriteFile(o.out, []byte(md), 0o644)
	}
	for _, r := range results {
		if len(r.failures) > 0 {
			return fmt.Errorf("invariants broken; see above")
		}
	}
	return nil
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
			o.SetName(provision.TenantRoleBindingName)
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
			o.SetName(provision.ResourceQuotaName)
		}
	}
	return o
}

// failures collects invariant failures, from any goroutine, up to a limit.
type failures struct {
	mu   sync.Mutex
	list []string
	more int
}

func (f *failures) add(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.list) < 30 {
		f.list = append(f.list, fmt.Sprintf(format, args...))
	} else {
		f.more++
	}
}

func (f *failures) result() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.more > 0 {
		return append(f.list, fmt.Sprintf("... and %d more invariant failures", f.more))
	}
	return f.list
}

// managedLabels selects the objects that carry nsclaim's managed-by label.
var managedLabels = client.MatchingLabels{tenancyv1alpha1.ManagedByLabel: tenancyv1alpha1.ManagedByValue}

// invariants checks the whole cluster: every claim is Ready and holds exactly one namespace that
// carries its marks; every nsclaim namespace belongs to a claim; each namespace holds exactly the
// objects the class asks for (no duplicates, none missing); each claim's Secret holds a token that the
// API server authenticates as that namespace's ServiceAccount.
func (c *chaos) invariants(ctx context.Context) []string {
	f := &failures{}
	claims, nsClaim, err := c.checkClaims(ctx, f)
	if err != nil {
		return append(f.result(), err.Error())
	}
	saUID := c.checkChildren(ctx, f, nsClaim)
	c.checkCredentials(ctx, f, claims, saUID)
	return f.result()
}

// checkClaims checks that every claim is Ready with exactly one namespace, the one in its status, and
// that every nsclaim namespace belongs to a claim. It returns the claims and the claim of each
// claimed namespace.
func (c *chaos) checkClaims(ctx context.Context, f *failures) (*tenancyv1alpha1.NamespaceClaimList, map[string]*tenancyv1alpha1.NamespaceClaim, error) {
	claims := &tenancyv1alpha1.NamespaceClaimList{}
	nss := &corev1.NamespaceList{}
	if err := c.k.c.List(ctx, claims); err != nil {
		return nil, nil, err
	}
	if err := c.k.c.List(ctx, nss, managedLabels); err != nil {
		return nil, nil, err
	}
	byUID := map[string]*tenancyv1alpha1.NamespaceClaim{}
	for i := range claims.Items {
		byUID[string(claims.Items[i].UID)] = &claims.Items[i]
	}
	nsOf := map[string][]string{}
	nsClaim := map[string]*tenancyv1alpha1.NamespaceClaim{}
	for _, ns := range nss.Items {
		uid := ns.Labels[tenancyv1alpha1.ClaimUIDLabel]
		claim, ok := byUID[uid]
		if !ok {
			f.add("namespace %s (claim-uid %s) has no claim", ns.Name, uid)
			continue
		}
		nsOf[uid] = append(nsOf[uid], ns.Name)
		nsClaim[ns.Name] = claim
		if !ns.DeletionTimestamp.IsZero() {
			f.add("namespace %s of claim %s/%s is terminating", ns.Name, claim.Namespace, claim.Name)
		}
	}
	for i := range claims.Items {
		cl := &claims.Items[i]
		key := cl.Namespace + "/" + cl.Name
		if !meta.IsStatusConditionTrue(cl.Status.Conditions, tenancyv1alpha1.ReadyCondition) {
			r := meta.FindStatusCondition(cl.Status.Conditions, tenancyv1alpha1.ReadyCondition)
			why := "no Ready condition"
			if r != nil {
				why = r.Reason + ": " + r.Message
			}
			f.add("claim %s not Ready (%s)", key, why)
		}
		switch got := nsOf[string(cl.UID)]; {
		case len(got) == 0:
			f.add("claim %s has no namespace", key)
		case len(got) > 1:
			f.add("claim %s has %d namespaces: %v", key, len(got), got)
		case got[0] != cl.Status.Namespace:
			f.add("claim %s: status.namespace %q, but its namespace is %s", key, cl.Status.Namespace, got[0])
		}
	}
	return claims, nsClaim, nil
}

// checkChildren lists the children cluster-wide by the managed-by label and checks that each claimed
// namespace holds exactly the expected names, and that no child or tenant ServiceAccount lives
// elsewhere. It returns the tenant ServiceAccount's UID per namespace.
func (c *chaos) checkChildren(ctx context.Context, f *failures, nsClaim map[string]*tenancyv1alpha1.NamespaceClaim) map[string]string {
	want := map[string][]string{
		kindServiceAccount: {tenancyv1alpha1.TenantServiceAccountName},
		"Role":             {provision.ReleaseRoleName},
		kindRoleBinding:    {provision.ReleaseRoleName, provision.TenantRoleBindingName},
		kindResourceQuota:  {provision.ResourceQuotaName},
		"LimitRange":       {provision.LimitRangeName},
	}
	lists := map[string]client.ObjectList{
		kindServiceAccount: &corev1.ServiceAccountList{}, "Role": &rbacv1.RoleList{}, kindRoleBinding: &rbacv1.RoleBindingList{},
		kindResourceQuota: &corev1.ResourceQuotaList{}, "LimitRange": &corev1.LimitRangeList{},
	}
	saUID := map[string]string{}
	for kind, list := range lists {
		if err := c.k.c.List(ctx, list, managedLabels); err != nil {
			f.add("listing %s: %v", kind, err)
			continue
		}
		got := map[string][]string{}
		items, _ := meta.ExtractList(list)
		for _, it := range items {
			o := it.(client.Object)
			got[o.GetNamespace()] = append(got[o.GetNamespace()], o.GetName())
			if kind == kindServiceAccount {
				saUID[o.GetNamespace()] = string(o.GetUID())
			}
		}
		for ns, names := range got {
			if _, ok := nsClaim[ns]; !ok {
				f.add("%s %v in namespace %s, which belongs to no claim", kind, names, ns)
			}
		}
		for ns := range nsClaim {
			names := got[ns]
			sort.Strings(names)
			if !slices.Equal(names, want[kind]) {
				f.add("namespace %s: %s %v, want %v", ns, kind, names, want[kind])
			}
		}
	}
	// No ServiceAccount named nsclaim-tenant outside the claims' namespaces, labelled or not.
	sas := &corev1.ServiceAccountList{}
	if err := c.k.c.List(ctx, sas, client.MatchingFields{"metadata.name": tenancyv1alpha1.TenantServiceAccountName}); err == nil {
		if len(sas.Items) != len(nsClaim) {
			f.add("%d ServiceAccounts named %s for %d claimed namespaces", len(sas.Items), tenancyv1alpha1.TenantServiceAccountName, len(nsClaim))
		}
	}
	return saUID
}

// checkCredentials checks one Secret per claim, with the claim's marks, whose token authenticates as
// the tenant ServiceAccount of the claim's namespace (TokenReview; the token is never printed).
func (c *chaos) checkCredentials(ctx context.Context, f *failures, claims *tenancyv1alpha1.NamespaceClaimList, saUID map[string]string) {
	secrets := &corev1.SecretList{}
	if err := c.k.c.List(ctx, secrets, managedLabels); err != nil {
		f.add("listing Secrets: %v", err)
		return
	}
	secretOf := map[string][]*corev1.Secret{}
	for i := range secrets.Items {
		s := &secrets.Items[i]
		secretOf[s.Labels[tenancyv1alpha1.ClaimUIDLabel]] = append(secretOf[s.Labels[tenancyv1alpha1.ClaimUIDLabel]], s)
	}
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	for i := range claims.Items {
		cl := &claims.Items[i]
		key := cl.Namespace + "/" + cl.Name
		ss := secretOf[string(cl.UID)]
		if len(ss) != 1 {
			f.add("claim %s has %d credentials Secrets", key, len(ss))
			continue
		}
		s := ss[0]
		if s.Namespace != cl.Namespace || s.Name != cl.Status.CredentialsSecretName {
			f.add("claim %s: Secret %s/%s, status names %q", key, s.Namespace, s.Name, cl.Status.CredentialsSecretName)
		}
		if cl.Status.TokenServiceAccountUID != "" && cl.Status.TokenServiceAccountUID != saUID[cl.Status.Namespace] {
			f.add("claim %s: token recorded for ServiceAccount %s, the ServiceAccount is %s", key, cl.Status.TokenServiceAccountUID, saUID[cl.Status.Namespace])
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			user, err := c.tokenUser(ctx, string(s.Data["token"]))
			wantUser := "system:serviceaccount:" + cl.Status.Namespace + ":" + tenancyv1alpha1.TenantServiceAccountName
			if err != nil || user != wantUser {
				f.add("claim %s: the token in its Secret authenticates as %q (%v), want %s", key, user, err, wantUser)
			}
		}()
	}
	wg.Wait()
}

// tokenUser asks the API server (TokenReview) whom token authenticates as.
func (c *chaos) tokenUser(ctx context.Context, token string) (string, error) {
	if token == "" {
		return "", fmt.Errorf("no token")
	}
	tr, err := c.k.cs.AuthenticationV1().TokenReviews().Create(ctx,
		&authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: token}}, metav1.CreateOptions{})
	if err != nil {
		return "", err
	}
	if !tr.Status.Authenticated {
		return "", fmt.Errorf("not authenticated: %s", tr.Status.Error)
	}
	return tr.Status.User.Username, nil
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
			p("- invariants hold: every claim Ready with exactly one namespace; no namespace without a claim;" +
				" exactly one ServiceAccount, Role, two RoleBindings, quota and limit range per namespace;" +
				" one Secret per claim whose token authenticates as its tenant")
		}
	}
	return b.String()
}
