#!/usr/bin/env bash
# Runs the manager (bin/manager) as a local process against the local cluster, under the operator's
# own ServiceAccount (nsclaim-operator-system/nsclaim-operator-controller-manager), so the RBAC it
# ships with is what is exercised, never cluster-admin.
#
# Usage: hack/local-operator.sh start|stop|install|wait-fence STATE
#   install  apply config/local (CRDs, namespace, ServiceAccount, RBAC) and the admission fence
#            (config/fence: the fence around the operator and the label guard) with the admin
#            kubeconfig, and wait until the API server enforces both; the operator requires the fence
#            (--require-fence) and provisions nothing without it
#   start    install, then start the manager; waits for /readyz. The manager runs under a supervisor
#            (this script's `supervise`) that starts it again when it exits after losing its leader
#            lease, as the kubelet restarts the container of the shipped Deployment (restartPolicy
#            Always): on a loaded machine the renewal can miss its deadline. Any other exit is final, so
#            a crash still fails the suite. Restarts are logged in the operator log (at most
#            OPERATOR_MAX_RESTARTS, default 5).
#   stop     stop the manager started by start (by the supervisor's saved PID)
#   wait-fence 'fence=yes|no guard=yes|no'  wait until admission enforces the fence and label guard so
# Environment: LOCAL_CLUSTER_DIR, APISERVER_PORT (see hack/local-cluster.sh), KUBE_BIN_DIR,
#   OPERATOR_PROBE_PORT (18081), OPERATOR_METRICS_PORT (18443), OPERATOR_ARGS (extra flags),
#   MANAGER_BIN (the manager binary; bin/manager), FENCE_DIR (the kustomize directory of the fence;
#   config/fence), OPERATOR_MAX_RESTARTS (5; 0: never restart).
set -euo pipefail
REPO_ROOT=$(cd "$(dirname "$0")/.." && pwd)
STATE=$(realpath -m "${LOCAL_CLUSTER_DIR:-$REPO_ROOT/tmp/local-cluster}")
KUBE_BIN_DIR=${KUBE_BIN_DIR:-$REPO_ROOT/bin/k8s/1.37.1-linux-amd64}
KUBECTL="$KUBE_BIN_DIR/kubectl"
export KUBECACHEDIR="$STATE/kubecache"
APISERVER_PORT=${APISERVER_PORT:-26443}
PROBE_PORT=${OPERATOR_PROBE_PORT:-18081}
METRICS_PORT=${OPERATOR_METRICS_PORT:-18443}
NS=nsclaim-operator-system
SA=nsclaim-operator-controller-manager
MANAGER_BIN=${MANAGER_BIN:-$REPO_ROOT/bin/manager}
FENCE_DIR=${FENCE_DIR:-$REPO_ROOT/config/fence}
PIDFILE="$STATE/pids/operator.pid"       # the manager's PID (the current one after a restart)
SUPERVISOR_PIDFILE="$STATE/pids/operator-supervisor.pid"
MAX_RESTARTS=${OPERATOR_MAX_RESTARTS:-5}
LOG="$STATE/logs/operator.log"

install() {
  "$REPO_ROOT/bin/kustomize" build "$REPO_ROOT/config/local" | "$KUBECTL" --kubeconfig "$STATE/kubeconfig" apply --server-side -f - >/dev/null
  "$KUBECTL" --kubeconfig "$STATE/kubeconfig" wait --for condition=established --timeout=60s \
    crd/namespaceclaims.tenancy.nsclaim.dev crd/namespaceclasses.tenancy.nsclaim.dev >/dev/null
  # The fence goes in before the operator starts, so its start-up writes are fenced too.
  local fence; fence=$("$REPO_ROOT/bin/kustomize" build "$FENCE_DIR")
  "$KUBECTL" --kubeconfig "$STATE/kubeconfig" apply --server-side -f - <<<"$fence" >/dev/null
  # A fence directory without the label guard (an older fence, applied to compare) waits for the fence only.
  if [[ $fence == *label-guard* ]]; then wait_fence "fence=yes guard=yes"; else wait_fence "fence=yes guard=no"; fi
  if [[ $fence == *add-finalizer* ]]; then wait_claims_admitted; fi
}

# wait_claims_admitted waits until the API server admits a NamespaceClaim with the finalizer policy
# applied (a server-side dry run). A MutatingAdmissionPolicy answers 503 for a CRD's kind until the
# API server's type converter has read the CRD's OpenAPI schema (it polls every 5 s).
wait_claims_admitted() {
  local out
  for _ in $(seq 1 60); do
    if out=$(printf 'apiVersion: tenancy.nsclaim.dev/v1alpha1\nkind: NamespaceClaim\nmetadata:\n  name: admission-probe\n  namespace: default\n' |
      "$KUBECTL" --kubeconfig "$STATE/kubeconfig" create --dry-run=server -o jsonpath='{.metadata.finalizers}' -f - 2>&1) &&
      [[ $out == *tenancy.nsclaim.dev/namespace* ]]; then
      return 0
    fi
    sleep 0.5
  done
  echo "NamespaceClaims are not admitted with the claim finalizer: $out" >&2; return 1
}

