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

// Package metrics tests nsclaim's monitoring as a user runs it: TestAlertRules runs promtool's unit
// tests on the PrometheusRule of config/prometheus, and TestPrometheusScrapesTheOperator runs a real
// Prometheus that scrapes a running manager over HTTPS with a ServiceAccount token (hack/test-metrics.sh
// starts the local cluster and the manager and sets the environment).
package metrics

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// repoRoot is the repository root, from this package's directory.
var repoRoot = filepath.Join("..", "..")

// TestAlertRules writes the rule groups of config/prometheus/prometheusrule.yaml to rules.yaml next
// to a copy of alerts_test.yaml and runs `promtool test rules` on them. PROMTOOL names the binary
// (make test-alerts sets it; default bin/prometheus-2.42.0/promtool).
func TestAlertRules(t *testing.T) {
	promtool := os.Getenv("PROMTOOL")
	if promtool == "" {
		promtool = filepath.Join(repoRoot, "bin", "prometheus-2.42.0", "promtool")
	}
	// promtool runs in a temporary directory: a relative path would not resolve there.
	promtool, err := filepath.Abs(promtool)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(promtool); err != nil {
		t.Fatalf("promtool not found (%v): run `make prometheus` or set PROMTOOL", err)
	}
	raw, err := os.ReadFile(filepath.Join(repoRoot, "config", "prometheus", "prometheusrule.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var rule struct {
		Kind string         `json:"kind"`
		Spec map[string]any `json:"spec"`
	}
	if err := yaml.Unmarshal(raw, &rule); err != nil {
		t.Fatal(err)
	}
	if rule.Kind != "PrometheusRule" || rule.Spec["groups"] == nil {
		t.Fatalf("prometheusrule.yaml: want a PrometheusRule with spec.groups, got kind %q", rule.Kind)
	}
	groups, err := yaml.Marshal(rule.Spec)
	if err != nil {
		t.Fatal(err)
	}
	tests, err := os.ReadFile("alerts_test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for name, data := range map[string][]byte{"rules.yaml": groups, "alerts_test.yaml": tests} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	check := exec.Command(promtool, "check", "rules", "rules.yaml")
	check.Dir = dir
	if out, err := check.CombinedOutput(); err != nil {
		t.Fatalf("promtool check rules: %v\n%s", err, out)
	}
	cmd := exec.Command(promtool, "test", "rules", "alerts_test.yaml")
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	t.Logf("promtool test rules:\n%s", out)
	if err != nil {
		t.Fatalf("promtool test rules: %v", err)
	}
}

// TestAlertsHaveRunbooks: every alert links its own section of docs/runbooks.md (the heading exists),
// every section of docs/runbooks.md is an alert's, and every alert has a promtool test in which it
// fires.
func TestAlertsHaveRunbooks(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(repoRoot, "config", "prometheus", "prometheusrule.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var rule struct {
		Spec struct {
			Groups []struct {
				Rules []struct {
					Alert       string            `json:"alert"`
					Annotations map[string]string `json:"annotations"`
				} `json:"rules"`
			} `json:"groups"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(raw, &rule); err != nil {
		t.Fatal(err)
	}
	runbooks, err := os.ReadFile(filepath.Join(repoRoot, "docs", "runbooks.md"))
	if err != nil {
		t.Fatal(err)
	}
	headings := map[string]bool{}
	for _, line := range strings.Split(string(runbooks), "\n") {
		if h, ok := strings.CutPrefix(line, "## "); ok {
			headings[h] = true
		}
	}
	tests, err := os.ReadFile("alerts_test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	const base = "https://github.com/nsclaim/nsclaim-operator/blob/main/docs/runbooks.md#"
	alerts := map[string]bool{}
	for _, g := range rule.Spec.Groups {
		for _, r := range g.Rules {
			if r.Alert == "" {
				continue
			}
			alerts[r.Alert] = true
			if want := base + strings.ToLower(r.Alert); r.Annotations["runbook_url"] != want {
				t.Errorf("alert %s: runbook_url %q, want %q", r.Alert, r.Annotations["runbook_url"], want)
			}
			if !headings[r.Alert] {
				t.Errorf("alert %s has no section \"## %s\" in docs/runbooks.md", r.Alert, r.Alert)
			}
			if !firingTest(string(tests), r.Alert) {
				t.Errorf("alert %s has no promtool test in which it fires (alerts_test.yaml)", r.Alert)
			}
		}
	}
	if len(alerts) < 9 {
		t.Fatalf("found %d alerts in prometheusrule.yaml; the parse missed some", len(alerts))
	}
	for h := range headings {
		if !alerts[h] {
			t.Errorf("docs/runbooks.md has a section %q, which is no alert", h)
		}
	}
}

// firingTest reports whether tests has an alert_rule_test of alert with at least one expected alert.
func firingTest(tests, alert string) bool {
	for _, chunk := range strings.Split(tests, "alertname: "+alert+"\n")[1:] {
		if strings.HasPrefix(strings.TrimLeft(chunk, " "), "exp_alerts:\n") {
			return true
		}
	}
	return false
}
