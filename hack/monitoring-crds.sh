#!/usr/bin/env bash
# The Prometheus Operator's CRDs (monitoring.coreos.com/v1: ServiceMonitor, PrometheusRule, PodMonitor,
# Probe, Prometheus, Alertmanager, ThanosRuler) generated from its API types, the module pinned in
# hack/tools/monitoring-crds/go.mod, by controller-gen as the Prometheus Operator generates them (its
# root module, which carries the generated YAML, is not served by the module proxy). Written once per
# version into OUTDIR (default <repo>/bin/monitoring-crds-<version>); prints OUTDIR.
# Usage: hack/monitoring-crds.sh [OUTDIR]      Environment: CONTROLLER_GEN (<repo>/bin/controller-gen)
set -euo pipefail
REPO_ROOT=$(cd "$(dirname "$0")/.." && pwd)
mod=github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring
ver=$(go -C "$REPO_ROOT/hack/tools/monitoring-crds" list -m -f '{{.Version}}' "$mod")
out=$(realpath -m "${1:-$REPO_ROOT/bin/monitoring-crds-$ver}")
if [[ ! -f $out/monitoring.coreos.com_servicemonitors.yaml ]]; then
  rm -rf "$out.tmp"
  (cd "$REPO_ROOT/hack/tools/monitoring-crds" &&
    "${CONTROLLER_GEN:-$REPO_ROOT/bin/controller-gen}" crd:allowDangerousTypes=true,maxDescLen=0 paths="$mod/v1" output:crd:dir="$out.tmp")
  rm -rf "$out" && mv "$out.tmp" "$out"
fi
echo "$out"
