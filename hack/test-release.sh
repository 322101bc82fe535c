#!/usr/bin/env bash
# The release manifests alone, as a platform team installs them: install.yaml, then fence.yaml, and a
# claim made meanwhile is Ready within 30 s of the fence's apply, with no other step (no class applied,
# nothing waited for by hand).
#
# The local cluster has no node, so the manager cannot run as the Deployment's Pod: it runs as a local
# process in the Pod's place, with a token of the ServiceAccount install.yaml created, the Deployment's
# environment (values) and arguments (as hack/test-olm.sh runs OLM's Deployment). The Pod stays Pending.
#
# Usage: hack/test-release.sh            its own local cluster (TEST_* ports, as hack/test-local.sh)
#        hack/test-release.sh on-cluster the running local cluster of LOCAL_CLUSTER_DIR (hack/test-local.sh
#                                        runs it before the e2e); removes what it made, except the fence
# Environment: MANAGER_BIN (bin/manager), KUBE_BIN_DIR, KUSTOMIZE, OPERATOR_PROBE_PORT,
#   OPERATOR_METRICS_PORT, RELEASE_READY_WITHIN (30: seconds from the fence's apply to Ready).
set -euo pipefail
REPO_ROOT=$(cd "$(dirname "$0")/.." && pwd)
MODE=${1:-own-cluster}
if [ "$MODE" = own-cluster ]; then
  export LOCAL_CLUSTER_DIR=${TEST_CLUSTER_DIR:-$REPO_ROOT/tmp/test-release-cluster}
  export APISERVER_PORT=${TEST_APISERVER_PORT:-27443} ETCD_CLIENT_PORT=${TEST_ETCD_CLIENT_PORT:-23379}
  export ETCD_PEER_PORT=${TEST_ETCD_PEER_PORT:-23380} CONTROLLER_MANAGER_PORT=${TEST_CONTROLLER_MANAGER_PORT:-21257}
  export OPERATOR_PROBE_PORT=${TEST_OPERATOR_PROBE_PORT:-19081} OPERATOR_METRICS_PORT=${TEST_OPERATOR_METRICS_PORT:-19443}
fi
STATE=$(realpath -m "${LOCAL_CLUSTER_DIR:-$REPO_ROOT/tmp/local-cluster}")
KUBE_BIN_DIR=${KUBE_BIN_DIR:-$REPO_ROOT/bin/k8s/1.37.1-linux-amd64}
export KUBE_BIN_DIR KUBECACHEDIR="$STATE/kubecache"
APISERVER_PORT=${APISERVER_PORT:-26443}
PROBE_PORT=${OPERATOR_PROBE_PORT:-18081}
METRICS_PORT=${OPERATOR_METRICS_PORT:-18443}
MANAGER_BIN=${MANAGER_BIN:-$REPO_ROOT/bin/manager}
READY_WITHIN=${RELEASE_READY_WITHIN:-30}
NS=nsclaim-operator-system
DEPLOY=nsclaim-operator-controller-manager
CLAIM=release-check
REL="$STATE/release"
PIDFILE="$STATE/pids/release-manager.pid"
LOG="$STATE/logs/release-manager.log"
k() { "$KUBE_BIN_DIR/kubectl" --kubeconfig "$STATE/kubeconfig" "$@"; }
log() { echo "test-release: $*" >&2; }

stop_manager() {
  if [ -f "$PIDFILE" ] && kill -0 "$(cat "$PIDFILE")" 2>/dev/null; then
    local pid; pid=$(cat "$PIDFILE")
    kill -TERM "$pid"
    for _ in $(seq 1 40); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
    kill -0 "$pid" 2>/dev/null && kill -KILL "$pid"
  fi
  rm -f "$PIDFILE"
}

cleanup() {
  local status=$?
  if [ "$status" -ne 0 ] && [ -f "$LOG" ]; then log "failed; manager log tail ($LOG):"; tail -25 "$LOG" >&2; fi
  if [ "$MODE" = on-cluster ]; then
    # Leave the cluster as the e2e expects it: no claim, no class, no Deployment of ours.
    k delete namespaceclaim "$CLAIM" -n default --ignore-not-found --wait --timeout=60s >/dev/null 2>&1 || true
    stop_manager
    k delete namespaceclass ci --ignore-not-found >/dev/null 2>&1 || true
    k -n "$NS" delete deployment "$DEPLOY" --ignore-not-found >/dev/null 2>&1 || true
  else
    stop_manager
    "$REPO_ROOT/hack/local-cluster.sh" down >/dev/null 2>&1 || true
  fi
  exit "$status"
}
trap cleanup EXIT

