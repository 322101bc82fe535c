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

// Package failover runs two manager processes against one cluster (hack/test-failover.sh starts the
// local cluster, installs the operator's RBAC and sets the environment) and checks leader election:
// only the leader reconciles; when the leader is killed (SIGKILL) or stopped (SIGTERM), the other
// takes over and claims created during the handover become Ready. It prints the measured failover
// times; it does not assert them.
package failover

import (
	"bytes"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
)

const (
	operatorNamespace = "nsclaim-operator-system"
	leaseName         = "nsclaim.tenancy.nsclaim.dev"
	// acquiredLog is what client-go's leader election logs (through the manager's JSON logger) when a
	// replica becomes leader.
	acquiredLog = `"msg":"Successfully acquired lease","lock":"` + operatorNamespace + "/" + leaseName + `"`
	// reconcileLog appears in every log line written inside a reconcile.
	reconcileLog = `"reconcileID"`
)

// replica is one manager process.
type replica struct {
	name      string
	cmd       *exec.Cmd
	log       string
	probePort int
	exited    chan error
}

func getenv(t *testing.T, key string) string {
	v := os.Getenv(key)
	if v == "" {
		t.Fatalf("%s is not set: run `make test-failover`", key)
	}
	return v
}

// startReplica starts the manager under the operator's ServiceAccount with its own probe and metrics
// ports and waits until it is ready (a follower is ready too: readiness does not need leadership).
func startReplica(t *testing.T, name string, probePort, metricsPort int) *replica {
	t.Helper()
	r := &replica{name: name, probePort: probePort, exited: make(chan error, 1),
		log: filepath.Join(getenv(t, "NSCLAIM_TEST_LOG_DIR"), fmt.Sprintf("%s-%d.log", name, time.Now().UnixNano()))}
	f, err := os.Create(r.log)
	if err != nil {
		t.Fatal(err)
	}
	r.cmd = exec.Command(getenv(t, "MANAGER_BIN"),
		"--health-probe-bind-address", fmt.Sprintf("127.0.0.1:%d", probePort),
		"--metrics-bind-address", fmt.Sprintf("127.0.0.1:%d", metricsPort),
		"--kubeconfig-server", getenv(t, "NSCLAIM_KUBECONFIG_SERVER"))
	r.cmd.Env = append(os.Environ(), "KUBECONFIG="+getenv(t, "NSCLAIM_OPERATOR_KUBECONFIG"), "POD_NAMESPACE="+operatorNamespace)
	r.cmd.Stdout, r.cmd.Stderr = f, f
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { r.exited <- r.cmd.Wait(); _ = f.Close() }()
	t.Cleanup(func() {
		if r.cmd.ProcessState == nil {
			_ = r.cmd.Process.Kill()
			t.Logf("replica %s killed: %v", r.name, <-r.exited)
		}
	})
	NewWithT(t).Eventually(func() (int, error) {
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/readyz", probePort))
		if err != nil {
			return 0, err
		}
		_ = resp.Body.Close()
		return resp.StatusCode, nil
	}, 60*time.Second, 250*time.Millisecond).Should(Equal(http.StatusOK), "replica %s ready", name)
	return r
}

// adminClient returns the cluster's admin configuration and a client with nsclaim's types.
func adminClient(t *testing.T) (*rest.Config, client.Client) {
	t.Helper()
	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(tenancyv1alpha1.AddToScheme(scheme))
	cfg, err := clientcmd.BuildConfigFromFlags("", getenv(t, "KUBECONFIG"))
	if err != nil {
		t.Fatal(err)
	}
	admin, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	return cfg, admin
}

// ports returns the port in the environment variable key, or def.
func ports(key string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(key)); err == nil {
		return n
	}
	return def
}

// logs returns the replica's log so far.
func (r *replica) logs() string {
	b, _ := os.ReadFile(r.log)
	return string(b)
}

