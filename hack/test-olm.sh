#!/usr/bin/env bash
# Copyright 2026 The nsclaim Authors.
#
# Licensed under the Apache License, Version 2.0 (the "License");
# you may not use this file except in compliance with the License.
# You may obtain a copy of the License at
#
#     http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS,
# WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
# See the License for the specific language governing permissions and
# limitations under the License.

# make test-olm: install nsclaim through real OLM, upgrade it while claims are live, uninstall it, on a
# fresh local cluster (hack/local-cluster.sh), with no container runtime:
#   - OLM's olm and catalog operators (bin/olm, bin/catalog, built at OLM_VERSION) run as processes;
#   - the previous release, PREVIOUS_VERSION, is built from its commit in hack/releases.txt
#     (`hack/releases.sh build`: a `git archive` of the commit, its manager with `go build ./cmd` and its
#     bundle with its own `make bundle`), offline; VERSION is this tree (its manager and ./bundle);
#   - `opm serve` serves a file-based catalog (hack/catalog.sh) that offers PREVIOUS_VERSION first and,
#     when the test asks, PREVIOUS_VERSION and VERSION; bundles are inline, so OLM unpacks no image;
#   - kwok plays the node kwok-node: the Pods of the Deployment OLM creates are bound to it (the test
#     plays the scheduler) and reported Running, so the CSV can reach Succeeded; nothing runs in them;
#   - the manager runs as a local process with a token of the ServiceAccount OLM created and the
#     environment and arguments of the Deployment OLM created, so the CSV's permissions are what is
#     exercised. The binary is the one of the CSV that owns the Deployment (label olm.owner): the
#     previous release's for its CSV, the tree's (built from ./cmd) for VERSION's. It is replaced after
#     the upgrade, as a new Pod would be.
#   - the admission fence (config/fence), which a bundle cannot carry, is applied as the CSV's
#     description tells an admin to: the previous release's first, this tree's when the catalog offers
#     the upgrade; the manager requires it and provisions nothing without it. Its ServiceAccount-name
#     match is checked against the serviceAccountName of every CSV in the catalog.
#   - OLM's OLMConfig "cluster" disables copied CSVs (spec.features.disableCopiedCSVs), as docs/olm.md
#     tells an admin to: in AllNamespaces mode OLM otherwise writes a copy of the operator's CSV into
#     every namespace, each tenant namespace included. TEST_OLM_COPIED_CSVS=enabled leaves them on
#     (to measure the cost); test/olm checks either way (NSCLAIM_OLM_COPIED_CSVS).
# test/olm (go test) then subscribes, approves the InstallPlans and checks; see its package comment.
# Everything started here is stopped on exit, pass or fail.
#
# Usage: hack/test-olm.sh                 run the test
#        hack/test-olm.sh offer-upgrade   (hook for test/olm) serve the catalog with VERSION too
#        hack/test-olm.sh manager start NAMESPACE DEPLOYMENT | manager stop
#                                         (hook for test/olm) run or stop the manager process
# Environment (defaults):
#   TEST_OLM_CLUSTER_DIR (<repo>/tmp/olm-cluster), TEST_OLM_APISERVER_PORT (29443),
#   TEST_OLM_ETCD_CLIENT_PORT (25379), TEST_OLM_ETCD_PEER_PORT (25380),
#   TEST_OLM_CONTROLLER_MANAGER_PORT (23257), TEST_OLM_CATALOG_PORT (17151, opm serve; it listens on
#   all interfaces), TEST_OLM_PROBE_PORT (20181), TEST_OLM_METRICS_PORT (20543),
#   MANAGER_BIN (<repo>/tmp/olm/manager, built here), VERSION (0.4.0), PREVIOUS_VERSION (0.3.0),
#   RELEASES_BUILD_DIR (where hack/releases.sh builds the previous release),
#   KWOK_VERSION (v0.8.0), TEST_OLM_COPIED_CSVS (disabled, or enabled), KUBE_BIN_DIR, and the tools
#   OPM, OLM, OLM_CATALOG, KWOK, KUSTOMIZE, OPERATOR_SDK, TOOLS_BIN (<repo>/bin/...).
# OLM's operators also try to serve health checks on :8080; when that port is taken they log an error
# and carry on.
set -euo pipefail
REPO_ROOT=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=lib/fence-identity.sh
source "$REPO_ROOT/hack/lib/fence-identity.sh"
SELF="$REPO_ROOT/hack/test-olm.sh"
export LOCAL_CLUSTER_DIR=${TEST_OLM_CLUSTER_DIR:-$REPO_ROOT/tmp/olm-cluster}
export APISERVER_PORT=${TEST_OLM_APISERVER_PORT:-29443} ETCD_CLIENT_PORT=${TEST_OLM_ETCD_CLIENT_PORT:-25379}
export ETCD_PEER_PORT=${TEST_OLM_ETCD_PEER_PORT:-25380} CONTROLLER_MANAGER_PORT=${TEST_OLM_CONTROLLER_MANAGER_PORT:-23257}
export KUBE_BIN_DIR=${KUBE_BIN_DIR:-$REPO_ROOT/bin/k8s/1.37.1-linux-amd64}
export VERSION=${VERSION:-0.4.0} PREVIOUS_VERSION=${PREVIOUS_VERSION:-0.3.0}
export MANAGER_BIN=${MANAGER_BIN:-$REPO_ROOT/tmp/olm/manager}
CATALOG_PORT=${TEST_OLM_CATALOG_PORT:-17151}
PROBE_PORT=${TEST_OLM_PROBE_PORT:-20181}
METRICS_PORT=${TEST_OLM_METRICS_PORT:-20543}
KWOK_VERSION=${KWOK_VERSION:-v0.8.0}
COPIED_CSVS=${TEST_OLM_COPIED_CSVS:-disabled}
OPM=${OPM:-$REPO_ROOT/bin/opm}
OLM=${OLM:-$REPO_ROOT/bin/olm}
OLM_CATALOG=${OLM_CATALOG:-$REPO_ROOT/bin/catalog}
KWOK=${KWOK:-$REPO_ROOT/bin/kwok}
export OPM KUSTOMIZE=${KUSTOMIZE:-$REPO_ROOT/bin/kustomize} OPERATOR_SDK=${OPERATOR_SDK:-$REPO_ROOT/bin/operator-sdk}
export TOOLS_BIN=${TOOLS_BIN:-$REPO_ROOT/bin}
STATE=$(realpath -m "$LOCAL_CLUSTER_DIR")
KUBECONFIG_ADMIN="$STATE/kubeconfig"
KUBECTL=("$KUBE_BIN_DIR/kubectl" --kubeconfig "$KUBECONFIG_ADMIN")
export KUBECACHEDIR="$STATE/kubecache"
NODE=kwok-node

