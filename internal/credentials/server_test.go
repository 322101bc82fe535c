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

package credentials

import "testing"

func TestChooseServer(t *testing.T) {
	tests := []struct {
		name                                  string
		configured, own, service, clusterInfo string
		want                                  string
		source                                ServerSource
	}{
		{name: "the admin's setting wins", configured: "https://k8s.example.com", own: "https://10.96.0.1:443", service: "10.96.0.1",
			clusterInfo: "https://public:6443", want: "https://k8s.example.com", source: ServerConfigured},
		{name: "outside the cluster, the operator's own address", own: "https://127.0.0.1:6443", want: "https://127.0.0.1:6443", source: ServerOwnConnection},
		{name: "in a Pod, the published address", own: "https://10.96.0.1:443", service: "10.96.0.1", clusterInfo: "https://192.0.2.10:6443",
			want: "https://192.0.2.10:6443", source: ServerClusterInfo},
		{name: "in a Pod with nothing published: in-cluster only, flagged", own: "https://10.96.0.1:443", service: "10.96.0.1",
			want: "https://10.96.0.1:443", source: ServerInClusterOnly},
		{name: "a published address that is itself in-cluster is no better", own: "https://10.96.0.1:443", service: "10.96.0.1",
			clusterInfo: "https://kubernetes.default.svc", want: "https://10.96.0.1:443", source: ServerInClusterOnly},
		{name: "a cluster-local name is in-cluster even outside a Pod", own: "https://kubernetes.default.svc.cluster.local:443",
			want: "https://kubernetes.default.svc.cluster.local:443", source: ServerInClusterOnly},
		{name: "an IPv6 service address", own: "https://[fd00::1]:443", service: "fd00::1", clusterInfo: "https://[2001:db8::5]:6443",
			want: "https://[2001:db8::5]:6443", source: ServerClusterInfo},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, source := ChooseServer(tt.configured, tt.own, tt.service, tt.clusterInfo)
			if got != tt.want || source != tt.source {
				t.Fatalf("ChooseServer = %q, %s; want %q, %s", got, source, tt.want, tt.source)
			}
		})
	}
}

func TestClusterInfoServer(t *testing.T) {
	published := []byte(`apiVersion: v1
kind: Config
clusters:
- name: ""
  cluster:
    server: https://192.0.2.10:6443
    certificate-authority-data: Q0E=
`)
	server, ca, err := ClusterInfoServer(published)
	if err != nil || server != "https://192.0.2.10:6443" || string(ca) != "CA" {
		t.Fatalf("ClusterInfoServer = %q, %q, %v", server, ca, err)
	}
	if _, _, err := ClusterInfoServer([]byte("apiVersion: v1\nkind: Config\n")); err == nil {
		t.Fatal("a kubeconfig without a cluster gave a server")
	}
	if _, _, err := ClusterInfoServer([]byte("{not yaml")); err == nil {
		t.Fatal("garbage gave a server")
	}
}