func TestLeaderElectionFailover(t *testing.T) {
	g := NewWithT(t)
	g.SetDefaultEventuallyTimeout(90 * time.Second)
	g.SetDefaultEventuallyPollingInterval(250 * time.Millisecond)
	ctx := t.Context()
	_, admin := adminClient(t)

	holder := func() (string, error) {
		var l coordinationv1.Lease
		if err := admin.Get(ctx, types.NamespacedName{Namespace: operatorNamespace, Name: leaseName}, &l); err != nil {
			return "", err
		}
		if l.Spec.HolderIdentity == nil {
			return "", nil
		}
		return *l.Spec.HolderIdentity, nil
	}

	a := startReplica(t, "a", ports("FAILOVER_PROBE_PORT_A", 20281), ports("FAILOVER_METRICS_PORT_A", 20643))
	g.Eventually(a.logs).Should(ContainSubstring(acquiredLog), "the first replica becomes leader")
	idA, err := holder()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(idA).NotTo(BeEmpty())
	b := startReplica(t, "b", ports("FAILOVER_PROBE_PORT_B", 20381), ports("FAILOVER_METRICS_PORT_B", 20743))

	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("failover-%d", time.Now().UnixNano()%100000)}}
	g.Expect(admin.Create(ctx, ns)).To(Succeed())
	class := &tenancyv1alpha1.NamespaceClass{ObjectMeta: metav1.ObjectMeta{Name: ns.Name}, Spec: tenancyv1alpha1.NamespaceClassSpec{
		ClusterRole: "edit", Naming: tenancyv1alpha1.NamingSpec{Prefix: "fo-"},
		NetworkPolicy: tenancyv1alpha1.NetworkPolicyDenyFromOtherNamespaces, PodSecurity: tenancyv1alpha1.PodSecurityRestricted,
	}}
	g.Expect(admin.Create(ctx, class)).To(Succeed())
	var claims []string
	createClaims := func(prefix string, n int) {
		for i := range n {
			c := &tenancyv1alpha1.NamespaceClaim{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", prefix, i), Namespace: ns.Name},
				Spec: tenancyv1alpha1.NamespaceClaimSpec{ClassName: class.Name}}
			g.Expect(admin.Create(ctx, c)).To(Succeed())
			claims = append(claims, c.Name)
		}
	}
	allReady := func() []string {
		var notReady []string
		for _, name := range claims {
			var c tenancyv1alpha1.NamespaceClaim
			if err := admin.Get(ctx, types.NamespacedName{Namespace: ns.Name, Name: name}, &c); err != nil ||
				!meta.IsStatusConditionTrue(c.Status.Conditions, tenancyv1alpha1.ReadyCondition) {
				notReady = append(notReady, name)
			}
		}
		return notReady
	}
	// handover stops the leader with sig, creates claims at once and returns the time until another
	// identity holds the Lease.
	handover := func(leader *replica, leaderID string, sig syscall.Signal, prefix string) (time.Duration, string) {
		g.Expect(leader.cmd.Process.Signal(sig)).To(Succeed())
		start := time.Now()
		createClaims(prefix, 3)
		var newID string
		g.Eventually(func() (string, error) { id, err := holder(); newID = id; return id, err }, 60*time.Second, 100*time.Millisecond).
			ShouldNot(Or(Equal(leaderID), BeEmpty()))
		return time.Since(start), newID
	}

	createClaims("before", 3)
	g.Eventually(allReady).Should(BeEmpty(), "claims are Ready under the first leader")
	g.Expect(a.logs()).To(ContainSubstring(reconcileLog), "the leader reconciles")
	g.Expect(b.logs()).NotTo(ContainSubstring(reconcileLog), "the follower does not reconcile")
	g.Expect(b.logs()).NotTo(ContainSubstring(acquiredLog))

	// SIGKILL: the Lease is not released; the follower waits for it to expire.
	killTime, idB := handover(a, idA, syscall.SIGKILL, "kill")
	g.Eventually(b.logs).Should(ContainSubstring(acquiredLog))
	g.Eventually(allReady).Should(BeEmpty(), "claims created during the SIGKILL handover become Ready")
	g.Expect(b.logs()).To(ContainSubstring(reconcileLog), "the new leader reconciles")

	// SIGTERM: the leader finishes its reconciles, releases the Lease and exits 0.
	a2 := startReplica(t, "a2", ports("FAILOVER_PROBE_PORT_A", 20281), ports("FAILOVER_METRICS_PORT_A", 20643))
	termTime, idA2 := handover(b, idB, syscall.SIGTERM, "term")
	g.Eventually(b.exited, 60*time.Second).Should(Receive(BeNil()), "the stopped leader exits 0")
	g.Expect(b.logs()).To(ContainSubstring("All workers finished"), "graceful shutdown waited for in-flight reconciles")
	g.Eventually(a2.logs).Should(ContainSubstring(acquiredLog))
	g.Expect(idA2).NotTo(Equal(idA))
	g.Eventually(allReady).Should(BeEmpty(), "claims created during the SIGTERM handover become Ready")

	var out bytes.Buffer
	fmt.Fprintf(&out, "Failover after SIGKILL of the leader: %s (Lease not released; waits for LeaseDuration)\n", killTime.Round(10*time.Millisecond))
	fmt.Fprintf(&out, "Failover after SIGTERM of the leader: %s (Lease released on cancel)\n", termTime.Round(10*time.Millisecond))
	t.Log("\n" + out.String())
	if f := os.Getenv("FAILOVER_RESULT_FILE"); f != "" {
		_ = os.WriteFile(f, out.Bytes(), 0o644)
	}
}