log() { echo "test-olm: $*" >&2; }

running() { [ -f "$STATE/pids/$1.pid" ] && kill -0 "$(cat "$STATE/pids/$1.pid")" 2>/dev/null; }

# start NAME CMD... runs CMD in the background (own session) with its output in logs/NAME.log.
start() {
  local name=$1
  shift
  mkdir -p "$STATE/pids" "$STATE/logs"
  setsid "$@" >>"$STATE/logs/$name.log" 2>&1 </dev/null &
  echo $! >"$STATE/pids/$name.pid"
}

# stop NAME stops a process started by start: TERM, then KILL after 10s.
stop() {
  local name=$1 pid
  if running "$name"; then
    pid=$(cat "$STATE/pids/$name.pid")
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 1 20); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
    kill -KILL "$pid" 2>/dev/null || true
  fi
  rm -f "$STATE/pids/$name.pid"
}

# serve_catalog DIR serves the file-based catalog DIR with opm on CATALOG_PORT and waits until it listens.
serve_catalog() {
  stop opm
  start opm "$OPM" serve "$1" --port "$CATALOG_PORT" --pprof-addr "" --termination-log /dev/null
  for _ in $(seq 1 120); do
    if (exec 3<>"/dev/tcp/127.0.0.1/$CATALOG_PORT") 2>/dev/null; then return 0; fi
    running opm || break
    sleep 0.5
  done
  log "opm serve $1 is not listening on $CATALOG_PORT"; tail -20 "$STATE/logs/opm.log" >&2; return 1
}

