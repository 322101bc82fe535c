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
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
	seedpolicy "github.com/nsclaim/nsclaim-operator/internal/seeds"
)

// The seeds scenario's names: the seed namespace config/seeds ships its Role for, the class and the
// source Secret.
const (
	seedsNamespace = "nsclaim-seeds"
	seedsClassName = "bench-seeds"
	seedsSource    = "registry"
)

// seedsArgs are the manager flags the seeds scenario needs: the seed namespace (docs/seeds.md).
func seedsArgs() string { return "--seed-namespace=" + seedsNamespace }

// copyWatch records, through a metadata-only watch of every seed copy (Secrets labelled
// seeds.nsclaim.dev/seed, as the admin), when each namespace's copy first carried the digest wanted.
type copyWatch struct {
	mu      sync.Mutex
	want    string
	at      map[string]time.Time
	changed chan struct{}
}

// startCopyWatch starts the watch until ctx ends.
func startCopyWatch(ctx context.Context, k *clients) (*copyWatch, error) {
	mc, err := metadata.NewForConfig(k.cfg)
	if err != nil {
		return nil, err
	}
	w := &copyWatch{at: map[string]time.Time{}, changed: make(chan struct{}, 1)}
	f := metadatainformer.NewFilteredSharedInformerFactory(mc, 0, metav1.NamespaceAll, func(o *metav1.ListOptions) {
		o.LabelSelector = tenancyv1alpha1.SeedLabel + "=" + string(tenancyv1alpha1.SeedKindSecret)
	})
	inf := f.ForResource(corev1.SchemeGroupVersion.WithResource("secrets")).Informer()
	seen := func(obj any) {
		m, ok := obj.(*metav1.PartialObjectMetadata)
		if !ok {
			return
		}
		now := time.Now()
		w.mu.Lock()
		if _, done := w.at[m.Namespace]; !done && w.want != "" && m.Annotations[tenancyv1alpha1.SeedDigestAnnotation] == w.want {
			w.at[m.Namespace] = now
		}
		w.mu.Unlock()
		select {
		case w.changed <- struct{}{}:
		default:
		}
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: seen, UpdateFunc: func(_, o any) { seen(o) }}); err != nil {
		return nil, err
	}
	f.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		return nil, fmt.Errorf("the seed copies watch did not sync")
	}
	return w, nil
}

// expect starts a new round: from now on the copies are awaited with digest; copies already carrying
// it (in the informer's store) count at once.
func (w *copyWatch) expect(digest string) {
	w.mu.Lock()
	w.want, w.at = digest, map[string]time.Time{}
	w.mu.Unlock()
}

// wait waits until n namespaces' copies carry the digest awaited, or timeout; it returns how many did
// and their times.
func (w *copyWatch) wait(ctx context.Context, n int, timeout time.Duration) []time.Time {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		w.mu.Lock()
		got := len(w.at)
		w.mu.Unlock()
		if got >= n {
			break
		}
		select {
		case <-ctx.Done():
		case <-deadline.C:
		case <-w.changed:
			continue
		case <-time.After(time.Second):
			continue
		}
		break
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]time.Time, 0, len(w.at))
	for _, t := range w.at {
		out = append(out, t)
	}
	return out
}

// seedsPhase (--seeds=N) measures seeds at N claimed namespaces. Method: N claims of a class without
// seeds are made and become Ready; after --settle the manager's RSS is read (unseeded). The class then
// gains one Secret seed (a pull Secret, listed on the tenant ServiceAccount) whose source sits in the
// seed namespace, readable through config/seeds' Role; once every namespace holds its copy and after
// --settle, the RSS is read again (seeded): the growth is the cost of N namespaces' seeds, with the
// same claims. Then the source is rotated (its data changed by one update): the latency of each copy is
// from the update call being sent to the copy's digest annotation (seeds.nsclaim.dev/digest) carrying
// the new content's digest on a metadata-only watch of the copies.
func (b *bencher) seedsPhase(ctx context.Context, n int) error {
	if err := ensureSeedSource(ctx, b.k); err != nil {
		return err
	}
	// The claims are only what the copies go to: the class makes no quota, limit range or network
	// policy, so making N of them costs the least the bench allows (no pool: handouts are not measured).
	class := benchClass()
	class.Name, class.Spec.Naming.Prefix = seedsClassName, "s-"
	class.Spec.ResourceQuota, class.Spec.LimitRange, class.Spec.NetworkPolicy = nil, nil, tenancyv1alpha1.NetworkPolicyNone
	if err := b.k.c.Create(ctx, class); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating NamespaceClass %s: %w", class.Name, err)
	}
	copies, err := startCopyWatch(ctx, b.k)
	if err != nil {
		return err
	}
	b.logf("seeds: %d claims of class %s, no seeds yet", n, seedsClassName)
	refs, err := createClaimsOf(ctx, b.k, seedsClassName, "seeds", 0, n, b.o.perNS, b.o.createParallel, nil)
	b.claims += len(refs)
	if err != nil {
		return err
	}
	if missing := b.track.waitAll(ctx, refs, b.o.timeout); missing > 0 {
		return fmt.Errorf("seeds: %d of %d claims not Ready", missing, n)
	}
	unseeded := b.settledRSS(ctx, "unseeded", n)

	src := &corev1.Secret{}
	if err := b.k.c.Get(ctx, clientKey(seedsNamespace, seedsSource), src); err != nil {
		return err
	}
	copies.expect(seedpolicy.Digest(src))
	t0 := time.Now()
	if err := b.setClassSeeds(ctx, []tenancyv1alpha1.Seed{{Kind: tenancyv1alpha1.SeedKindSecret, Name: seedsSource, As: "pull",
		ImagePullSecret: tenancyv1alpha1.ImagePullTenant}}); err != nil {
		return err
	}
	got := copies.wait(ctx, n, b.o.timeout)
	b.logf("seeds: the class gained a seed: %d of %d namespaces hold its copy; the last %s after the class update (load %s)",
		len(got), n, lastAfter(got, t0), loadAvg())
	if len(got) < n {
		return fmt.Errorf("seeds: %d of %d namespaces got no copy", n-len(got), n)
	}
	seeded := b.settledRSS(ctx, "seeded", n)
	b.logf("seeds: RSS growth at %d seeded namespaces vs the same %d unseeded: %+d MiB (target <= 20 MiB)", n, n, (seeded-unseeded)/1024)

	src.Data = map[string][]byte{corev1.DockerConfigJsonKey: fmt.Appendf(nil, `{"auths":{"registry.example":{"auth":"rotated-%d"}}}`, time.Now().UnixNano())}
	copies.expect(seedpolicy.Digest(src))
	// With --metrics-pprof the manager's CPU over the rotation's first 20 s is profiled
	// (cpu-seeds-rotation.pb.gz).
	profiled := b.op.cpuProfile(filepath.Dir(b.o.out), "seeds-rotation", 20*time.Second)
	t0 = time.Now()
	if err := b.k.c.Update(ctx, src); err != nil {
		return fmt.Errorf("rotating the seed source: %w", err)
	}
	got = copies.wait(ctx, n, b.o.timeout)
	if path := profiled(); path != "" {
		b.logf("seeds: the manager's CPU profile over the rotation: %s (go tool pprof -top)", path)
	}
	lat := make([]time.Duration, 0, len(got))
	for _, t := range got {
		lat = append(lat, t.Sub(t0))
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.logf("seeds: rotation of the source reached %d of %d namespaces: p50 %s, p99 %s (target <= 10s), max %s (load %s)", len(lat), n,
		percentile(lat, 50).Round(time.Millisecond), percentile(lat, 99).Round(time.Millisecond), percentile(lat, 100).Round(time.Millisecond), loadAvg())
	if len(lat) < n {
		return fmt.Errorf("seeds: the rotation did not reach %d of %d namespaces", n-len(lat), n)
	}
	return nil
}

