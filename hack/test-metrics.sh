#!/usr/bin/env bash
# make test-metrics: a real Prometheus (Debian's 2.42.0, from `make prometheus`) scrapes the manager
# over HTTPS with a ServiceAccount token and the test (test/metrics) checks that nsclaim's series
# appear and move as claims come and go. Starts its own local cluster and manager (own state dir and
# ports), builds its own manager binary, and stops everything it started, pass or fail.
# Environment (defaults in brackets): METRICS_CLUSTER_DIR [tmp/metrics-cluster], METRICS_APISERVER_PORT
#   [30443], METRICS_ETCD_CLIENT_PORT [26379], METRICS_ETCD_PEER_PORT [26380],
#   METRICS_CONTROLLER_MANAGER_PORT [24257], METRICS_OPERATOR_PROBE_PORT [20281],
#   METRICS_OPERATOR_METRICS_PORT [20643], PROMETHEUS_ADDR [127.0.0.1:19090],
#   PROMETHEUS [bin/prometheus-2.42.0/prometheus], MANAGER_BIN [tmp/metrics/manager, built here].
set -euo pipefail
REPO_ROOT=$(cd "$(dirname "$0")/.." && pwd)
export LOCAL_CLUSTER_DIR=${METRICS_CLUSTER_DIR:-$REPO_ROOT/tmp/metrics-cluster}
export APISERVER_PORT=${METRICS_APISERVER_PORT:-30443} ETCD_CLIENT_PORT=${METRICS_ETCD_CLIENT_PORT:-26379}
export ETCD_PEER_PORT=${METRICS_ETCD_PEER_PORT:-26380} CONTROLLER_MANAGER_PORT=${METRICS_CONTROLLER_MANAGER_PORT:-24257}
export OPERATOR_PROBE_PORT=${METRICS_OPERATOR_PROBE_PORT:-20281} OPERATOR_METRICS_PORT=${METRICS_OPERATOR_METRICS_PORT:-20643}
export KUBE_BIN_DIR=${KUBE_BIN_DIR:-$REPO_ROOT/bin/k8s/1.37.1-linux-amd64}
export PROMETHEUS=${PROMETHEUS:-$REPO_ROOT/bin/prometheus-2.42.0/prometheus}
export PROMETHEUS_ADDR=${PROMETHEUS_ADDR:-127.0.0.1:19090}
export MANAGER_BIN=${MANAGER_BIN:-$REPO_ROOT/tmp/metrics/manager}

cleanup() {
  "$REPO_ROOT/hack/local-operator.sh" stop || true
  "$REPO_ROOT/hack/local-cluster.sh" down || true
}
trap cleanup EXIT
[ -x "$PROMETHEUS" ] || { echo "$PROMETHEUS not found: run 'make prometheus'" >&2; exit 1; }
mkdir -p "$(dirname "$MANAGER_BIN")"
go build -o "$MANAGER_BIN" "$REPO_ROOT/cmd"
"$REPO_ROOT/hack/local-cluster.sh" reset >/dev/null
"$REPO_ROOT/hack/local-cluster.sh" up
"$REPO_ROOT/hack/local-operator.sh" start
status=0
KUBECONFIG="$LOCAL_CLUSTER_DIR/kubeconfig" NSCLAIM_METRICS_ADDR="127.0.0.1:$OPERATOR_METRICS_PORT" \
  NSCLAIM_TEST_LOG_DIR="$LOCAL_CLUSTER_DIR/logs" \
  go test "$REPO_ROOT/test/metrics/" -run TestPrometheusScrapesTheOperator -count=1 -v -timeout 15m \
  > "$LOCAL_CLUSTER_DIR/metrics-test.log" 2>&1 || status=$?
grep -E -- '^(--- |PASS|FAIL|ok)|^\s+--- ' "$LOCAL_CLUSTER_DIR/metrics-test.log" || true
if [ "$status" -ne 0 ]; then
  grep -E -B2 -A12 -- '--- FAIL' "$LOCAL_CLUSTER_DIR/metrics-test.log" >&2 || true
  echo "operator log tail:" >&2; tail -20 "$LOCAL_CLUSTER_DIR/logs/operator.log" >&2
fi
exit "$status"
