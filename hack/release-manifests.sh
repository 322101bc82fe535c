#!/usr/bin/env bash
# Renders the manifests a release publishes into DIR (make release-manifests; hack/test-release.sh):
#   install.yaml        config/release: CRDs, RBAC, the manager's Deployment (image as config/manager
#                       sets it: make release-manifests sets IMG there first), its metrics Service; no fence
#   fence.yaml          config/fence/validating: the admission fence the operator requires (Kubernetes 1.30+)
#   fence-keyless.yaml  config/fence/keyless: the creator stamp and the finalizer at CREATE (Kubernetes 1.36+)
#   monitoring.yaml     config/monitoring: ServiceMonitor and PrometheusRule (Prometheus Operator CRDs)
# Usage: hack/release-manifests.sh DIR      Environment: KUSTOMIZE (<repo>/bin/kustomize)
set -euo pipefail
REPO_ROOT=$(cd "$(dirname "$0")/.." && pwd)
KUSTOMIZE=${KUSTOMIZE:-$REPO_ROOT/bin/kustomize}
DIR=${1:?usage: $0 DIR}
mkdir -p "$DIR"
"$KUSTOMIZE" build "$REPO_ROOT/config/release" >"$DIR/install.yaml"
"$KUSTOMIZE" build "$REPO_ROOT/config/fence/validating" >"$DIR/fence.yaml"
"$KUSTOMIZE" build "$REPO_ROOT/config/fence/keyless" >"$DIR/fence-keyless.yaml"
"$KUSTOMIZE" build "$REPO_ROOT/config/monitoring" >"$DIR/monitoring.yaml"