# previous_release prints the directory of the previous release's build (hack/releases.sh build).
previous_release() { "$REPO_ROOT/hack/releases.sh" build "$PREVIOUS_VERSION"; }

# manager_bin NAMESPACE DEPLOYMENT prints the manager binary of the version whose CSV owns DEPLOYMENT
# (OLM's label olm.owner): the tree's for VERSION, the previous release's for PREVIOUS_VERSION.
manager_bin() {
  local ns=$1 deploy=$2 csv version dir
  csv=$("${KUBECTL[@]}" -n "$ns" get deployment "$deploy" -o jsonpath='{.metadata.labels.olm\.owner}')
  [ -n "$csv" ] || { log "deployment $ns/$deploy has no olm.owner label"; return 1; }
  version=$("${KUBECTL[@]}" -n "$ns" get csv "$csv" -o jsonpath='{.spec.version}')
  case $version in
    "$VERSION") echo "$MANAGER_BIN" ;;
    "$PREVIOUS_VERSION") dir=$(previous_release) && echo "$dir/manager" ;;
    *) log "CSV $csv is at version '$version', neither VERSION $VERSION nor PREVIOUS_VERSION $PREVIOUS_VERSION"; return 1 ;;
  esac
}

# manager_start NAMESPACE DEPLOYMENT runs the manager as a local process in place of DEPLOYMENT's Pod:
# the binary of the CSV that owns it (manager_bin), with a token of its ServiceAccount, its container's
# environment (values only; POD_NAMESPACE is the namespace) and its arguments, then local probe and
# metrics addresses. Waits for /readyz.
manager_start() {
  local ns=$1 deploy=$2 sa line bin
  local -a envs=() args=()
  manager_stop
  bin=$(manager_bin "$ns" "$deploy")
  sa=$("${KUBECTL[@]}" -n "$ns" get deployment "$deploy" -o jsonpath='{.spec.template.spec.serviceAccountName}')
  while IFS= read -r line; do [[ $line == *=?* ]] && envs+=("$line"); done < <("${KUBECTL[@]}" -n "$ns" get deployment "$deploy" \
    -o jsonpath='{range .spec.template.spec.containers[?(@.name=="manager")].env[*]}{.name}={.value}{"\n"}{end}')
  while IFS= read -r line; do [[ -n $line ]] && args+=("$line"); done < <("${KUBECTL[@]}" -n "$ns" get deployment "$deploy" \
    -o jsonpath='{range .spec.template.spec.containers[?(@.name=="manager")].args[*]}{@}{"\n"}{end}')
  (umask 077 && "$REPO_ROOT/hack/local-cluster.sh" sa-kubeconfig "$ns" "$sa" 2h >"$STATE/manager.kubeconfig")
  echo "--- manager $bin for $ns/$deploy as ServiceAccount $sa; env: ${envs[*]%%=*}; args: ${args[*]}" >>"$STATE/logs/manager.log"
  start manager env "${envs[@]}" POD_NAMESPACE="$ns" KUBECONFIG="$STATE/manager.kubeconfig" "$bin" "${args[@]}" \
    --health-probe-bind-address "127.0.0.1:$PROBE_PORT" --metrics-bind-address "127.0.0.1:$METRICS_PORT" \
    --kubeconfig-server "https://127.0.0.1:$APISERVER_PORT"
  for _ in $(seq 1 120); do
    curl -fsS "http://127.0.0.1:$PROBE_PORT/readyz" >/dev/null 2>&1 && { log "manager $bin running as $ns/$sa"; return 0; }
    running manager || break
    sleep 0.5
  done
  log "manager not ready"; tail -20 "$STATE/logs/manager.log" >&2; return 1
}

manager_stop() { stop manager; }

cleanup() {
  local name
  for name in manager opm kwok catalog olm; do stop "$name"; done
  "$REPO_ROOT/hack/local-cluster.sh" down >/dev/null 2>&1 || true
}

