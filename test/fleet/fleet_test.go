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

// Package fleet is the e2e of a fleet hub (make test-fleet, hack/test-fleet.sh): a hub and three member
// clusters as local control planes, the operator running on each member as today, the hub running
// --fleet-hub. The test acts on the hub as a pipeline identity (config/rbac/pipeline_role.yaml) and
// as the cluster admin only to register members and to break them.
package fleet

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
	"github.com/nsclaim/nsclaim-operator/internal/controller/fleet"
	"github.com/nsclaim/nsclaim-operator/test/invariants"
)

const (
	operatorNS   = "nsclaim-operator-system"
	requesterNS  = "ci"
	memberNS     = "nsclaim-fleet"
	pipelineRole = "nsclaim-operator-pipeline-role"
)

var members = []string{"m1", "m2", "m3"}

type env struct {
	dir      string
	base     int
	scheme   *runtime.Scheme
	hubAdmin client.Client
	pipeline client.Client
	admins   map[string]client.Client
}

func setup(t *testing.T) *env {
	t.Helper()
	dir := os.Getenv("FLEET_DIR")
	if dir == "" {
		t.Skip("FLEET_DIR is not set: run make test-fleet")
	}
	base, _ := strconv.Atoi(os.Getenv("FLEET_PORT_BASE"))
	s := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(s)
	_ = tenancyv1alpha1.AddToScheme(s)
	e := &env{dir: dir, base: base, scheme: s, admins: map[string]client.Client{}}
	e.hubAdmin = e.clientFrom(t, filepath.Join(dir, "hub", "kubeconfig"))
	for _, m := range members {
		e.admins[m] = e.clientFrom(t, filepath.Join(dir, m, "kubeconfig"))
	}
	return e
}

func (e *env) clientFrom(t *testing.T, path string) client.Client {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg, client.Options{Scheme: e.scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

func eventually(t *testing.T, timeout time.Duration, what string, cond func(ctx context.Context) (bool, error)) {
	t.Helper()
	ctx := context.Background()
	if err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, timeout, true, cond); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// register stores member m's kubeconfig (the hub's identity there) as a member Secret on the hub.
func (e *env) register(t *testing.T, m string, labels, annotations map[string]string) {
	t.Helper()
	kc, err := os.ReadFile(filepath.Join(e.dir, m, "hub-identity.kubeconfig"))
	if err != nil {
		t.Fatal(err)
	}
	l := map[string]string{fleet.MemberLabel: "true"}
	for k, v := range labels {
		l[k] = v
	}
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: m, Namespace: operatorNS, Labels: l, Annotations: annotations},
		Data: map[string][]byte{fleet.KubeconfigKey: kc}}
	must(t, e.hubAdmin.Create(context.Background(), s))
}

// annotate sets (or, with an empty value, removes) an annotation of member m's Secret on the hub.
func (e *env) annotate(t *testing.T, m, key, value string) {
	t.Helper()
	s := &corev1.Secret{}
	must(t, e.hubAdmin.Get(context.Background(), client.ObjectKey{Namespace: operatorNS, Name: m}, s))
	patch := client.MergeFrom(s.DeepCopy())
	if s.Annotations == nil {
		s.Annotations = map[string]string{}
	}
	if value == "" {
		delete(s.Annotations, key)
	} else {
		s.Annotations[key] = value
	}
	must(t, e.hubAdmin.Patch(context.Background(), s, patch))
}

// pipelineIdentity makes the pipeline's ServiceAccount on the hub, bound to the shipped pipeline role
// in its requester namespace only, and a client that acts as it.
func (e *env) pipelineIdentity(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	must(t, e.hubAdmin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: requesterNS}}))
	must(t, e.hubAdmin.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "pipeline", Namespace: requesterNS}}))
	must(t, e.hubAdmin.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "pipeline", Namespace: requesterNS},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: pipelineRole},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "pipeline", Namespace: requesterNS}}}))
	cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(e.dir, "hub", "kubeconfig"))
	if err != nil {
		t.Fatal(err)
	}
	cs := kubernetes.NewForConfigOrDie(cfg)
	tr, err := cs.CoreV1().ServiceAccounts(requesterNS).CreateToken(ctx, "pipeline", &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pc := rest.AnonymousClientConfig(cfg)
	pc.BearerToken = tr.Status.Token
	if e.pipeline, err = client.New(pc, client.Options{Scheme: e.scheme}); err != nil {
		t.Fatal(err)
	}
}

