#!/usr/bin/env bash
# Sourced by hack/test-fleet.sh and hack/bench-fleet.sh: a fleet hub and three member clusters, each a
# local control plane of its own (hack/local-cluster.sh with its own state directory and ports). Every
# member runs the operator as today (its own fence, its own ServiceAccount, hack/local-operator.sh);
# the hub runs the same binary with --fleet-hub. No member is registered on the hub: the caller does
# that (member Secrets of the hub's identity there, config/fleet/member.yaml, never admin).
# Expects REPO_ROOT; reads FLEET_DIR, FLEET_PORT_BASE (cluster i uses FLEET_PORT_BASE+100*i+{43,57,79,80,81,44}),
#   KUBE_BIN_DIR, MANAGER_BIN (built here), HUB_ARGS (extra flags of the hub).
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

# fleet_down stops every operator and control plane of the fleet.
fleet_down() {
  for i in "${!CLUSTERS[@]}"; do
    in_cluster "$i" "$REPO_ROOT/hack/local-operator.sh" stop >/dev/null 2>&1 || true
    in_cluster "$i" "$REPO_ROOT/hack/local-cluster.sh" down >/dev/null 2>&1 || true
  done
}

# fleet_up builds the manager and starts the four control planes, the members' operators and the hub.
fleet_up() {
  mkdir -p "$FLEET_DIR"
  go build -o "$MANAGER_BIN" "$REPO_ROOT/cmd"
  for i in "${!CLUSTERS[@]}"; do
    in_cluster "$i" "$REPO_ROOT/hack/local-cluster.sh" reset >/dev/null
    in_cluster "$i" "$REPO_ROOT/hack/local-cluster.sh" up >/dev/null
  done
  # Members: the operator as today with seeds on (the seed namespace nsclaim-seeds and config/seeds'
  # Role: a fleet's seeds come from each member's own seed namespace, docs/fleet.md), and the hub's
  # identity (config/fleet/member.yaml).
  local i dir hub
  for i in 1 2 3; do
    dir=$FLEET_DIR/${CLUSTERS[$i]}
    "$KUBECTL" --kubeconfig "$dir/kubeconfig" create namespace nsclaim-seeds >/dev/null
    "$REPO_ROOT/bin/kustomize" build "$REPO_ROOT/config/seeds" | "$KUBECTL" --kubeconfig "$dir/kubeconfig" apply --server-side -f - >/dev/null
    in_cluster "$i" OPERATOR_ARGS="--seed-namespace=nsclaim-seeds" "$REPO_ROOT/hack/local-operator.sh" start >/dev/null
    "$KUBECTL" --kubeconfig "$dir/kubeconfig" apply --server-side -f "$REPO_ROOT/config/fleet/member.yaml" >/dev/null
    in_cluster "$i" "$REPO_ROOT/hack/local-cluster.sh" sa-kubeconfig nsclaim-fleet fleet-hub 4h > "$dir/hub-identity.kubeconfig"
  done
  # The hub: the same binary with --fleet-hub, under the operator's ServiceAccount and config/fleet/hub_role.yaml.
  hub=$FLEET_DIR/hub
  in_cluster 0 "$REPO_ROOT/hack/local-operator.sh" install >/dev/null
  "$KUBECTL" --kubeconfig "$hub/kubeconfig" apply --server-side -f "$REPO_ROOT/config/fleet/hub_role.yaml" >/dev/null
  in_cluster 0 OPERATOR_ARGS="--fleet-hub --leader-elect=false ${HUB_ARGS:-}" "$REPO_ROOT/hack/local-operator.sh" start >/dev/null
}