// settledRSS waits --settle and returns the manager's RSS in KiB, logging it with its memory classes.
func (b *bencher) settledRSS(ctx context.Context, what string, n int) int64 {
	_ = sleep(ctx, b.o.settle)
	p, _ := readProc(b.op.pid())
	m, _ := b.op.readMemClasses()
	b.logf("seeds: %d %s namespaces: RSS %d MiB; %s", n, what, p.rssKiB/1024, m)
	return p.rssKiB
}

// setClassSeeds sets the seeds class's spec.seeds.
func (b *bencher) setClassSeeds(ctx context.Context, seeds []tenancyv1alpha1.Seed) error {
	c := &tenancyv1alpha1.NamespaceClass{}
	if err := b.k.c.Get(ctx, clientKey("", seedsClassName), c); err != nil {
		return err
	}
	c.Spec.Seeds = seeds
	if err := b.k.c.Update(ctx, c); err != nil {
		return fmt.Errorf("setting the seeds of NamespaceClass %s: %w", seedsClassName, err)
	}
	return nil
}

// lastAfter is how long after t0 the last of ts was.
func lastAfter(ts []time.Time, t0 time.Time) time.Duration {
	var last time.Duration
	for _, t := range ts {
		last = max(last, t.Sub(t0))
	}
	return last.Round(time.Millisecond)
}

// prepareSeeds, for a seeds scenario of n namespaces (none when n is 0), makes the seed namespace and
// its Role before the manager starts, and adds the seed namespace to the manager's flags.
func prepareSeeds(ctx context.Context, k *clients, e *env, n int) error {
	if n == 0 {
		return nil
	}
	if err := ensureSeedSource(ctx, k); err != nil {
		return err
	}
	e.operatorArgs = strings.TrimSpace(e.operatorArgs + " " + seedsArgs())
	return nil
}

// ensureSeedSource makes the seed namespace, config/seeds' Role and RoleBinding in it (what an
// install with seeds applies), and the source pull Secret, consented to for every class.
func ensureSeedSource(ctx context.Context, k *clients) error {
	objs := []client.Object{&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: seedsNamespace}}}
	for _, f := range []struct {
		path string
		obj  client.Object
	}{{"config/seeds/role.yaml", &rbacv1.Role{}}, {"config/seeds/role_binding.yaml", &rbacv1.RoleBinding{}}} {
		raw, err := os.ReadFile(filepath.FromSlash(f.path))
		if err != nil {
			return err
		}
		if err := yaml.Unmarshal(raw, f.obj); err != nil {
			return fmt.Errorf("reading %s: %w", f.path, err)
		}
		f.obj.SetNamespace(seedsNamespace)
		objs = append(objs, f.obj)
	}
	objs = append(objs, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: seedsSource, Namespace: seedsNamespace,
		Labels: map[string]string{tenancyv1alpha1.SeedClassLabel: tenancyv1alpha1.SeedAnyClass}},
		Type: corev1.SecretTypeDockerConfigJson, Data: map[string][]byte{corev1.DockerConfigJsonKey: []byte(`{"auths":{"registry.example":{}}}`)}})
	for _, o := range objs {
		if err := k.c.Create(ctx, o); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating %T %s: %w", o, o.GetName(), err)
		}
	}
	return nil
}