# fence_probes prints "fence=<yes|no> guard=<yes|no>": whether admission denies the operator's
# ServiceAccount a ServiceAccount in default (the fence), and an admin a ServiceAccount labelled as
# nsclaim's (the label guard). Server-side dry runs: admission runs, nothing is stored.
fence_probes() {
  local fence=no guard=no out
  if ! out=$("$KUBECTL" --kubeconfig "$STATE/kubeconfig" --as "system:serviceaccount:$NS:$SA" -n default \
    create serviceaccount fence-probe --dry-run=server 2>&1); then
    [[ $out == *ValidatingAdmissionPolicy* ]] && fence=yes
  fi
  if ! out=$(printf 'apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: label-guard-probe\n  namespace: default\n  labels: {tenancy.nsclaim.dev/managed-by: nsclaim}\n' |
    "$KUBECTL" --kubeconfig "$STATE/kubeconfig" create --dry-run=server -f - 2>&1); then
    [[ $out == *ValidatingAdmissionPolicy* ]] && guard=yes
  fi
  echo "fence=$fence guard=$guard"
}

# wait_fence STATE waits until fence_probes prints STATE (policies take effect within moments).
wait_fence() {
  local got
  for _ in $(seq 1 60); do
    got=$(fence_probes)
    [ "$got" = "$1" ] && return 0
    sleep 0.5
  done
  echo "the admission fence of $FENCE_DIR is not enforced as expected: want $1, got $got" >&2; return 1
}

running() { [ -f "$SUPERVISOR_PIDFILE" ] && kill -0 "$(cat "$SUPERVISOR_PIDFILE")" 2>/dev/null && grep -q local-operator "/proc/$(cat "$SUPERVISOR_PIDFILE")/cmdline" 2>/dev/null; }

# lost_lease reports whether the manager's last exit was the loss of its leader lease (controller-runtime
# ends Start with "leader election lost"; cmd/main.go logs it as "Manager stopped").
lost_lease() { tail -n 5 "$LOG" | grep -q '"error":"leader election lost"'; }

# supervise runs the manager in the foreground of this (setsid) process and starts it again when it
# exits after losing its leader lease, at most MAX_RESTARTS times; it exits with the manager's status
# otherwise. TERM is passed on to the manager, which releases its lease (LeaderElectionReleaseOnCancel).
supervise() {
  local child="" status restarts=0
  trap '[ -n "$child" ] && kill -TERM "$child" 2>/dev/null; [ -n "$child" ] && wait "$child"; exit 0' TERM INT
  while :; do
    "$MANAGER_BIN" --health-probe-bind-address "127.0.0.1:$PROBE_PORT" --metrics-bind-address "127.0.0.1:$METRICS_PORT" \
      --kubeconfig-server "https://127.0.0.1:$APISERVER_PORT" ${OPERATOR_ARGS:-} >>"$LOG" 2>&1 </dev/null &
    child=$!
    echo "$child" > "$PIDFILE"
    status=0; wait "$child" || status=$?
    if [ "$status" -ne 0 ] && [ "$restarts" -lt "$MAX_RESTARTS" ] && lost_lease; then
      restarts=$((restarts + 1))
      printf '{"level":"info","ts":"%s","logger":"local-operator","msg":"Restarting the manager after it lost its leader lease, as the kubelet restarts a Deployment'"'"'s container","restart":%d}\n' \
        "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$restarts" >>"$LOG"
      continue
    fi
    exit "$status"
  done
}

start() {
  install
  if running; then echo "operator already running (pid $(cat "$PIDFILE"))"; return 0; fi
  mkdir -p "$STATE/pids" "$STATE/logs"
  "$REPO_ROOT/hack/local-cluster.sh" sa-kubeconfig "$NS" "$SA" 48h > "$STATE/operator.kubeconfig"
  : > "$LOG"; rm -f "$PIDFILE"
  KUBECONFIG="$STATE/operator.kubeconfig" POD_NAMESPACE="$NS" setsid "$0" supervise </dev/null >>"$LOG" 2>&1 &
  echo $! > "$SUPERVISOR_PIDFILE"
  for _ in $(seq 1 60); do
    if curl -fsS "http://127.0.0.1:$PROBE_PORT/readyz" >/dev/null 2>&1; then
      echo "operator running (pid $(cat "$PIDFILE"), log $LOG)"; return 0
    fi
    running || { echo "operator exited; last log lines:" >&2; tail -20 "$LOG" >&2; return 1; }
    sleep 0.5
  done
  echo "operator not ready after 30s; last log lines:" >&2; tail -20 "$LOG" >&2; stop; return 1
}

stop() {
  if running; then
    local pid; pid=$(cat "$SUPERVISOR_PIDFILE")
    kill -TERM "$pid"
    for _ in $(seq 1 60); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
    if kill -0 "$pid" 2>/dev/null; then
      kill -KILL "$pid"
      [ -f "$PIDFILE" ] && kill -KILL "$(cat "$PIDFILE")" 2>/dev/null
    fi
  fi
  rm -f "$PIDFILE" "$SUPERVISOR_PIDFILE"
}

case "${1:-}" in
  install) install ;;
  wait-fence) wait_fence "${2:?usage: $0 wait-fence 'fence=yes|no guard=yes|no'}" ;;
  start) start ;;
  stop) stop ;;
  supervise) supervise ;;
  *) echo "usage: $0 install|start|stop|wait-fence STATE" >&2; exit 2 ;;
esac
