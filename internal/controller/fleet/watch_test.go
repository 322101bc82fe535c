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
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
	"github.com/nsclaim/nsclaim-operator/internal/testenv"
)

func TestHubClaimKey(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want types.NamespacedName
		ok   bool
	}{
		{"team-a/pr-1", types.NamespacedName{Namespace: "team-a", Name: "pr-1"}, true},
		{"", types.NamespacedName{}, false},
		{"team-a", types.NamespacedName{}, false},
		{"/pr-1", types.NamespacedName{}, false},
		{"team-a/", types.NamespacedName{}, false},
		{"team-a/pr-1/x", types.NamespacedName{}, false},
	} {
		got, ok := HubClaimKey(tc.in)
		if got != tc.want || ok != tc.ok {
			t.Errorf("HubClaimKey(%q) = %v, %v; want %v, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

// TestMirrorWatchAsTheHubsMemberIdentity: the hub watches its mirrors on a member with the rights
// config/fleet/member.yaml gives it there and no more (the hub's ServiceAccount, impersonated): the
// member's cache is scoped to the requester namespace and the hub's label (MemberCacheOptions), the
// watch syncs, and a mirror's creation, status and deletion each queue the hub claim it names. A claim
// there without the hub's label, and a labelled claim in another namespace, queue nothing.
func TestMirrorWatchAsTheHubsMemberIdentity(t *testing.T) {
	env := &envtest.Environment{CRDDirectoryPaths: []string{filepath.Join("..", "..", "..", "config", "crd", "bases")}, ErrorIfCRDPathMissing: true}
	cfg := testenv.Start(t, env)
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := tenancyv1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	admin, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	applyManifest(ctx, t, admin, filepath.Join("..", "..", "..", "config", "fleet", "member.yaml"))
	if err := admin.Create(ctx, &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "elsewhere"}}}); err != nil {
		t.Fatal(err)
	}

	hub := rest.CopyConfig(cfg)
	hub.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:nsclaim-fleet:fleet-hub",
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:nsclaim-fleet", "system:authenticated"}}
	member, err := cluster.New(hub, func(o *cluster.Options) { o.Scheme = scheme }, MemberCacheOptions("nsclaim-fleet"))
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = member.Start(ctx) }()

	w := &MirrorWatch{}
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	t.Cleanup(q.ShutDown)
	if err := w.Source().Start(ctx, q); err != nil {
		t.Fatal(err)
	}
	if err := w.Engage(ctx, "m1", member); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for !w.Watched("m1") {
		if time.Now().After(deadline) {
			t.Fatal("the watch of m1's mirrors did not sync with the hub's member rights")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if w.Watched("m2") {
		t.Fatal("Watched(m2) = true for a member never engaged")
	}

	mirror := func(ns, name, hubClaim string, labelled bool) *tenancyv1alpha1.NamespaceClaim {
		c := &tenancyv1alpha1.NamespaceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name,
			Annotations: map[string]string{HubClaimAnnotation: hubClaim}}}
		if labelled {
			c.Labels = map[string]string{HubClaimUIDLabel: "uid-" + name}
		}
		if err := admin.Create(ctx, c); err != nil {
			t.Fatal(err)
		}
		return c
	}
	// Not the hub's: no label, or not in the requester namespace.
	mirror("nsclaim-fleet", "unlabelled", "team-a/forged", false)
	mirror("elsewhere", "other-namespace", "team-a/elsewhere", true)
	want := types.NamespacedName{Namespace: "team-a", Name: "pr-1"}
	m := mirror("nsclaim-fleet", "pr-1-abcdef01", "team-a/pr-1", true)
	expect(t, q, want, "the mirror's creation")
	if n := q.Len(); n != 0 {
		t.Fatalf("%d more requests queued: a claim without the hub's label or outside the requester namespace was seen", n)
	}

	m.Status.Phase = tenancyv1alpha1.ClaimPhaseActive
	if err := admin.Status().Update(ctx, m); err != nil {
		t.Fatal(err)
	}
	expect(t, q, want, "the member operator's status write")
	if err := admin.Delete(ctx, m); err != nil {
		t.Fatal(err)
	}
	expect(t, q, want, "the mirror's deletion")
}

// expect takes the next request off q and checks it is want.
func expect(t *testing.T, q workqueue.TypedRateLimitingInterface[reconcile.Request], want types.NamespacedName, after string) {
	t.Helper()
	got := make(chan reconcile.Request, 1)
	go func() {
		r, _ := q.Get()
		q.Done(r)
		got <- r
	}()
	select {
	case r := <-got:
		if r.NamespacedName != want {
			t.Fatalf("after %s: queued %v, want %v", after, r.NamespacedName, want)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("after %s: nothing queued in 30 s", after)
	}
}

// applyManifest creates every object of a multi-document YAML file as admin.
func applyManifest(ctx context.Context, t *testing.T, c client.Client, path string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); errors.Is(err, io.EOF) {
			return
		} else if err != nil {
			t.Fatal(err)
		}
		if len(u.Object) == 0 {
			continue
		}
		if err := c.Create(ctx, u); err != nil {
			t.Fatalf("creating %s %s from %s: %v", u.GetKind(), u.GetName(), path, err)
		}
	}
}
