#!/usr/bin/env bash
# Benchmarks and chaos runs of nsclaim against a local cluster of its own: starts etcd,
# kube-apiserver (with audit logging, so requests can be counted per user) and
# kube-controller-manager with hack/local-cluster.sh, installs the CRDs and the operator's RBAC, builds
# the manager, and then
#   bench: builds and runs the test/bench program, which starts the manager as its own process under
#          its own ServiceAccount and measures it against ceilings run in the same cluster as the same
#          ServiceAccount (nsclaim's objects and its 2 rules reviews alone; the same until
#          kube-controller-manager made each namespace usable, the usable ceiling; the shell operator
#          nsplease's ten writes);
#          figures and the issue's targets (met / not met) are printed and the final table is written
#          to $BENCH_DIR/results-bench.md; nothing is asserted;
#   chaos: runs `go test ./test/bench -run TestChaos` (NSCLAIM_CHAOS_KUBECONFIG set to the cluster's
#          admin kubeconfig), which fails on a broken invariant; the summary goes to
#          $BENCH_DIR/results-chaos.md.
#
# Usage: hack/bench.sh [bench|chaos] [flags, e.g. --bursts=500 --latency=20 --restarts=50 --scales=50, or for
#   chaos --claims=50 --scenarios=leader,children]
#   MODE defaults to bench. `go run ./test/bench -h` lists the bench flags; test/bench/chaos.go's
#   chaosFlags lists the chaos flags.
#
# Environment (defaults in brackets):
#   LOCAL_CLUSTER_DIR    [<repo>/tmp/bench-cluster] cluster state; reset at the start unless BENCH_KEEP_CLUSTER=1
#   APISERVER_PORT [31443] ETCD_CLIENT_PORT [27379] ETCD_PEER_PORT [27380] CONTROLLER_MANAGER_PORT [25257]
#   OPERATOR_PROBE_PORT [20481] OPERATOR_METRICS_PORT [20843]       first manager replica
#   OPERATOR2_PROBE_PORT [20581] OPERATOR2_METRICS_PORT [20943]     second replica (chaos)
#   BENCH_DIR            [<repo>/tmp/bench] binaries and results
#   MANAGER_BIN          [$BENCH_DIR/manager] built from ./cmd unless BENCH_NO_BUILD=1
#   NSCLAIM_WORKERS      [unset] the manager's workers; unset: its shipped default (the ceilings run at --ceiling-workers, 32)
#   OPERATOR_ARGS        extra manager flags, e.g. "--kube-api-qps=200 --kube-api-burst=400"
#   OPERATOR_ENV         extra manager environment, e.g. "NSCLAIM_MEMORY_LIMIT=268435456" (what config/manager sets
#                        from the 256Mi memory limit; the manager sets a soft limit of 90% of it less its mapped binary) or an explicit
#                        "GOMEMLIMIT=..."; --metrics-pprof in OPERATOR_ARGS saves heap profiles at --scales
#   BENCH_KEEP_CLUSTER   [0] 1: reuse a running cluster and leave it running afterwards
#   CHAOS_TIMEOUT        [4h] go test's -timeout of the chaos run
set -euo pipefail

REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$REPO_ROOT"

MODE=bench
if [[ ${1:-} == bench || ${1:-} == chaos ]]; then
  MODE=$1
  shift
fi

