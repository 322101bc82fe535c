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

// Package kubeconfigserver finds, at start, where the kubeconfigs the operator hands out point (the API
// server's address and CA: configured, the operator's own, the one the cluster publishes in
// kube-public/cluster-info, or the in-cluster address; credentials.ChooseServer decides) and reports it
// (a gauge, the KubeconfigServerReachable condition of the OperatorCondition, a log line).
package kubeconfigserver

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nsclaim/nsclaim-operator/internal/credentials"
	"github.com/nsclaim/nsclaim-operator/internal/monitoring"
	"github.com/nsclaim/nsclaim-operator/internal/olmcondition"
)

// Condition is the OperatorCondition type that says whether handed kubeconfigs name an
// address clients outside the cluster reach.
const Condition = "KubeconfigServerReachable"

// Report says where handed kubeconfigs point: the gauge always; when the address is
// in-cluster only, a warning in log and Condition False with reason InClusterOnly
// and what to set; otherwise the condition True with the address's source.
func Report(ctx context.Context, r *olmcondition.Reporter, ep credentials.Endpoint, log logr.Logger) {
	monitoring.SetKubeconfigServerInClusterOnly(ep.InClusterOnly())
	status, msg := metav1.ConditionTrue, fmt.Sprintf("Handed kubeconfigs name %s", ep.Server)
	if ep.InClusterOnly() {
		status, msg = metav1.ConditionFalse, fmt.Sprintf("Handed kubeconfigs name %s, which only clients inside the cluster reach; "+
			"set NSCLAIM_KUBECONFIG_SERVER (the Subscription's spec.config.env) to the API server's external address", ep.Server)
		log.Info("WARNING: "+msg, "kubeconfigServer", ep.Server)
	}
	if err := r.Set(ctx, Condition, status, string(ep.Source), msg); err != nil {
		log.Error(err, "Cannot set the KubeconfigServerReachable condition on the OperatorCondition")
	}
}

// Discover returns the API server URL and CA for issued kubeconfigs (credentials.ChooseServer):
// the configured ones; or the operator's own when that is not an in-cluster address; or, in a Pod, the
// address the cluster publishes in kube-public/cluster-info; or the in-cluster address, flagged so
// that the operator says so (OperatorCondition, metric, an Event on each claim).
func Discover(ctx context.Context, cfg *rest.Config, server, caFile string, log logr.Logger) (credentials.Endpoint, error) {
	serviceHost := os.Getenv("KUBERNETES_SERVICE_HOST")
	var published string
	var publishedCA []byte
	if server == "" && credentials.InClusterAddress(cfg.Host, serviceHost) {
		published, publishedCA = clusterInfoServer(ctx, cfg, log)
	}
	ep := credentials.Endpoint{CAData: cfg.CAData}
	ep.Server, ep.Source = credentials.ChooseServer(server, cfg.Host, serviceHost, published)
	if ep.Source == credentials.ServerClusterInfo && len(publishedCA) > 0 && caFile == "" {
		ep.CAData = publishedCA
		return ep, nil
	}
	if caFile == "" {
		caFile = cfg.CAFile
	}
	if caFile != "" {
		data, err := os.ReadFile(caFile)
		if err != nil {
			return ep, fmt.Errorf("reading CA bundle for issued kubeconfigs: %w", err)
		}
		ep.CAData = data
	}
	return ep, nil
}

// clusterInfoServer reads the server and CA that the cluster publishes for outside clients in
// ConfigMap kube-public/cluster-info; empty when there is none or it cannot be read.
func clusterInfoServer(ctx context.Context, cfg *rest.Config, log logr.Logger) (string, []byte) {
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		return "", nil
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	cm := &corev1.ConfigMap{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: "kube-public", Name: "cluster-info"}, cm); err != nil {
		log.Info("No address published for outside clients in kube-public/cluster-info", "error", err.Error())
		return "", nil
	}
	server, ca, err := credentials.ClusterInfoServer([]byte(cm.Data[credentials.ClusterInfoKubeconfigKey]))
	if err != nil {
		log.Info("ConfigMap kube-public/cluster-info has no usable kubeconfig", "error", err.Error())
		return "", nil
	}
	return server, ca
}
