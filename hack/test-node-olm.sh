#!/usr/bin/env bash
# make test-node-olm: nsclaim installed by OLM as users install it, onto a real node: a fresh local
# cluster with a node (hack/local-cluster.sh, hack/local-node.sh), OLM's olm and catalog operators as
# host processes (as in test-olm; their own images are not built here), the file-based catalog of
# this tree's bundle (hack/catalog.sh) served by `opm serve` in a **catalog Pod** (image assembled by
# hack/images.sh) behind a Service, a CatalogSource at that Service, an AllNamespaces OperatorGroup and
# a Subscription whose spec.config.env sets NSCLAIM_KUBECONFIG_SERVER. OLM creates the Deployment; its
# Pod runs the manager image (imported under the CSV's image name, so nothing is pulled) on the node;
# the CSV must reach Succeeded (the admission fence applied before, as an admin does), and a claim must become Ready
# with a kubeconfig naming the API server's outside address. Stops everything it started.
# Shares test-node's ports and bridge (one node per machine): do not run both at once.
set -euo pipefail
REPO_ROOT=$(cd "$(dirname "$0")/.." && pwd)
export LOCAL_CLUSTER_DIR=${TEST_NODE_OLM_CLUSTER_DIR:-$REPO_ROOT/tmp/node-olm}
export APISERVER_PORT=16443 ETCD_CLIENT_PORT=16379 ETCD_PEER_PORT=16380 CONTROLLER_MANAGER_PORT=16257
export KUBELET_PORT=16250 KUBELET_HEALTHZ_PORT=16248 KUBE_PROXY_HEALTHZ_PORT=16256 KUBE_PROXY_METRICS_PORT=16249 SCHEDULER_PORT=16259
export NODE_BRIDGE=nsclaim1 POD_CIDR=10.245.0.0/24
export APISERVER_ADDRESS=${POD_CIDR%.*}.1 APISERVER_BRIDGE=$NODE_BRIDGE
export KUBE_BIN_DIR=${KUBE_BIN_DIR:-$REPO_ROOT/bin/k8s/1.37.1-linux-amd64}
export VERSION=${VERSION:-0.4.0}
export OPM=${OPM:-$REPO_ROOT/bin/opm} TOOLS_BIN=${TOOLS_BIN:-$REPO_ROOT/bin}
OLM=${OLM:-$REPO_ROOT/bin/olm}
OLM_CATALOG=${OLM_CATALOG:-$REPO_ROOT/bin/catalog}
KUSTOMIZE=${KUSTOMIZE:-$REPO_ROOT/bin/kustomize}
KUBECTL=$KUBE_BIN_DIR/kubectl
STATE=$(realpath -m "$LOCAL_CLUSTER_DIR")
IMAGES=$STATE/images
NS=nsclaim-operator-system
SERVER_URL=https://$APISERVER_ADDRESS:$APISERVER_PORT
t0=$(date +%s)
say() { echo "test-node-olm: [$(($(date +%s) - t0))s] $*" >&2; }
kc() { KUBECACHEDIR=$STATE/kubecache "$KUBECTL" --kubeconfig "$STATE/kubeconfig" "$@"; }

# OLM's operators as host processes, by PID file (command line checked before a signal is sent).
start() {
  local name=$1
  shift
  mkdir -p "$STATE/pids" "$STATE/logs"
  setsid "$@" >>"$STATE/logs/$name.log" 2>&1 </dev/null &
  echo $! >"$STATE/pids/$name.pid"
}
stop() {
  local name=$1 pid
  pid=$(cat "$STATE/pids/$name.pid" 2>/dev/null) || return 0
  # Ours if its command line or its environment (olm takes KUBECONFIG from there) names $STATE.
  if [[ -r /proc/$pid/cmdline ]] && cat "/proc/$pid/cmdline" "/proc/$pid/environ" 2>/dev/null |
    tr '\0' '\n' | grep -q -- "$STATE/"; then
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 1 20); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
    kill -KILL "$pid" 2>/dev/null || true
  fi
  rm -f "$STATE/pids/$name.pid"
}
cleanup() {
  local rc=$?
  if ((rc != 0)) && [[ -f $STATE/kubeconfig ]]; then
    kc -n "$NS" get csv,subscription,installplan,deploy,pods -o wide >&2 || true
    for name in olm catalog; do
      echo "--- $name log tail:" >&2
      tail -10 "$STATE/logs/$name.log" >&2 || true
    done
  fi
  stop catalog
  stop olm
  "$REPO_ROOT/hack/local-node.sh" down || true
  "$REPO_ROOT/hack/local-cluster.sh" down || true
  say "done (exit $rc)"
}
trap cleanup EXIT