// classes makes the same classes on the hub (with placement) and on every member (as today).
func (e *env) classes(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	hub := map[string]*tenancyv1alpha1.PlacementSpec{
		"ci":     {Strategy: tenancyv1alpha1.PlacementLeastAllocated},
		"packed": {Strategy: tenancyv1alpha1.PlacementPacked, MaxClaimsPerCluster: 3},
		"eu":     {ClusterSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"region": "eu"}}},
	}
	for name, p := range hub {
		must(t, e.hubAdmin.Create(ctx, &tenancyv1alpha1.NamespaceClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: tenancyv1alpha1.NamespaceClassSpec{Placement: p}}))
		for _, m := range members {
			must(t, e.admins[m].Create(ctx, &tenancyv1alpha1.NamespaceClass{ObjectMeta: metav1.ObjectMeta{Name: name},
				Spec: tenancyv1alpha1.NamespaceClassSpec{Naming: tenancyv1alpha1.NamingSpec{Prefix: name + "-"}}}))
		}
	}
}

func (e *env) claim(t *testing.T, name, class, preferred string) {
	t.Helper()
	c := &tenancyv1alpha1.NamespaceClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: requesterNS},
		Spec: tenancyv1alpha1.NamespaceClaimSpec{ClassName: class, PreferredCluster: preferred}}
	must(t, e.pipeline.Create(context.Background(), c))
}

func (e *env) get(ctx context.Context, name string) (*tenancyv1alpha1.NamespaceClaim, error) {
	c := &tenancyv1alpha1.NamespaceClaim{}
	return c, e.pipeline.Get(ctx, client.ObjectKey{Namespace: requesterNS, Name: name}, c)
}

// placed waits until every named claim has a cluster and returns the count per cluster.
func (e *env) placed(t *testing.T, names []string) map[string]int {
	t.Helper()
	counts := map[string]int{}
	eventually(t, 2*time.Minute, "claims placed", func(ctx context.Context) (bool, error) {
		counts = map[string]int{}
		for _, n := range names {
			c, err := e.get(ctx, n)
			if err != nil || c.Status.Cluster == "" {
				return false, nil
			}
			counts[c.Status.Cluster]++
		}
		return true, nil
	})
	return counts
}

// readyReason waits until the claim's Ready condition has reason and returns its message.
func (e *env) readyReason(t *testing.T, name, reason string) string {
	t.Helper()
	var msg string
	eventually(t, 2*time.Minute, name+" Ready reason "+reason, func(ctx context.Context) (bool, error) {
		c, err := e.get(ctx, name)
		if err != nil {
			return false, nil
		}
		r := apimeta.FindStatusCondition(c.Status.Conditions, tenancyv1alpha1.ReadyCondition)
		if r == nil || r.Reason != reason {
			return false, nil
		}
		msg = r.Message
		return true, nil
	})
	return msg
}

// release deletes the claims as the pipeline and waits until they, their mirrors and the members'
// namespaces are gone.
func (e *env) release(t *testing.T, names ...string) {
	t.Helper()
	ctx := context.Background()
	for _, n := range names {
		c, err := e.get(ctx, n)
		if apierrors.IsNotFound(err) {
			continue
		}
		must(t, err)
		if err := e.pipeline.Delete(ctx, c); err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
	}
	e.allGone(t, 3*time.Minute+time.Duration(len(names))*2*time.Second, names...)
}

// allGone waits until the hub claims, their mirrors and every member namespace of theirs are gone
// (one list of the hub's claims and one of each member's mirrors per look).
func (e *env) allGone(t *testing.T, timeout time.Duration, names ...string) {
	t.Helper()
	eventually(t, timeout, "claims, mirrors and namespaces gone", func(ctx context.Context) (bool, error) {
		want := map[string]bool{}
		for _, n := range names {
			want[n], want[fleet.MirrorName(requesterNS, n)] = true, true
		}
		var hub tenancyv1alpha1.NamespaceClaimList
		if err := e.pipeline.List(ctx, &hub, client.InNamespace(requesterNS)); err != nil {
			return false, nil
		}
		for _, c := range hub.Items {
			if want[c.Name] {
				return false, nil
			}
		}
		for _, m := range members {
			var mirrors tenancyv1alpha1.NamespaceClaimList
			if err := e.admins[m].List(ctx, &mirrors, client.InNamespace(memberNS)); err != nil {
				return false, nil
			}
			for _, c := range mirrors.Items {
				if want[c.Name] {
					return false, nil
				}
			}
		}
		return true, nil
	})
}

// checkInvariants runs test/invariants on every member.
func (e *env) checkInvariants(t *testing.T) {
	t.Helper()
	for _, m := range members {
		v, err := invariants.CheckWithin(context.Background(), e.admins[m], invariants.Options{}, 90*time.Second, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if len(v) > 0 {
			t.Errorf("member %s: invariants broken:\n%s", m, strings.Join(v, "\n"))
		}
	}
}

func names(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%d", prefix, i)
	}
	return out
}

