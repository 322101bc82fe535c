#!/usr/bin/env bash
# make test-failover: two manager processes (same binary, both under the operator's ServiceAccount,
# different probe and metrics ports) against one local cluster; the test (test/failover) checks that
# only the leader reconciles, kills the leader with SIGKILL and then stops the next one with SIGTERM,
# creates claims during each handover, checks they all become Ready, and prints the measured failover
# times (also written to $LOCAL_CLUSTER_DIR/failover.txt). Starts its own cluster (own state dir and
# ports), builds its own manager binary, and stops everything it started, pass or fail.
# Environment (defaults in brackets): FAILOVER_CLUSTER_DIR [tmp/failover-cluster],
#   FAILOVER_APISERVER_PORT [32443], FAILOVER_ETCD_CLIENT_PORT [28379], FAILOVER_ETCD_PEER_PORT [28380],
#   FAILOVER_CONTROLLER_MANAGER_PORT [26257], FAILOVER_PROBE_PORT_A/_B [20281/20381],
#   FAILOVER_METRICS_PORT_A/_B [20643/20743], MANAGER_BIN [tmp/metrics/manager, built here],
#   FAILOVER_RUN [all tests: passed to go test -run].
set -euo pipefail
REPO_ROOT=$(cd "$(dirname "$0")/.." && pwd)
export LOCAL_CLUSTER_DIR=${FAILOVER_CLUSTER_DIR:-$REPO_ROOT/tmp/failover-cluster}
export APISERVER_PORT=${FAILOVER_APISERVER_PORT:-32443} ETCD_CLIENT_PORT=${FAILOVER_ETCD_CLIENT_PORT:-28379}
export ETCD_PEER_PORT=${FAILOVER_ETCD_PEER_PORT:-28380} CONTROLLER_MANAGER_PORT=${FAILOVER_CONTROLLER_MANAGER_PORT:-26257}
export FAILOVER_PROBE_PORT_A=${FAILOVER_PROBE_PORT_A:-20281} FAILOVER_PROBE_PORT_B=${FAILOVER_PROBE_PORT_B:-20381}
export FAILOVER_METRICS_PORT_A=${FAILOVER_METRICS_PORT_A:-20643} FAILOVER_METRICS_PORT_B=${FAILOVER_METRICS_PORT_B:-20743}
export KUBE_BIN_DIR=${KUBE_BIN_DIR:-$REPO_ROOT/bin/k8s/1.37.1-linux-amd64}
export MANAGER_BIN=${MANAGER_BIN:-$REPO_ROOT/tmp/metrics/manager}

# The test kills the managers it starts; the cluster is stopped here.
cleanup() { "$REPO_ROOT/hack/local-cluster.sh" down || true; }
trap cleanup EXIT
mkdir -p "$(dirname "$MANAGER_BIN")"
go build -o "$MANAGER_BIN" "$REPO_ROOT/cmd"
"$REPO_ROOT/hack/local-cluster.sh" reset >/dev/null
"$REPO_ROOT/hack/local-cluster.sh" up
"$REPO_ROOT/hack/local-operator.sh" install
"$REPO_ROOT/hack/local-cluster.sh" sa-kubeconfig nsclaim-operator-system nsclaim-operator-controller-manager 2h \
  > "$LOCAL_CLUSTER_DIR/operator.kubeconfig"
status=0
KUBECONFIG="$LOCAL_CLUSTER_DIR/kubeconfig" NSCLAIM_OPERATOR_KUBECONFIG="$LOCAL_CLUSTER_DIR/operator.kubeconfig" \
  NSCLAIM_KUBECONFIG_SERVER="https://127.0.0.1:$APISERVER_PORT" NSCLAIM_TEST_LOG_DIR="$LOCAL_CLUSTER_DIR/logs" \
  FAILOVER_RESULT_FILE="$LOCAL_CLUSTER_DIR/failover.txt" \
  go test "$REPO_ROOT/test/failover/" -count=1 -v -timeout 15m ${FAILOVER_RUN:+-run "$FAILOVER_RUN"} > "$LOCAL_CLUSTER_DIR/failover-test.log" 2>&1 || status=$?
grep -E -- '^(--- |PASS|FAIL|ok)|^\s+--- ' "$LOCAL_CLUSTER_DIR/failover-test.log" || true
if [ "$status" -eq 0 ]; then cat "$LOCAL_CLUSTER_DIR/failover.txt"; else
  grep -E -A20 -- '--- FAIL' "$LOCAL_CLUSTER_DIR/failover-test.log" >&2 || true
  echo "manager logs: $LOCAL_CLUSTER_DIR/logs/{a,b,a2}-*.log" >&2
fi
exit "$status"