export LOCAL_CLUSTER_DIR=${LOCAL_CLUSTER_DIR:-$REPO_ROOT/tmp/bench-cluster}
export APISERVER_PORT=${APISERVER_PORT:-31443}
export ETCD_CLIENT_PORT=${ETCD_CLIENT_PORT:-27379}
export ETCD_PEER_PORT=${ETCD_PEER_PORT:-27380}
export CONTROLLER_MANAGER_PORT=${CONTROLLER_MANAGER_PORT:-25257}
export OPERATOR_PROBE_PORT=${OPERATOR_PROBE_PORT:-20481}
export OPERATOR_METRICS_PORT=${OPERATOR_METRICS_PORT:-20843}
export OPERATOR2_PROBE_PORT=${OPERATOR2_PROBE_PORT:-20581}
export OPERATOR2_METRICS_PORT=${OPERATOR2_METRICS_PORT:-20943}
export KUBE_BIN_DIR=${KUBE_BIN_DIR:-$REPO_ROOT/bin/k8s/1.37.1-linux-amd64}
BENCH_DIR=${BENCH_DIR:-$REPO_ROOT/tmp/bench}
export MANAGER_BIN=${MANAGER_BIN:-$BENCH_DIR/manager}
STATE=$(realpath -m "$LOCAL_CLUSTER_DIR")
AUDIT=$STATE/audit

log() { echo "bench.sh: $*" >&2; }

# stop_managers stops the manager replicas the bench or the chaos test started, by the PIDs it recorded, if they still
# run this MANAGER_BIN.
stop_managers() {
  local f pid
  for f in "$STATE/pids/operator.pid" "$STATE/pids/operator-2.pid"; do
    [[ -s $f ]] || continue
    pid=$(tr -dc '0-9' <"$f")
    if [[ -n $pid ]] && tr '\0' ' ' 2>/dev/null <"/proc/$pid/cmdline" | grep -qF -- "$MANAGER_BIN"; then
      kill -TERM "$pid" 2>/dev/null || true
      for _ in $(seq 1 60); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
      kill -KILL "$pid" 2>/dev/null || true
    fi
    rm -f "$f"
  done
}

cleanup() {
  local rc=$?
  stop_managers
  if [[ ${BENCH_KEEP_CLUSTER:-0} != 1 ]]; then
    hack/local-cluster.sh down || true
  fi
  exit "$rc"
}

mkdir -p "$BENCH_DIR"
if [[ ${BENCH_NO_BUILD:-0} != 1 ]]; then
  log "building $MANAGER_BIN"
  go build -o "$MANAGER_BIN" ./cmd
fi
if [[ $MODE == bench ]]; then
  go build -o "$BENCH_DIR/bench" ./test/bench
else
  # Compile the test before the cluster starts, so a build error does not cost a cluster start.
  go test -c -o /dev/null ./test/bench
fi
[[ -x $REPO_ROOT/bin/kustomize ]] || { log "bin/kustomize missing: run make kustomize"; exit 1; }

trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

if [[ ${BENCH_KEEP_CLUSTER:-0} != 1 ]]; then
  hack/local-cluster.sh reset
fi
# Every request is logged once, when its response is complete, at Metadata level: user, verb and
# object, never a body (so no token or Secret data). The bench counts requests per user from it.
mkdir -p "$AUDIT"
cat >"$AUDIT/policy.yaml" <<'POLICY'
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived, ResponseStarted]
rules:
- level: Metadata
POLICY
export APISERVER_EXTRA_ARGS="${APISERVER_EXTRA_ARGS:-} --audit-policy-file=$AUDIT/policy.yaml --audit-log-path=$AUDIT/audit.log --audit-log-format=json --audit-log-mode=blocking --audit-log-maxsize=0"
hack/local-cluster.sh up
hack/local-operator.sh install
hack/local-cluster.sh sa-kubeconfig nsclaim-operator-system nsclaim-operator-controller-manager 48h >"$STATE/operator.kubeconfig"

if [[ $MODE == bench ]]; then
  log "running: bench $*"
  "$BENCH_DIR/bench" --state "$STATE" --out "$BENCH_DIR/results-bench.md" "$@"
else
  log "running: go test ./test/bench -run TestChaos with $*"
  NSCLAIM_CHAOS_KUBECONFIG="$STATE/kubeconfig" \
    NSCLAIM_CHAOS_ARGS="--state=$STATE --out=$BENCH_DIR/results-chaos.md $*" \
    go test ./test/bench -run '^TestChaos$' -count=1 -v -timeout "${CHAOS_TIMEOUT:-4h}"
fi
