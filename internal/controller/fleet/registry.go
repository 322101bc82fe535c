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

package fleet

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"

	"github.com/nsclaim/nsclaim-operator/internal/fence"
	"github.com/nsclaim/nsclaim-operator/internal/placement"
)

const (
	// MemberLabel selects a member's kubeconfig Secret in the hub's namespace (multicluster-runtime's
	// kubeconfig provider's own label, value "true").
	MemberLabel = "sigs.k8s.io/multicluster-runtime-kubeconfig"
	// KubeconfigKey is the Secret's key holding the member's kubeconfig.
	KubeconfigKey = "kubeconfig"
	// NotReadyAnnotation on a member's Secret marks it NotReady (its value says why): it gets no new claim.
	NotReadyAnnotation = "fleet.nsclaim.dev/not-ready"
	// MaxClaimsAnnotation on a member's Secret caps the claims the hub places there (all classes).
	MaxClaimsAnnotation = "fleet.nsclaim.dev/max-claims"
	// probeTTL is how long a member's readiness and fence checks are reused.
	probeTTL = 3 * time.Second
	// probeTimeout bounds one readiness or fence check of a member.
	probeTimeout = 3 * time.Second
)

// ClusterSource gives a member's cluster by name: multicluster-runtime's kubeconfig provider, which
// engages a member when its Secret appears and disengages it when the Secret goes or changes.
type ClusterSource interface {
	Get(ctx context.Context, clusterName string) (cluster.Cluster, error)
}

// Registry is the hub's view of its members: their Secrets (labels, marks, caps) from the hub's cache,
// their clients from the provider, and their readiness and fence, checked at most every probeTTL.
type Registry struct {
	// Hub reads the member Secrets (the hub manager's cache, Secrets of Namespace only).
	Hub client.Reader
	// Namespace holds the member Secrets (the operator's namespace).
	Namespace string
	// Clusters gives each member's cluster.
	Clusters ClusterSource
	// Scheme builds the member clients.
	Scheme *runtime.Scheme
	// Fence is the fence a member must have intact (fence.Shipped()).
	Fence fence.Expected

	mu      sync.Mutex
	clients map[string]memberClient
	probes  map[string]probe
}

type memberClient struct {
	cfg    *rest.Config
	client client.Client
}

type probe struct {
	// at is when it was made by the reconcilers' clock (probeTTL); started when it began by the wall
	// clock's monotonic reading (Verify's since).
	at, started    time.Time
	notReady, fenc string
}

// Secrets lists the member Secrets on the hub.
func (r *Registry) Secrets(ctx context.Context) ([]corev1.Secret, error) {
	var list corev1.SecretList
	if err := r.Hub.List(ctx, &list, client.InNamespace(r.Namespace), client.MatchingLabels{MemberLabel: "true"}); err != nil {
		return nil, fmt.Errorf("listing member Secrets: %w", err)
	}
	return list.Items, nil
}

