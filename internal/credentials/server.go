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

import (
	"errors"
	"net"
	"net/url"
	"strings"

	"k8s.io/client-go/tools/clientcmd"
)

// ServerSource says where the API server address written into handed kubeconfigs came from.
type ServerSource string

const (
	// ServerConfigured: the admin set it (--kubeconfig-server, NSCLAIM_KUBECONFIG_SERVER).
	ServerConfigured ServerSource = "Configured"
	// ServerOwnConnection: the address the operator itself uses, which is not an in-cluster one (the
	// operator runs outside the cluster, with a kubeconfig).
	ServerOwnConnection ServerSource = "OwnConnection"
	// ServerClusterInfo: the address the cluster publishes for outside clients in ConfigMap
	// kube-public/cluster-info (kubeadm and others publish it).
	ServerClusterInfo ServerSource = "ClusterInfo"
	// ServerInClusterOnly: nothing better is known; the address is the in-cluster one, which a
	// pipeline outside the cluster (a hosted CI runner) cannot reach.
	ServerInClusterOnly ServerSource = "InClusterOnly"
)

// ChooseServer decides the API server address of handed kubeconfigs. configured (set by the admin)
// wins. Otherwise the operator's own address (own) is used unless it is an in-cluster one (the
// kubernetes Service, named by serviceHost, the KUBERNETES_SERVICE_HOST of a Pod, or a cluster-local
// name); then the address the cluster publishes for outside clients (clusterInfo, empty when there is
// none) is used; otherwise own, flagged ServerInClusterOnly.
func ChooseServer(configured, own, serviceHost, clusterInfo string) (string, ServerSource) {
	switch {
	case configured != "":
		return configured, ServerConfigured
	case !InClusterAddress(own, serviceHost):
		return own, ServerOwnConnection
	case clusterInfo != "" && !InClusterAddress(clusterInfo, serviceHost):
		return clusterInfo, ServerClusterInfo
	default:
		return own, ServerInClusterOnly
	}
}

// InClusterAddress reports whether server (a URL or host[:port]) names the API server by an address
// that only resolves or routes inside the cluster: the kubernetes Service's IP (serviceHost, empty
// outside a Pod) or a name under .svc or .cluster.local, or kubernetes.default.
func InClusterAddress(server, serviceHost string) bool {
	host := server
	if u, err := url.Parse(server); err == nil && u.Host != "" {
		host = u.Host
	}
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	if host == "" {
		return false
	}
	if serviceHost != "" && host == strings.ToLower(serviceHost) {
		return true
	}
	return host == "kubernetes" || host == "kubernetes.default" || strings.HasSuffix(host, ".svc") ||
		strings.HasSuffix(host, ".cluster.local")
}

// ClusterInfoKubeconfigKey is the key of ConfigMap kube-public/cluster-info that holds a kubeconfig
// naming the API server for outside clients (without credentials).
const ClusterInfoKubeconfigKey = "kubeconfig"

// ClusterInfoServer returns the server and CA of the kubeconfig published in kube-public/cluster-info.
func ClusterInfoServer(kubeconfig []byte) (string, []byte, error) {
	cfg, err := clientcmd.Load(kubeconfig)
	if err != nil {
		return "", nil, err
	}
	for _, c := range cfg.Clusters {
		if c != nil && c.Server != "" {
			return c.Server, c.CertificateAuthorityData, nil
		}
	}
	return "", nil, errors.New("the kubeconfig names no cluster server")
}
