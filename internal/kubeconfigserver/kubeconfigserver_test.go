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

package kubeconfigserver

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	"k8s.io/client-go/rest"

	"github.com/nsclaim/nsclaim-operator/internal/credentials"
)

// TestDiscover: a configured server wins; the CA comes from the CA file named, else from the operator's
// own connection (its CA file, then its CA data); an unreadable CA file is an error that says so. None
// of these cases reads the API server.
func TestDiscover(t *testing.T) {
	t.Setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1") // as in a Pod: the Service's address is in-cluster
	dir := t.TempDir()
	named, own := filepath.Join(dir, "named.crt"), filepath.Join(dir, "own.crt")
	for f, data := range map[string]string{named: "named CA", own: "own CA"} {
		if err := os.WriteFile(f, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name, server, caFile string
		cfg                  rest.Config
		wantServer           string
		wantSource           credentials.ServerSource
		wantCA, wantErr      string
	}{
		{name: "configured, CA file named", server: "https://api.example.com:6443", caFile: named,
			cfg: rest.Config{Host: "https://10.0.0.1:443"}, wantServer: "https://api.example.com:6443", wantSource: credentials.ServerConfigured, wantCA: "named CA"},
		{name: "own connection, its CA file", cfg: rest.Config{Host: "https://api.example.com:6443", TLSClientConfig: rest.TLSClientConfig{CAFile: own}},
			wantServer: "https://api.example.com:6443", wantSource: credentials.ServerOwnConnection, wantCA: "own CA"},
		{name: "own connection, its CA data", cfg: rest.Config{Host: "https://api.example.com:6443", TLSClientConfig: rest.TLSClientConfig{CAData: []byte("inline CA")}},
			wantServer: "https://api.example.com:6443", wantSource: credentials.ServerOwnConnection, wantCA: "inline CA"},
		{name: "CA file unreadable", server: "https://api.example.com:6443", caFile: filepath.Join(dir, "absent.crt"),
			cfg: rest.Config{Host: "https://api.example.com:6443"}, wantErr: "reading CA bundle for issued kubeconfigs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ep, err := Discover(context.Background(), &tc.cfg, tc.server, tc.caFile, logr.Discard())
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Discover error = %v, want one saying %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if ep.Server != tc.wantServer || ep.Source != tc.wantSource || string(ep.CAData) != tc.wantCA {
				t.Errorf("Discover = %s (%s, CA %q), want %s (%s, CA %q)", ep.Server, ep.Source, ep.CAData, tc.wantServer, tc.wantSource, tc.wantCA)
			}
		})
	}
}