// memberScript runs hack/local-cluster.sh or hack/local-operator.sh for member m (index i), as
// hack/test-fleet.sh does.
func (e *env) memberScript(t *testing.T, i int, script, arg string) {
	t.Helper()
	p := e.base + 100*i
	root, _ := filepath.Abs(filepath.Join("..", ".."))
	cmd := exec.Command(filepath.Join(root, "hack", script), arg)
	cmd.Env = append(os.Environ(), "LOCAL_CLUSTER_DIR="+filepath.Join(e.dir, members[i-1]),
		fmt.Sprintf("APISERVER_PORT=%d", p+43), fmt.Sprintf("CONTROLLER_MANAGER_PORT=%d", p+57),
		fmt.Sprintf("ETCD_CLIENT_PORT=%d", p+79), fmt.Sprintf("ETCD_PEER_PORT=%d", p+80),
		fmt.Sprintf("OPERATOR_PROBE_PORT=%d", p+81), fmt.Sprintf("OPERATOR_METRICS_PORT=%d", p+44),
		"OPERATOR_ARGS=--seed-namespace="+seedNS)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s %s for %s: %v\n%s", script, arg, members[i-1], err, out)
	}
}

func TestFleet(t *testing.T) {
	e := setup(t)
	ctx := context.Background()
	e.pipelineIdentity(t)
	e.classes(t)
	e.register(t, "m1", map[string]string{"region": "us"}, map[string]string{fleet.MaxClaimsAnnotation: "4"})
	e.register(t, "m2", map[string]string{"region": "eu"}, map[string]string{fleet.MaxClaimsAnnotation: "4"})
	e.register(t, "m3", map[string]string{"region": "us"}, map[string]string{fleet.MaxClaimsAnnotation: "2"})

	t.Run("shares follow the caps, the rest waits with one line per cluster", func(t *testing.T) {
		e.shares(t, shareClaims())
		// The member's operator provisions the mirror; the hub copies status and credentials back.
		e.readyReason(t, "share-0", tenancyv1alpha1.ProvisionedReason)
		c, err := e.get(ctx, "share-0")
		must(t, err)
		e.credentialsWorkOnMember(t, c)

		// A Ready claim costs no request between its events: the hub reads its mirror from the member's
		// cache and writes its Secret again only when the token changed or every
		// --credentials-check-interval (hack/test-fleet.sh: 20s). A hub Secret deleted behind the
		// hub's back is written again then.
		must(t, e.hubAdmin.Delete(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: requesterNS, Name: c.Name + "-kubeconfig"}}))
		e.credentialsWorkOnMember(t, c)
	})

	t.Run("Packed fills the first member up to the class's cap", func(t *testing.T) {
		five := names("packed", 5)
		t.Cleanup(func() { e.release(t, five...) })
		for _, n := range five {
			e.claim(t, n, "packed", "")
			e.placed(t, []string{n})
		}
		counts := e.placed(t, five)
		if counts["m1"] != 3 || counts["m2"] != 2 {
			t.Errorf("placed %v, want m1=3 m2=2", counts)
		}
	})

	t.Run("a NamespaceBudget on the hub counts claims on every member: the hub admits, then places", e.budgetAcrossFleet)

	t.Run("seeds come from the member's own seed namespace", e.seedsFromMember)

	t.Run("a member marked NotReady gets no new claim after 10 s", func(t *testing.T) {
		marked := e.markNotReady(t, "m1")
		t.Cleanup(func() { e.annotate(t, "m1", fleet.NotReadyAnnotation, "") })
		// One claim at once (the contract does not cover it), then three once the hub's API server's
		// clock is 10 s past the mark: all prefer m1, which they would get if it were eligible.
		e.claim(t, "notready-0", "ci", "m1")
		e.waitServerTime(t, marked.Add(11*time.Second))
		late := names("notready-late", 3)
		t.Cleanup(func() { e.release(t, append(late, "notready-0")...) })
		for _, n := range late {
			e.claim(t, n, "ci", "m1")
		}
		e.placed(t, append(late, "notready-0"))
		for _, n := range late {
			c, err := e.get(ctx, n)
			must(t, err)
			if !c.CreationTimestamp.After(marked.Add(10 * time.Second)) {
				t.Fatalf("%s was created at %s, not 10 s after the mark at %s", n, c.CreationTimestamp, marked)
			}
			if c.Status.Cluster == "m1" {
				t.Errorf("%s, created %s after m1 was marked NotReady, was placed on m1", n, c.CreationTimestamp.Sub(marked))
			}
		}
		e.annotate(t, "m1", fleet.NotReadyAnnotation, "")
	})

	t.Run("a member whose fence is removed gets none and the hub says why", func(t *testing.T) {
		b := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}
		must(t, e.admins["m2"].Get(ctx, client.ObjectKey{Name: "nsclaim-operator-fence"}, b))
		saved := b.DeepCopy()
		must(t, e.admins["m2"].Delete(ctx, b))
		t.Cleanup(func() {
			saved.ResourceVersion, saved.UID = "", ""
			must(t, e.admins["m2"].Create(ctx, saved))
			e.release(t, "fence-eu", "fence-pref")
		})
		e.claim(t, "fence-eu", "eu", "")
		msg := e.readyReason(t, "fence-eu", tenancyv1alpha1.NoEligibleClusterReason)
		if !strings.Contains(msg, "m2: fence not intact") {
			t.Errorf("NoEligibleCluster message does not say m2's fence is not intact: %q", msg)
		}
		e.claim(t, "fence-pref", "ci", "m2")
		if counts := e.placed(t, []string{"fence-pref"}); counts["m2"] != 0 {
			t.Errorf("a claim preferring m2 was placed there without its fence")
		}
		restored := saved.DeepCopy()
		restored.ResourceVersion, restored.UID = "", ""
		must(t, e.admins["m2"].Create(ctx, restored))
		if counts := e.placed(t, []string{"fence-eu"}); counts["m2"] != 1 {
			t.Errorf("fence-eu placed %v once m2's fence is back, want m2", counts)
		}
	})

	t.Run("a claim on a member that goes away and comes back is cleaned up", func(t *testing.T) {
		e.claim(t, "away", "ci", "m3")
		e.readyReason(t, "away", tenancyv1alpha1.ProvisionedReason)
		c, err := e.get(ctx, "away")
		must(t, err)
		if c.Status.Cluster != "m3" {
			t.Fatalf("away placed on %s, want m3 (preferred, eligible)", c.Status.Cluster)
		}
		ns := c.Status.Namespace
		e.memberScript(t, 3, "local-cluster.sh", "down")
		must(t, e.pipeline.Delete(ctx, c))
		eventually(t, time.Minute, "ClusterReachable=False", func(ctx context.Context) (bool, error) {
			c, err := e.get(ctx, "away")
			if err != nil {
				return false, nil
			}
			r := apimeta.FindStatusCondition(c.Status.Conditions, tenancyv1alpha1.ClusterReachableCondition)
			return r != nil && r.Status == metav1.ConditionFalse && r.Reason == tenancyv1alpha1.ClusterUnreachableReason, nil
		})
		e.memberScript(t, 3, "local-cluster.sh", "up")
		e.memberScript(t, 3, "local-operator.sh", "start")
		e.allGone(t, 3*time.Minute, "away")
		eventually(t, 3*time.Minute, "the member namespace gone", func(ctx context.Context) (bool, error) {
			err := e.admins["m3"].Get(ctx, client.ObjectKey{Name: ns}, &corev1.Namespace{})
			return apierrors.IsNotFound(err), nil
		})
	})

	t.Run("an orphan mirror is swept, the others are left alone", e.orphanSwept)

	t.Run("invariants hold on every member", e.checkInvariants)
}

