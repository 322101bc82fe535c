#!/usr/bin/env bash
# make test-fleet: a fleet hub and three member clusters, each a local control plane of its own
# (hack/local-cluster.sh with its own state directory and ports). Every member runs the operator as
# today (its own fence, its own ServiceAccount, hack/local-operator.sh); the hub runs the same binary
# with --fleet-hub and knows the members only as kubeconfig Secrets of the hub's identity there
# (config/fleet/member.yaml, never admin). The test (test/fleet) acts as a pipeline identity on the hub
# and checks placement, NotReady and fence-less members, a member away and back, and the invariants
# on every member. Stops everything it started, pass or fail.
# Environment: FLEET_DIR [tmp/fleet], FLEET_PORT_BASE [30000] (cluster i uses FLEET_PORT_BASE+100*i+{43,57,79,80,81,44}),
#   MANAGER_BIN [tmp/fleet/manager, built here], FLEET_SHARE_CLAIMS [30: the shares scenario's claim count; the
#   issue's is 300, and go test's timeout grows by a minute per 15 claims, for their release].
set -euo pipefail
REPO_ROOT=$(cd "$(dirname "$0")/.." && pwd)
FLEET_DIR=$(realpath -m "${FLEET_DIR:-$REPO_ROOT/tmp/fleet}")
BASE=${FLEET_PORT_BASE:-30000}
export KUBE_BIN_DIR=${KUBE_BIN_DIR:-$REPO_ROOT/bin/k8s/1.37.1-linux-amd64}
export MANAGER_BIN=${MANAGER_BIN:-$FLEET_DIR/manager}
KUBECTL="$KUBE_BIN_DIR/kubectl"
CLUSTERS=(hub m1 m2 m3)

# cluster_env I: the environment of hack/local-cluster.sh and hack/local-operator.sh for cluster I.
cluster_env() {
  local p=$((BASE + 100 * $1))
  echo "LOCAL_CLUSTER_DIR=$FLEET_DIR/${CLUSTERS[$1]} APISERVER_PORT=$((p + 43)) CONTROLLER_MANAGER_PORT=$((p + 57))" \
    "ETCD_CLIENT_PORT=$((p + 79)) ETCD_PEER_PORT=$((p + 80)) OPERATOR_PROBE_PORT=$((p + 81)) OPERATOR_METRICS_PORT=$((p + 44))"
}
in_cluster() { local i=$1; shift; env $(cluster_env "$i") "$@"; }

cleanup() {
  for i in "${!CLUSTERS[@]}"; do
    in_cluster "$i" "$REPO_ROOT/hack/local-operator.sh" stop >/dev/null 2>&1 || true
    in_cluster "$i" "$REPO_ROOT/hack/local-cluster.sh" down >/dev/null 2>&1 || true
  done
}
trap cleanup EXIT
mkdir -p "$FLEET_DIR"
go build -o "$MANAGER_BIN" "$REPO_ROOT/cmd"
for i in "${!CLUSTERS[@]}"; do
  in_cluster "$i" "$REPO_ROOT/hack/local-cluster.sh" reset >/dev/null
  in_cluster "$i" "$REPO_ROOT/hack/local-cluster.sh" up >/dev/null
done

# Members: the operator as today, and the hub's identity (config/fleet/member.yaml).
for i in 1 2 3; do
  dir=$FLEET_DIR/${CLUSTERS[$i]}
  in_cluster "$i" "$REPO_ROOT/hack/local-operator.sh" start >/dev/null
  "$KUBECTL" --kubeconfig "$dir/kubeconfig" apply --server-side -f "$REPO_ROOT/config/fleet/member.yaml" >/dev/null
  in_cluster "$i" "$REPO_ROOT/hack/local-cluster.sh" sa-kubeconfig nsclaim-fleet fleet-hub 4h > "$dir/hub-identity.kubeconfig"
done

# The hub: the same binary with --fleet-hub, under the operator's ServiceAccount and config/fleet/hub_role.yaml.
hub=$FLEET_DIR/hub
in_cluster 0 "$REPO_ROOT/hack/local-operator.sh" install >/dev/null
"$KUBECTL" --kubeconfig "$hub/kubeconfig" apply --server-side -f "$REPO_ROOT/config/fleet/hub_role.yaml" >/dev/null
in_cluster 0 OPERATOR_ARGS="--fleet-hub --leader-elect=false" "$REPO_ROOT/hack/local-operator.sh" start >/dev/null

status=0
start=$(date +%s)
FLEET_DIR="$FLEET_DIR" KUBE_BIN_DIR="$KUBE_BIN_DIR" FLEET_PORT_BASE="$BASE" \
  go test "$REPO_ROOT/test/fleet/" -count=1 -v -timeout "$((15 + ${FLEET_SHARE_CLAIMS:-30} / 15))m" > "$FLEET_DIR/fleet-test.log" 2>&1 || status=$?
grep -E -- '^(--- |PASS|FAIL|ok)|^\s+--- |fleet_test.go' "$FLEET_DIR/fleet-test.log" || true
echo "test/fleet took $(( $(date +%s) - start )) s"
if [ "$status" -ne 0 ]; then
  echo "logs: $FLEET_DIR/{hub,m1,m2,m3}/logs/operator.log" >&2
fi
exit "$status"
