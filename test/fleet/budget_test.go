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
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
	"github.com/nsclaim/nsclaim-operator/internal/controller/fleet"
)

// budgetAcrossFleet: a NamespaceBudget of two claims on the hub covers the requester namespace; two
// claims placed on two different members use it up, so a third, preferring a third member with room,
// waits (Queued, never placed, no mirror anywhere) until one of the two is released, and is placed
// then: one allocation ledger for the fleet, the hub admits and then places. On the way, the hub's
// nsclaim_fleet_claims names the member of each (metrics labelled by cluster).
func (e *env) budgetAcrossFleet(t *testing.T) {
	ctx := context.Background()
	two := int32(2)
	b := &tenancyv1alpha1.NamespaceBudget{ObjectMeta: metav1.ObjectMeta{Name: "fleet-team"}, Spec: tenancyv1alpha1.NamespaceBudgetSpec{
		Requesters: tenancyv1alpha1.BudgetRequesters{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": requesterNS}}},
		Limits:     tenancyv1alpha1.BudgetLimits{Claims: &two}}}
	must(t, e.hubAdmin.Create(ctx, b))
	three := names("budget", 3)
	t.Cleanup(func() {
		if err := e.hubAdmin.Delete(ctx, b); err != nil && !apierrors.IsNotFound(err) {
			t.Error(err)
		}
	})
	t.Cleanup(func() { e.release(t, three...) })
	for i, m := range members[:2] {
		e.claim(t, three[i], "ci", m)
		if counts := e.placed(t, three[i:i+1]); counts[m] != 1 {
			t.Fatalf("%s placed %v, want %s (preferred, eligible, within the budget)", three[i], counts, m)
		}
	}
	// Metrics labelled by cluster: the hub's nsclaim_fleet_claims counts the two where they were placed.
	// It is read from the hub's cache at scrape time: a few looks for the cache to catch up.
	got := e.fleetClaimsMetric(t, "ci")
	for look := 0; look < 10 && (got["m1"] != 1 || got["m2"] != 1 || got["m3"] != 0); look++ {
		time.Sleep(time.Second)
		got = e.fleetClaimsMetric(t, "ci")
	}
	if got["m1"] != 1 || got["m2"] != 1 || got["m3"] != 0 {
		t.Errorf("nsclaim_fleet_claims{class=\"ci\"} by cluster = %v, want m1=1 m2=1 and none on m3", got)
	}
	e.claim(t, three[2], "ci", "m3")
	msg := e.readyReason(t, three[2], tenancyv1alpha1.QueuedReason)
	if !strings.Contains(msg, "NamespaceBudget fleet-team") || !strings.Contains(msg, "claims=1, available: 0") {
		t.Errorf("Queued message does not name the budget and what it lacks: %q", msg)
	}
	c, err := e.get(ctx, three[2])
	must(t, err)
	if c.Status.Cluster != "" {
		t.Fatalf("%s was placed on %s beyond its budget", three[2], c.Status.Cluster)
	}
	for _, m := range members {
		err := e.admins[m].Get(ctx, client.ObjectKey{Namespace: memberNS, Name: fleet.MirrorName(requesterNS, three[2])}, &tenancyv1alpha1.NamespaceClaim{})
		if !apierrors.IsNotFound(err) {
			t.Errorf("%s, queued on the hub, has a mirror on %s (err %v)", three[2], m, err)
		}
	}
	e.release(t, three[0])
	if counts := e.placed(t, three[2:]); counts["m3"] != 1 {
		t.Errorf("%s placed %v once the budget had room, want m3", three[2], counts)
	}
}

// fleetClaimsMetric scrapes the hub's /metrics (HTTPS, authenticated and authorized as the operator
// ships it) as a ServiceAccount bound to the shipped metrics-reader role, and returns
// nsclaim_fleet_claims by cluster for class.
func (e *env) fleetClaimsMetric(t *testing.T, class string) map[string]float64 {
	t.Helper()
	ctx := context.Background()
	must(t, e.hubAdmin.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "scraper", Namespace: operatorNS}}))
	must(t, e.hubAdmin.Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "fleet-test-scraper"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "nsclaim-operator-metrics-reader"},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "scraper", Namespace: operatorNS}}}))
	cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(e.dir, "hub", "kubeconfig"))
	if err != nil {
		t.Fatal(err)
	}
	tr, err := kubernetes.NewForConfigOrDie(cfg).CoreV1().ServiceAccounts(operatorNS).CreateToken(ctx, "scraper", &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("https://127.0.0.1:%d/metrics", e.base+44), nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+tr.Status.Token)
	// The hub's serving certificate is self-signed by controller-runtime.
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // self-signed
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("scraping the hub: %d %v", resp.StatusCode, err)
	}
	out := map[string]float64{}
	for _, line := range strings.Split(string(body), "\n") {
		if !strings.HasPrefix(line, "nsclaim_fleet_claims{") || !strings.Contains(line, `class="`+class+`"`) {
			continue
		}
		_, rest, _ := strings.Cut(line, `cluster="`)
		cluster, _, _ := strings.Cut(rest, `"`)
		f := strings.Fields(line)
		v, err := strconv.ParseFloat(f[len(f)-1], 64)
		if err != nil {
			t.Fatalf("metric line %q: %v", line, err)
		}
		out[cluster] = v
	}
	return out
}
