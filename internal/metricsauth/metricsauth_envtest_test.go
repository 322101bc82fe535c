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

package metricsauth

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/go-logr/logr"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	"github.com/nsclaim/nsclaim-operator/internal/testenv"
)

// counting counts the requests that reach the API server through it.
type counting struct {
	next http.RoundTripper
	n    atomic.Int64
}

func (c *counting) RoundTrip(req *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return c.next.RoundTrip(req)
}

// env is a real API server with the ClusterRoles the project ships for its metrics endpoint.
type env struct {
	t     *testing.T
	admin *kubernetes.Clientset
	cfg   *rest.Config
}

func startEnv(t *testing.T) *env {
	t.Helper()
	cfg := testenv.Start(t, &envtest.Environment{})
	admin, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, admin: admin, cfg: cfg}
	if _, err := admin.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "m"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"metrics_reader_role.yaml", "metrics_auth_role.yaml"} {
		raw, err := os.ReadFile("../../config/rbac/" + f)
		if err != nil {
			t.Fatal(err)
		}
		role := &rbacv1.ClusterRole{}
		if err := yaml.Unmarshal(raw, role); err != nil {
			t.Fatal(err)
		}
		if _, err := admin.RbacV1().ClusterRoles().Create(t.Context(), role, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	return e
}

// serviceAccount creates ServiceAccount m/name, bound cluster-wide to clusterRole unless it is empty,
// and returns a token for it.
func (e *env) serviceAccount(name, clusterRole string) string {
	e.t.Helper()
	ctx := e.t.Context()
	if _, err := e.admin.CoreV1().ServiceAccounts("m").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		e.t.Fatal(err)
	}
	if clusterRole != "" {
		crb := &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: clusterRole},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: "m", Name: name}},
		}
		if _, err := e.admin.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{}); err != nil {
			e.t.Fatal(err)
		}
	}
	tr, err := e.admin.CoreV1().ServiceAccounts("m").CreateToken(ctx, name, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	return tr.Status.Token
}

// server serves a handler that answers "metrics" (and fails the test if the caller's token reached it)
// behind the filter, which reviews as the identity of token; it returns the server's URL and the
// counter of the requests the filter sent to the API server.
func (e *env) server(token string) (string, *counting) {
	e.t.Helper()
	cfg := rest.AnonymousClientConfig(e.cfg)
	cfg.BearerToken = token
	transport, err := rest.TransportFor(cfg)
	if err != nil {
		e.t.Fatal(err)
	}
	count := &counting{next: transport}
	filter, err := Filter(cfg, &http.Client{Transport: count})
	if err != nil {
		e.t.Fatal(err)
	}
	h, err := filter(logr.Discard(), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "" {
			e.t.Error("the caller's token reached the metrics handler")
		}
		_, _ = io.WriteString(w, "metrics")
	}))
	if err != nil {
		e.t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	e.t.Cleanup(srv.Close)
	return srv.URL, count
}

// get requests url+path with the Authorization header auth (none if empty) and returns the status
// and body.
func get(t *testing.T, url, path, auth string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, strings.TrimSpace(string(body))
}

// TestMetricsEndpointServesOnlyReadersTheAPIServerVouchesFor attacks the metrics endpoint, guarded by
// the filter running as a manager that has only the project's metrics-auth-role, with the callers an
// attacker could be: nobody, a made-up token, another scheme, a ServiceAccount of the cluster with no
// grant, a reader asking for a path it was not granted, and the token of a ServiceAccount deleted
// since. Only the reader bound to the shipped metrics-reader ClusterRole gets the metrics, a second
// scrape costs no review, and a manager that may not review serves nobody.
func TestMetricsEndpointServesOnlyReadersTheAPIServerVouchesFor(t *testing.T) {
	e := startEnv(t)
	url, reviews := e.server(e.serviceAccount("manager", "metrics-auth-role"))
	reader := e.serviceAccount("reader", "metrics-reader")
	stranger := e.serviceAccount("stranger", "")
	gone := e.serviceAccount("gone", "metrics-reader")
	if err := e.admin.CoreV1().ServiceAccounts("m").Delete(t.Context(), "gone", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name, path, auth string
		want             int
	}{
		{name: "no token", path: "/metrics", want: http.StatusUnauthorized},
		{name: "a made-up token", path: "/metrics", auth: "Bearer not-a-token", want: http.StatusUnauthorized},
		{name: "the reader's token in another scheme", path: "/metrics", auth: "Basic " + reader, want: http.StatusUnauthorized},
		{name: "a ServiceAccount with no grant", path: "/metrics", auth: "Bearer " + stranger, want: http.StatusForbidden},
		{name: "a deleted reader", path: "/metrics", auth: "Bearer " + gone, want: http.StatusUnauthorized},
		{name: "the reader, on a path it was not granted", path: "/debug/pprof/heap", auth: "Bearer " + reader, want: http.StatusForbidden},
		{name: "the reader", path: "/metrics", auth: "Bearer " + reader, want: http.StatusOK},
		{name: "the reader, scheme in lower case", path: "/metrics", auth: "bearer " + reader, want: http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, body := get(t, url, tc.path, tc.auth)
			if status != tc.want {
				t.Fatalf("status %d (%q), want %d", status, body, tc.want)
			}
			if (body == "metrics") != (tc.want == http.StatusOK) {
				t.Fatalf("body %q with status %d", body, status)
			}
		})
	}

	before := reviews.n.Load()
	if status, _ := get(t, url, "/metrics", "Bearer "+reader); status != http.StatusOK {
		t.Fatalf("second scrape: status %d", status)
	}
	if n := reviews.n.Load() - before; n != 0 {
		t.Fatalf("a second scrape within the cache's lifetime sent %d requests to the API server, want 0", n)
	}

	// A manager whose identity may not create reviews serves nobody, not even the reader: the filter
	// fails closed.
	url, _ = e.server(e.serviceAccount("unprivileged-manager", ""))
	if status, body := get(t, url, "/metrics", "Bearer "+reader); status != http.StatusInternalServerError || body == "metrics" {
		t.Fatalf("a manager that cannot review: status %d (%q), want 500 and no metrics", status, body)
	}
}
