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

package metrics

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
)

// jobName matches the job of the metrics Service in config/default, which the alerts select on.
const jobName = "nsclaim-operator-controller-manager-metrics-service"

// env returns the environment variable key or fails the test (or skips it, when the variable that
// marks a run by hack/test-metrics.sh is unset).
func env(t *testing.T, key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	if def == "" {
		t.Fatalf("%s is not set", key)
	}
	return def
}

// TestPrometheusScrapesTheOperator starts Prometheus on loopback to scrape the manager at
// NSCLAIM_METRICS_ADDR over HTTPS (the manager's certificate is self-signed, so the scrape config
// skips verification) with the token of a ServiceAccount bound to the metrics-reader ClusterRole,
// then creates and deletes claims and watches the series through Prometheus' HTTP API.
func TestPrometheusScrapesTheOperator(t *testing.T) {
	metricsAddr := os.Getenv("NSCLAIM_METRICS_ADDR")
	if metricsAddr == "" {
		t.Skip("NSCLAIM_METRICS_ADDR is not set: run `make test-metrics`")
	}
	promBin := env(t, "PROMETHEUS", filepath.Join(repoRoot, "bin", "prometheus-2.42.0", "prometheus"))
	promAddr := env(t, "PROMETHEUS_ADDR", "127.0.0.1:19090")
	ctx := t.Context()
	g := NewWithT(t)
	g.SetDefaultEventuallyTimeout(90 * time.Second)
	g.SetDefaultEventuallyPollingInterval(time.Second)

	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(tenancyv1alpha1.AddToScheme(scheme))
	cfg, err := clientcmd.BuildConfigFromFlags("", env(t, "KUBECONFIG", ""))
	g.Expect(err).NotTo(HaveOccurred())
	admin, err := client.New(cfg, client.Options{Scheme: scheme})
	g.Expect(err).NotTo(HaveOccurred())

	// The scraper's identity.
	suffix := strconv.FormatInt(time.Now().UnixNano()%100000, 10)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "metrics-" + suffix}}
	g.Expect(admin.Create(ctx, ns)).To(Succeed())
	t.Cleanup(func() { _ = admin.Delete(context.Background(), ns) })
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "prometheus", Namespace: ns.Name}}
	g.Expect(admin.Create(ctx, sa)).To(Succeed())
	tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}
	g.Expect(admin.SubResource("token").Create(ctx, sa, tr)).To(Succeed())
	token := tr.Status.Token

	t.Run("the endpoint refuses anonymous and unauthorised scrapes", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(scrapeStatus(ctx, metricsAddr, "")).To(Equal(http.StatusUnauthorized))
		g.Expect(scrapeStatus(ctx, metricsAddr, token)).To(Equal(http.StatusForbidden))
	})

	crb := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "nsclaim-metrics-test-" + suffix},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "nsclaim-operator-metrics-reader"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa.Name, Namespace: ns.Name}}}
	g.Expect(admin.Create(ctx, crb)).To(Succeed())
	t.Cleanup(func() { _ = admin.Delete(context.Background(), crb) })
	g.Eventually(func() (int, error) { return scrapeStatus(ctx, metricsAddr, token) }).Should(Equal(http.StatusOK))

	prom := startPrometheus(t, promBin, promAddr, metricsAddr, token)
	g.Eventually(prom.value(ctx, fmt.Sprintf(`up{job=%q}`, jobName))).Should(Equal(1.0), "Prometheus scrapes the manager")
	g.Eventually(prom.value(ctx, `leader_election_master_status{name="nsclaim.tenancy.nsclaim.dev"}`)).Should(Equal(1.0))
	// controller-runtime creates the reconcile counters at zero when the controller starts, and this
	// cluster holds no claim yet: the series exists, and whatever it counts now is the baseline.
	reconciles := fmt.Sprintf(`sum(controller_runtime_reconcile_total{job=%q,controller="namespaceclaim"})`, jobName)
	var reconcilesBefore float64
	g.Eventually(func() error {
		var err error
		reconcilesBefore, err = prom.value(ctx, reconciles)()
		return err
	}).Should(Succeed(), "the claim controller's reconcile counter is scraped")
	refusals := fmt.Sprintf(`nsclaim_refusals_total{job=%q,reason="ClassNotFound"}`, jobName)
	var refusalsBefore float64
	g.Eventually(func() error {
		var err error
		refusalsBefore, err = prom.value(ctx, refusals)()
		return err
	}).Should(Succeed(), "the refusal counter is created at zero for every reason")

	// A class of the test's own, and claims of it.
	class := &tenancyv1alpha1.NamespaceClass{ObjectMeta: metav1.ObjectMeta{Name: "metrics-" + suffix}, Spec: tenancyv1alpha1.NamespaceClassSpec{
		ClusterRole: "edit", Naming: tenancyv1alpha1.NamingSpec{Prefix: "m" + suffix + "-"},
		NetworkPolicy: tenancyv1alpha1.NetworkPolicyDenyFromOtherNamespaces, PodSecurity: tenancyv1alpha1.PodSecurityRestricted,
	}}
	g.Expect(admin.Create(ctx, class)).To(Succeed())
	t.Cleanup(func() { _ = admin.Delete(context.Background(), class) })
	const n = 3
	claims := make([]*tenancyv1alpha1.NamespaceClaim, 0, n)
	for i := range n {
		c := &tenancyv1alpha1.NamespaceClaim{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("c%d", i), Namespace: ns.Name},
			Spec: tenancyv1alpha1.NamespaceClaimSpec{ClassName: class.Name}}
		g.Expect(admin.Create(ctx, c)).To(Succeed())
		claims = append(claims, c)
	}
	refused := &tenancyv1alpha1.NamespaceClaim{ObjectMeta: metav1.ObjectMeta{Name: "refused", Namespace: ns.Name},
		Spec: tenancyv1alpha1.NamespaceClaimSpec{ClassName: "no-such-class-" + suffix}}
	g.Expect(admin.Create(ctx, refused)).To(Succeed())

	byClass := func(state string) string {
		return fmt.Sprintf(`nsclaim_claims{job=%q,class=%q,state=%q}`, jobName, class.Name, state)
	}
	t.Run("claims by class and state come from the cache", func(t *testing.T) {
		g := NewWithT(t)
		g.Eventually(prom.value(ctx, byClass("Ready")), 90*time.Second, time.Second).Should(Equal(float64(n)))
		// A claim refused before its class is resolved has an empty class; it is the only Refused claim
		// of this cluster.
		g.Eventually(prom.value(ctx, fmt.Sprintf(`nsclaim_claims{job=%q,class="",state="Refused"}`, jobName)), 30*time.Second, time.Second).
			Should(Equal(1.0))
	})
	t.Run("the dashboard's queries run", func(t *testing.T) {
		g := NewWithT(t)
		raw, err := os.ReadFile(filepath.Join(repoRoot, "config", "grafana", "nsclaim-dashboard.json"))
		g.Expect(err).NotTo(HaveOccurred())
		var dash struct {
			Panels []struct {
				Title   string `json:"title"`
				Targets []struct {
					Expr string `json:"expr"`
				} `json:"targets"`
			} `json:"panels"`
		}
		g.Expect(json.Unmarshal(raw, &dash)).To(Succeed())
		r := strings.NewReplacer("$job", jobName, "$__rate_interval", "1m")
		n := 0
		for _, p := range dash.Panels {
			for _, tg := range p.Targets {
				_, err := prom.query(ctx, r.Replace(tg.Expr))
				g.Expect(err).NotTo(HaveOccurred(), "panel %q", p.Title)
				n++
			}
		}
		g.Expect(n).To(BeNumerically(">", 10))
	})
	t.Run("controller-runtime counts the reconciles", func(t *testing.T) {
		g := NewWithT(t)
		// Each of the n claims and the refused one is reconciled at least once.
		g.Eventually(prom.value(ctx, reconciles), 30*time.Second, time.Second).Should(BeNumerically(">=", reconcilesBefore+n+1))
	})
	// The following need the reconciler to call internal/monitoring.
	t.Run("provisioning durations are observed", func(t *testing.T) {
		g := NewWithT(t)
		q := fmt.Sprintf(`nsclaim_provisioning_duration_seconds_count{job=%q,class=%q}`, jobName, class.Name)
		g.Eventually(prom.value(ctx, q), 30*time.Second, time.Second).Should(Equal(float64(n)))
	})
	t.Run("issued credentials are counted", func(t *testing.T) {
		g := NewWithT(t)
		q := fmt.Sprintf(`nsclaim_credentials_issued_total{job=%q,class=%q,kind="issue"}`, jobName, class.Name)
		g.Eventually(prom.value(ctx, q), 30*time.Second, time.Second).Should(Equal(float64(n)))
	})
	t.Run("refusals are counted by reason", func(t *testing.T) {
		g := NewWithT(t)
		// One refused claim, counted once, on its transition to Refused.
		g.Eventually(prom.value(ctx, refusals), 30*time.Second, time.Second).Should(Equal(refusalsBefore + 1))
	})

	// One claim's namespace is held by an object's finalizer, so that claim waits Terminating: the
	// oldest wait of its class is scraped, grows, and goes once the claim is gone.
	held := &tenancyv1alpha1.NamespaceClaim{}
	g.Expect(admin.Get(ctx, client.ObjectKeyFromObject(claims[0]), held)).To(Succeed())
	g.Expect(held.Status.Namespace).NotTo(BeEmpty())
	blocker := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "blocker", Namespace: held.Status.Namespace, Finalizers: []string{"metrics.test/hold"}}}
	g.Expect(admin.Create(ctx, blocker)).To(Succeed())

	// Deleting the claims removes their series: the collector reports what the cache holds now.
	for _, c := range append(claims, refused) {
		g.Expect(admin.Delete(ctx, c)).To(Succeed())
	}
	oldestTerminating := fmt.Sprintf(`nsclaim_oldest_claim_wait_seconds{job=%q,class=%q,state="Terminating"}`, jobName, class.Name)
	t.Run("the oldest wait of a terminating claim is scraped and grows", func(t *testing.T) {
		g := NewWithT(t)
		g.Eventually(prom.value(ctx, oldestTerminating), 60*time.Second, time.Second).Should(BeNumerically(">", 0))
		first, err := prom.value(ctx, oldestTerminating)()
		g.Expect(err).NotTo(HaveOccurred())
		g.Eventually(prom.value(ctx, oldestTerminating), 60*time.Second, time.Second).Should(BeNumerically(">", first))
	})
	g.Expect(admin.Patch(ctx, blocker, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`)))).To(Succeed())
	t.Run("the oldest wait goes with the last waiting claim", func(t *testing.T) {
		g := NewWithT(t)
		g.Eventually(prom.series(ctx, oldestTerminating), 120*time.Second, time.Second).Should(BeZero())
	})
	t.Run("deleted claims leave no series", func(t *testing.T) {
		g := NewWithT(t)
		g.Eventually(prom.series(ctx, fmt.Sprintf(`nsclaim_claims{job=%q,class=%q}`, jobName, class.Name)), 120*time.Second, time.Second).
			Should(BeZero())
	})
	t.Run("deletion durations are observed", func(t *testing.T) {
		g := NewWithT(t)
		q := fmt.Sprintf(`nsclaim_deletion_duration_seconds_count{job=%q,class=%q}`, jobName, class.Name)
		g.Eventually(prom.value(ctx, q), 30*time.Second, time.Second).Should(Equal(float64(n)))
	})
}

// scrapeStatus GETs the manager's /metrics with an optional bearer token and returns the status.
func scrapeStatus(ctx context.Context, addr, token string) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+addr+"/metrics", nil)
	if err != nil {
		return 0, err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	// The manager's certificate is self-signed by controller-runtime.
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // the manager's certificate is self-signed
	resp, err := c.Do(req)
	if err != nil {
		return 0, err
	}
	defer func() { _ = resp.Body.Close() }()
	return resp.StatusCode, nil
}

// prometheus is a Prometheus server started by the test.
type prometheus struct{ addr string }

// startPrometheus writes a scrape config for the manager (1s interval, bearer token file, TLS without
// verification of the self-signed certificate), starts Prometheus on addr and waits until it is ready.
// The process is killed when the test ends.
func startPrometheus(t *testing.T, bin, addr, target, token string) *prometheus {
	t.Helper()
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "token")
	if err := os.WriteFile(tokenFile, []byte(token), 0o600); err != nil {
		t.Fatal(err)
	}
	config := fmt.Sprintf(`global:
  scrape_interval: 1s
  evaluation_interval: 1s
scrape_configs:
- job_name: %s
  scheme: https
  authorization:
    credentials_file: %s
  tls_config:
    insecure_skip_verify: true
  static_configs:
  - targets: [%q]
`, jobName, tokenFile, target)
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	logFile, err := os.Create(filepath.Join(env(t, "NSCLAIM_TEST_LOG_DIR", dir), "prometheus.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--config.file="+filepath.Join(dir, "prometheus.yml"), "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr, "--storage.tsdb.retention.time=1h")
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		_ = logFile.Close()
	})
	NewWithT(t).Eventually(func() (int, error) {
		resp, err := http.Get("http://" + addr + "/-/ready")
		if err != nil {
			return 0, err
		}
		_ = resp.Body.Close()
		return resp.StatusCode, nil
	}, 30*time.Second, 250*time.Millisecond).Should(Equal(http.StatusOK))
	return &prometheus{addr: addr}
}

// query runs an instant query and returns the values of the resulting vector.
func (p *prometheus) query(ctx context.Context, q string) ([]float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+p.addr+"/api/v1/query?query="+url.QueryEscape(q), nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	var body struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			ResultType string `json:"resultType"`
			Result     []struct {
				Value [2]any `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return nil, err
	}
	if body.Status != "success" || body.Data.ResultType != "vector" {
		return nil, fmt.Errorf("query %s: %s %s (%s)", q, body.Status, body.Error, body.Data.ResultType)
	}
	vals := make([]float64, 0, len(body.Data.Result))
	for _, r := range body.Data.Result {
		s, ok := r.Value[1].(string)
		if !ok {
			return nil, fmt.Errorf("query %s: value %v is not a string", q, r.Value[1])
		}
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return nil, err
		}
		vals = append(vals, v)
	}
	return vals, nil
}

// value returns a poll function for Eventually: the single value of q, or an error if q returns no
// series or more than one.
func (p *prometheus) value(ctx context.Context, q string) func() (float64, error) {
	return func() (float64, error) {
		vals, err := p.query(ctx, q)
		if err != nil {
			return 0, err
		}
		if len(vals) != 1 {
			return 0, fmt.Errorf("query %s: %d series, want 1", q, len(vals))
		}
		return vals[0], nil
	}
}

// series returns a poll function for Eventually: the number of series q returns.
func (p *prometheus) series(ctx context.Context, q string) func() (int, error) {
	return func() (int, error) {
		vals, err := p.query(ctx, q)
		return len(vals), err
	}
}
