//go:build tools

// Package tools pins the Prometheus Operator's API types (monitoring.coreos.com/v1), from which
// hack/monitoring-crds.sh generates its CRDs with controller-gen as the Prometheus Operator does
// (its root module, which ships the generated YAML, is not served by the module proxy).
package tools

import _ "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