// credentialsWorkOnMember reads the hub's credentials Secret as the pipeline and uses the kubeconfig
// in it: it names the member's address and CA, and works in the claim's namespace there only.
func (e *env) credentialsWorkOnMember(t *testing.T, c *tenancyv1alpha1.NamespaceClaim) {
	t.Helper()
	ctx := context.Background()
	var s corev1.Secret
	eventually(t, time.Minute, "credentials Secret on the hub", func(ctx context.Context) (bool, error) {
		err := e.pipeline.Get(ctx, client.ObjectKey{Namespace: requesterNS, Name: c.Name + "-kubeconfig"}, &s)
		return err == nil, nil
	})
	var kc []byte
	for _, v := range s.Data {
		if strings.Contains(string(v), "apiVersion") {
			kc = v
		}
	}
	cfg, err := clientcmd.Load(kc)
	if err != nil {
		t.Fatalf("credentials Secret holds no kubeconfig: %v", err)
	}
	p := e.base + 100*(1+sort.SearchStrings(members, c.Status.Cluster))
	want := fmt.Sprintf("https://127.0.0.1:%d", p+43)
	for _, cl := range cfg.Clusters {
		if cl.Server != want {
			t.Errorf("handed kubeconfig names %s, want member %s's address %s", cl.Server, c.Status.Cluster, want)
		}
	}
	rc, err := clientcmd.NewDefaultClientConfig(*cfg, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		t.Fatal(err)
	}
	tenant, err := client.New(rc, client.Options{Scheme: e.scheme})
	if err != nil {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{GenerateName: "from-hub-", Namespace: c.Status.Namespace}}
	if err := tenant.Create(ctx, cm); err != nil {
		t.Errorf("the handed credentials do not work in %s on %s: %v", c.Status.Namespace, c.Status.Cluster, err)
	}
	if err := tenant.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: memberNS}}); !apierrors.IsForbidden(err) {
		t.Errorf("the handed credentials reach %s on the member: %v", memberNS, err)
	}
}