if [ "$MODE" = own-cluster ]; then
  "$REPO_ROOT/hack/local-cluster.sh" reset >/dev/null
  "$REPO_ROOT/hack/local-cluster.sh" up
fi
mkdir -p "$STATE/pids" "$STATE/logs"
"$REPO_ROOT/hack/release-manifests.sh" "$REL"

# 1. install.yaml, as published.
t0=$SECONDS
k apply --server-side -f "$REL/install.yaml" >/dev/null
k wait --for condition=established --timeout=60s crd/namespaceclaims.tenancy.nsclaim.dev crd/namespaceclasses.tenancy.nsclaim.dev >/dev/null

# 2. The manager in place of the Deployment's Pod, under the ServiceAccount install.yaml made.
sa=$(k -n "$NS" get deployment "$DEPLOY" -o jsonpath='{.spec.template.spec.serviceAccountName}')
envs=() args=()
while IFS= read -r line; do [[ $line == *=?* ]] && envs+=("$line"); done < <(k -n "$NS" get deployment "$DEPLOY" \
  -o jsonpath='{range .spec.template.spec.containers[?(@.name=="manager")].env[*]}{.name}={.value}{"\n"}{end}')
while IFS= read -r line; do [[ -n $line ]] && args+=("$line"); done < <(k -n "$NS" get deployment "$DEPLOY" \
  -o jsonpath='{range .spec.template.spec.containers[?(@.name=="manager")].args[*]}{@}{"\n"}{end}')
(umask 077 && "$REPO_ROOT/hack/local-cluster.sh" sa-kubeconfig "$NS" "$sa" 1h >"$STATE/release-manager.kubeconfig")
log "manager as $NS/$sa (install.yaml's ServiceAccount); env: ${envs[*]%%=*}; args: ${args[*]}"
env "${envs[@]}" POD_NAMESPACE="$NS" KUBECONFIG="$STATE/release-manager.kubeconfig" setsid "$MANAGER_BIN" "${args[@]}" \
  --health-probe-bind-address "127.0.0.1:$PROBE_PORT" --metrics-bind-address "127.0.0.1:$METRICS_PORT" \
  --kubeconfig-server "https://127.0.0.1:$APISERVER_PORT" >"$LOG" 2>&1 </dev/null &
echo $! >"$PIDFILE"

# 3. A pipeline's claim, made before the fence: it waits with FenceNotIntact (and the class it uses is
#    the starting class the operator made: none was applied).
k create -f - >/dev/null <<EOF
apiVersion: tenancy.nsclaim.dev/v1alpha1
kind: NamespaceClaim
metadata: {name: $CLAIM, namespace: default}
spec: {namespaceName: $CLAIM, ttl: 10m}
EOF
if ! k -n default wait --for=jsonpath='{.status.conditions[?(@.type=="Ready")].reason}'=FenceNotIntact \
  "namespaceclaim/$CLAIM" --timeout=60s >/dev/null; then
  log "the claim did not report FenceNotIntact before the fence was applied:"
  k -n default get namespaceclaim "$CLAIM" -o jsonpath='{.status.conditions}' >&2; echo >&2; exit 1
fi
log "before the fence: $(k -n default get namespaceclaim "$CLAIM" -o jsonpath='{.status.conditions[?(@.type=="Ready")].message}')"
k get namespaceclass ci >/dev/null || { log "no starting class ci"; exit 1; }

# 4. fence.yaml, as published; the claim is Ready within READY_WITHIN seconds, with nothing else done.
start_ns=$(date +%s%N)
k apply --server-side -f "$REL/fence.yaml" >/dev/null
if ! k -n default wait --for=condition=Ready "namespaceclaim/$CLAIM" --timeout="${READY_WITHIN}s" >/dev/null; then
  log "the claim is not Ready ${READY_WITHIN}s after fence.yaml was applied:"
  k -n default get namespaceclaim "$CLAIM" -o jsonpath='{.status.conditions}' >&2; echo >&2; exit 1
fi
ms=$((($(date +%s%N) - start_ns) / 1000000))
log "PASS: install.yaml then fence.yaml: claim $CLAIM Ready $((ms / 1000)).$(printf %03d $((ms % 1000)))s after the fence's apply (limit ${READY_WITHIN}s); $((SECONDS - t0))s in all"
grep -q '"Admission fence is intact"' "$LOG" || { log "the manager did not log the fence as intact"; exit 1; }