run_test() {
  trap cleanup EXIT
  local olm_dir kwok_dir prev status=0 t0=$SECONDS
  log "building the manager into $MANAGER_BIN"
  go build -o "$MANAGER_BIN" "$REPO_ROOT/cmd"
  log "building the previous release $PREVIOUS_VERSION from $("$REPO_ROOT/hack/releases.sh" commit "$PREVIOUS_VERSION") (once per commit)"
  prev=$(previous_release)
  log "previous release $PREVIOUS_VERSION: $prev ($(tail -1 "$prev/build.log"))"
  "$REPO_ROOT/hack/local-cluster.sh" reset >/dev/null 2>&1
  mkdir -p "$STATE/logs"
  "$REPO_ROOT/hack/catalog.sh" "$STATE/catalog-from" "$PREVIOUS_VERSION" >&2
  "$REPO_ROOT/hack/catalog.sh" "$STATE/catalog-to" "$PREVIOUS_VERSION" "$VERSION" >&2
  "$REPO_ROOT/hack/local-cluster.sh" up
  apply_fence "$prev/src" "$PREVIOUS_VERSION"

  olm_dir=$(go -C "$REPO_ROOT/hack/tools/olm" list -m -f '{{.Dir}}' github.com/operator-framework/operator-lifecycle-manager)
  "${KUBECTL[@]}" apply --server-side -f "$olm_dir/deploy/chart/crds/" >/dev/null
  "${KUBECTL[@]}" wait --for condition=established --timeout=60s -f "$olm_dir/deploy/chart/crds/" >/dev/null
  # PREVIOUS_VERSION's bundle carries a ServiceMonitor and a PrometheusRule: their kinds must be served
  # (stand-ins) for its install; offer-upgrade removes them, so VERSION installs without them.
  "${KUBECTL[@]}" apply --server-side -f "$REPO_ROOT/test/olm/monitoring-crds.yaml" >/dev/null
  "${KUBECTL[@]}" wait --for condition=established --timeout=60s -f "$REPO_ROOT/test/olm/monitoring-crds.yaml" >/dev/null
  apply_olm_config
  "${KUBECTL[@]}" create namespace olm >/dev/null
  start olm env KUBECONFIG="$KUBECONFIG_ADMIN" "$OLM" --namespace olm --writeStatusName "" --writePackageServerStatusName ""
  start catalog "$OLM_CATALOG" --kubeconfig "$KUBECONFIG_ADMIN" --namespace olm --writeStatusName ""

  kwok_dir=$(go mod download -json "sigs.k8s.io/kwok@$KWOK_VERSION" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')
  { cat "$REPO_ROOT/test/olm/kwok.yaml"; echo "---"; "$KUSTOMIZE" build "$kwok_dir/kustomize/stage/fast"; } >"$STATE/kwok.yaml"
  start kwok "$KWOK" --kubeconfig "$KUBECONFIG_ADMIN" --config "$STATE/kwok.yaml" --manage-single-node "$NODE" \
    --node-ip 127.0.0.1 --node-lease-duration-seconds 40
  "${KUBECTL[@]}" create -f - >/dev/null <<EOF
apiVersion: v1
kind: Node
metadata:
  name: $NODE
  annotations:
    kwok.x-k8s.io/node: fake
  labels:
    kubernetes.io/hostname: $NODE
    type: kwok
EOF
  "${KUBECTL[@]}" wait --for condition=Ready --timeout=60s "node/$NODE" >/dev/null
  for name in olm catalog; do running "$name" || { log "$name exited"; tail -20 "$STATE/logs/$name.log" >&2; return 1; }; done
  serve_catalog "$STATE/catalog-from"
  log "OLM, kwok and the catalog are up after $((SECONDS - t0))s"

  KUBECONFIG="$KUBECONFIG_ADMIN" NSCLAIM_OLM_CATALOG_ADDRESS="127.0.0.1:$CATALOG_PORT" \
    NSCLAIM_OLM_FROM_CSV="nsclaim-operator.v$PREVIOUS_VERSION" NSCLAIM_OLM_TO_CSV="nsclaim-operator.v$VERSION" \
    NSCLAIM_OLM_OFFER_UPGRADE_CMD="$SELF offer-upgrade" NSCLAIM_OLM_MANAGER_CMD="$SELF manager" NSCLAIM_OLM_BIND_NODE="$NODE" \
    NSCLAIM_OLM_COPIED_CSVS="$COPIED_CSVS" NSCLAIM_OLM_NO_MONITORING_CRDS=1 NSCLAIM_OLM_FROM_BUNDLE="$prev/bundle" NSCLAIM_OLM_TO_BUNDLE="$REPO_ROOT/bundle" go test "$REPO_ROOT/test/olm/" -count=1 -v -timeout 20m >"$STATE/olm-test.log" 2>&1 || status=$?
  grep -E -- '^(--- |PASS|FAIL|ok)|^\s+--- ' "$STATE/olm-test.log" || true
  if [ "$status" -ne 0 ]; then
    grep -E -A15 -- '_test.go:[0-9]+: *$|panic:' "$STATE/olm-test.log" | head -60 >&2 || true
    for name in manager catalog olm; do
      echo "--- $name log tail ($STATE/logs/$name.log):" >&2
      tail -15 "$STATE/logs/$name.log" >&2 || true
    done
  fi
  log "finished in $((SECONDS - t0))s"
  return "$status"
}

# apply_olm_config applies OLM's cluster-wide OLMConfig as docs/olm.md tells an admin to: no copied
# CSVs (unless TEST_OLM_COPIED_CSVS=enabled).
apply_olm_config() {
  case $COPIED_CSVS in
    disabled)
      "${KUBECTL[@]}" apply --server-side -f - >/dev/null <<EOF
apiVersion: operators.coreos.com/v1
kind: OLMConfig
metadata:
  name: cluster
spec:
  features:
    disableCopiedCSVs: true
EOF
      log "OLMConfig cluster: copied CSVs disabled" ;;
    enabled) log "OLMConfig cluster not applied: OLM copies CSVs into every namespace (TEST_OLM_COPIED_CSVS=enabled)" ;;
    *) log "TEST_OLM_COPIED_CSVS must be disabled or enabled, got: $COPIED_CSVS"; return 1 ;;
  esac
}