"$REPO_ROOT/hack/node-deps.sh"
"$REPO_ROOT/hack/local-node.sh" down >/dev/null 2>&1 || true
"$REPO_ROOT/hack/local-cluster.sh" reset >/dev/null
mkdir -p "$STATE"

say "rendering the catalog of this tree's bundle and assembling images"
"$REPO_ROOT/hack/catalog.sh" "$STATE/catalog" "$VERSION" >&2
csv_image=$(awk '$1=="image:" && $2 ~ /nsclaim-operator:/ {print $2; exit}' \
  "$REPO_ROOT/bundle/manifests/nsclaim-operator.clusterserviceversion.yaml")
[[ -n $csv_image ]] || { echo "no manager image in the CSV" >&2; exit 1; }
# The manager image under the CSV's image name: OLM's Deployment finds it in containerd, no pull.
MANAGER_IMAGE=$csv_image CATALOG_DIR=$STATE/catalog "$REPO_ROOT/hack/images.sh" "$IMAGES" pause manager catalog

"$REPO_ROOT/hack/local-cluster.sh" up
PAUSE_IMAGE_TAR=$IMAGES/pause.tar "$REPO_ROOT/hack/local-node.sh" up
"$REPO_ROOT/hack/local-node.sh" import "$IMAGES/manager.tar" "$IMAGES/catalog.tar"

say "OLM: CRDs, olm and catalog operators (host processes)"
olm_dir=$(go -C "$REPO_ROOT/hack/tools/olm" list -m -f '{{.Dir}}' github.com/operator-framework/operator-lifecycle-manager)
kc apply --server-side -f "$olm_dir/deploy/chart/crds/" >/dev/null
kc wait --for condition=established --timeout=60s -f "$olm_dir/deploy/chart/crds/" >/dev/null
kc apply --server-side -f - >/dev/null <<EOF
apiVersion: operators.coreos.com/v1
kind: OLMConfig
metadata:
  name: cluster
spec:
  features:
    disableCopiedCSVs: true
EOF
kc create namespace olm >/dev/null
start olm env KUBECONFIG="$STATE/kubeconfig" "$OLM" --namespace olm --writeStatusName "" --writePackageServerStatusName ""
start catalog "$OLM_CATALOG" --kubeconfig "$STATE/kubeconfig" --namespace olm --writeStatusName ""

say "the catalog as a Pod (opm serve) behind a Service"
kc create namespace "$NS" >/dev/null
kc apply --server-side -f - >/dev/null <<EOF
apiVersion: apps/v1
kind: Deployment
metadata: {name: nsclaim-catalog, namespace: $NS}
spec:
  selector: {matchLabels: {app: nsclaim-catalog}}
  template:
    metadata: {labels: {app: nsclaim-catalog}}
    spec:
      automountServiceAccountToken: false
      securityContext: {runAsNonRoot: true, seccompProfile: {type: RuntimeDefault}}
      containers:
      - name: opm
        image: localhost/nsclaim/catalog:dev
        imagePullPolicy: Never
        ports: [{containerPort: 50051, name: grpc}]
        readinessProbe: {tcpSocket: {port: 50051}, periodSeconds: 1}
        securityContext: {allowPrivilegeEscalation: false, capabilities: {drop: [ALL]}}
---
apiVersion: v1
kind: Service
metadata: {name: nsclaim-catalog, namespace: $NS}
spec:
  selector: {app: nsclaim-catalog}
  ports: [{name: grpc, port: 50051, targetPort: 50051}]