// Client returns a client of the member (direct, uncached: the hub's identity there may read only its
// requester namespace and the fence), or an error when the member is not engaged.
func (r *Registry) Client(ctx context.Context, name string) (client.Client, error) {
	cl, err := r.Clusters.Get(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("member cluster %s is not engaged: %w", name, err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if mc, ok := r.clients[name]; ok && mc.cfg == cl.GetConfig() {
		return mc.client, nil
	}
	cfg := rest.CopyConfig(cl.GetConfig())
	cfg.Timeout = probeTimeout * 3
	c, err := client.New(cfg, client.Options{Scheme: r.Scheme})
	if err != nil {
		return nil, fmt.Errorf("client of member cluster %s: %w", name, err)
	}
	if r.clients == nil {
		r.clients = map[string]memberClient{}
	}
	r.clients[name] = memberClient{cfg: cl.GetConfig(), client: c}
	return c, nil
}

// Members is what placement needs of every member: its marks from its Secret, and its readiness and
// fence, checked now unless checked within probeTTL. Counts are filled by the caller.
func (r *Registry) Members(ctx context.Context, now time.Time) ([]placement.Member, error) {
	secrets, err := r.Secrets(ctx)
	if err != nil {
		return nil, err
	}
	members := make([]placement.Member, 0, len(secrets))
	for i := range secrets {
		s := &secrets[i]
		m := placement.Member{Name: s.Name, Labels: s.Labels}
		if v, ok := s.Annotations[MaxClaimsAnnotation]; ok {
			n, err := strconv.ParseInt(v, 10, 32)
			if err != nil || n < 0 {
				m.NotReady = fmt.Sprintf("annotation %s=%q is not a count", MaxClaimsAnnotation, v)
			}
			m.MaxClaims = int32(n)
		}
		if why, ok := s.Annotations[NotReadyAnnotation]; ok && m.NotReady == "" {
			m.NotReady = "marked NotReady (" + NotReadyAnnotation + "): " + why
		}
		if m.NotReady == "" {
			m.NotReady, m.FenceNotIntact = r.check(ctx, s.Name, now)
		}
		members = append(members, m)
	}
	return members, nil
}

// Reachable says whether the member answers (engaged and ready); the string says why not.
func (r *Registry) Reachable(ctx context.Context, name string, now time.Time) string {
	notReady, _ := r.check(ctx, name, now)
	return notReady
}

// Verify gives the member's readiness and fence as a probe that started at since or later found them
// (the last one, if it did; else one made now), and records the result: the hub's last look at a
// member before it places a claim there. A placement passes the moment its reconcile began, so
// everything done to a member before the claim was looked at (its fence removed, its API server
// stopped) is seen, while the placements of a burst, which began together and wait for each other,
// share one probe instead of one each (a probe is some ten requests to the member, one after
// another). since zero: always a new probe.
func (r *Registry) Verify(ctx context.Context, name string, now, since time.Time) (notReady, fenceProblem string) {
	r.mu.Lock()
	last, ok := r.probes[name]
	r.mu.Unlock()
	if ok && reusable(last, since) {
		return last.notReady, last.fenc
	}
	p := probe{at: now, started: time.Now()}
	p.notReady, p.fenc = r.probe(ctx, name)
	r.mu.Lock()
	if r.probes == nil {
		r.probes = map[string]probe{}
	}
	r.probes[name] = p
	r.mu.Unlock()
	return p.notReady, p.fenc
}

// reusable reports whether last, a member's last probe, answers for a placement that began at since: it
// started at since or later (since zero: never).
func reusable(last probe, since time.Time) bool {
	return !since.IsZero() && !last.started.IsZero() && !last.started.Before(since)
}

// check probes the member's readiness and fence unless done within probeTTL.
func (r *Registry) check(ctx context.Context, name string, now time.Time) (notReady, fenceProblem string) {
	r.mu.Lock()
	p, ok := r.probes[name]
	r.mu.Unlock()
	if ok && now.Sub(p.at) < probeTTL && now.Sub(p.at) >= 0 {
		return p.notReady, p.fenc
	}
	return r.Verify(ctx, name, now, time.Time{})
}

func (r *Registry) probe(ctx context.Context, name string) (notReady, fenceProblem string) {
	c, err := r.Client(ctx, name)
	if err != nil {
		return "not engaged (its kubeconfig Secret is missing, unreadable or its cluster did not start)", ""
	}
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	cl, err := r.Clusters.Get(ctx, name)
	if err != nil {
		return "not engaged", ""
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cl.GetConfig())
	if err != nil {
		return "no client: " + err.Error(), ""
	}
	if err := dc.RESTClient().Get().AbsPath("/readyz").Do(ctx).Error(); err != nil {
		return "its API server is not ready: " + err.Error(), ""
	}
	st := fence.Check(ctx, c, r.Fence)
	if !st.Intact {
		return "", joinProblems(st.Problems)
	}
	return "", ""
}

// joinProblems makes the fence's problems one line.
func joinProblems(problems []string) string {
	if len(problems) == 0 {
		return "not intact"
	}
	return strings.Join(problems, "; ")
}