# apply_fence SRC WHAT applies SRC/config/fence, from a checkout of the release WHAT, as an admin would
# (kustomize build config/fence | kubectl apply --server-side -f -) and waits until the API server
# enforces it: an admin's dry run of a ServiceAccount labelled as nsclaim's is denied by the label guard.
apply_fence() {
  local src=$1 what=$2 fence out
  fence=$("$KUSTOMIZE" build "$src/config/fence")
  check_fence_identity "$fence" "$REPO_ROOT/bundle" "$(previous_release)/bundle"
  "${KUBECTL[@]}" apply --server-side -f - <<<"$fence" >/dev/null
  for _ in $(seq 1 60); do
    if ! out=$(printf 'apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: label-guard-probe\n  namespace: default\n  labels: {tenancy.nsclaim.dev/managed-by: nsclaim}\n' |
      "${KUBECTL[@]}" create --dry-run=server -f - 2>&1) && [[ $out == *label-guard* ]]; then
      log "the admission fence of $what is applied and enforced"; return 0
    fi
    sleep 0.5
  done
  log "the admission fence is not enforced: $out"; return 1
}

case "${1:-}" in
  "") run_test ;;
  offer-upgrade)
    # Monitoring is optional under OLM: VERSION's bundle carries no monitoring.coreos.com object, so it
    # installs on a cluster without the Prometheus Operator's CRDs (test/olm checks they are gone).
    "${KUBECTL[@]}" delete --wait -f "$REPO_ROOT/test/olm/monitoring-crds.yaml" >/dev/null
    apply_fence "$REPO_ROOT" "$VERSION" && serve_catalog "$STATE/catalog-to" ;;
  manager)
    case "${2:-}" in
      start) (($# == 4)) || { echo "usage: $0 manager start NAMESPACE DEPLOYMENT" >&2; exit 2; }; manager_start "$3" "$4" ;;
      stop) manager_stop ;;
      *) echo "usage: $0 manager start NAMESPACE DEPLOYMENT | manager stop" >&2; exit 2 ;;
    esac ;;
  *) sed -n '16,56p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
esac