EOF
kc -n "$NS" wait --for=condition=Available deployment/nsclaim-catalog --timeout=120s >/dev/null
catalog_ip=$(kc -n "$NS" get service nsclaim-catalog -o jsonpath='{.spec.clusterIP}')

# The fence goes in first, as docs/olm.md tells an admin (a bundle cannot carry it): the manager
# checks it at start and then every NSCLAIM_FENCE_CHECK_INTERVAL (5m), and provisions nothing until
# it is intact.
"$KUSTOMIZE" build "$REPO_ROOT/config/fence" | kc apply --server-side -f - >/dev/null
say "subscribing (CatalogSource at $catalog_ip:50051, AllNamespaces OperatorGroup, Automatic approval)"
kc apply --server-side -f - >/dev/null <<EOF
apiVersion: operators.coreos.com/v1alpha1
kind: CatalogSource
metadata: {name: nsclaim-catalog, namespace: $NS}
spec: {sourceType: grpc, address: "$catalog_ip:50051", displayName: nsclaim (node)}
---
apiVersion: operators.coreos.com/v1
kind: OperatorGroup
metadata: {name: nsclaim-operator, namespace: $NS}
spec: {}
---
apiVersion: operators.coreos.com/v1alpha1
kind: Subscription
metadata: {name: nsclaim-operator, namespace: $NS}
spec:
  name: nsclaim-operator
  channel: stable
  source: nsclaim-catalog
  sourceNamespace: $NS
  installPlanApproval: Automatic
  startingCSV: nsclaim-operator.v$VERSION
  config:
    env:
    - {name: NSCLAIM_KUBECONFIG_SERVER, value: "$SERVER_URL"}
EOF
csv=nsclaim-operator.v$VERSION
for _ in $(seq 1 240); do
  phase=$(kc -n "$NS" get csv "$csv" -o jsonpath='{.status.phase}' 2>/dev/null || true)
  [[ $phase == Succeeded ]] && break
  sleep 1
done
[[ $phase == Succeeded ]] || { echo "--- FAIL: CSV $csv is '${phase:-absent}', not Succeeded" >&2; exit 1; }
pod=$(kc -n "$NS" get pods -l control-plane=controller-manager -o jsonpath='{.items[0].metadata.name} on {.items[0].spec.nodeName}, image {.items[0].spec.containers[0].image}')
say "CSV $csv Succeeded: OLM's Deployment runs as Pod $pod"

say "a claim"
kc apply --server-side -f - >/dev/null <<EOF
apiVersion: tenancy.nsclaim.dev/v1alpha1
kind: NamespaceClass
metadata: {name: olm-node}
spec: {clusterRole: edit, naming: {prefix: olm-}, podSecurity: restricted}
EOF
for _ in $(seq 1 30); do
  if kc -n default create -f - >/dev/null 2>&1 <<EOF; then break; fi
apiVersion: tenancy.nsclaim.dev/v1alpha1
kind: NamespaceClaim
metadata: {name: olm-smoke}
spec: {className: olm-node}
EOF
  sleep 1
done
if ! kc -n default wait --for=condition=Ready namespaceclaim/olm-smoke --timeout=180s >/dev/null; then
  echo "--- FAIL: claim not Ready:" >&2
  kc -n default get namespaceclaim olm-smoke -o jsonpath='{range .status.conditions[*]}{.type}={.status} {.reason}: {.message}{"\n"}{end}' >&2
  kc -n "$NS" logs deployment/nsclaim-operator-controller-manager --tail=20 >&2 || true
  exit 1
fi
secret=$(kc -n default get namespaceclaim olm-smoke -o jsonpath='{.status.credentialsSecretName}')
server=$(kc -n default get secret "$secret" -o jsonpath='{.data.kubeconfig}' | base64 -d | awk '$1=="server:"{print $2; exit}')
if [[ $server != "$SERVER_URL" ]]; then
  echo "--- FAIL: the handed kubeconfig names $server, not $SERVER_URL (Subscription spec.config.env)" >&2
  exit 1
fi
say "PASS: claim Ready, its kubeconfig names $server (set through the Subscription's spec.config.env)"
