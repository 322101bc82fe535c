#!/usr/bin/env bash
# make test-node: nsclaim where users run it. A fresh local cluster with a real node
# (hack/local-cluster.sh with the API server on the node's bridge, hack/local-node.sh), images
# assembled here (hack/images.sh) and imported into containerd, CoreDNS and the operator as Pods (the
# operator from config/default with kustomize, the image set to the assembled one, never pulled),
# then test/node: the Deployment is Available with in-cluster configuration and leader election, a
# pipeline Pod claims and deploys with the handed kubeconfig, a runner outside the cluster uses its
# kubeconfig, metrics are scraped through the Service; then operator-sdk scorecard runs the bundle's
# tests as Pods. Stops everything it started, pass or fail.
# Its own state directory and ports (TEST_NODE_CLUSTER_DIR; ports 16xxx); one node per machine at a
# time (kube-proxy owns the host's KUBE-* chains).
set -euo pipefail
REPO_ROOT=$(cd "$(dirname "$0")/.." && pwd)
export LOCAL_CLUSTER_DIR=${TEST_NODE_CLUSTER_DIR:-$REPO_ROOT/tmp/node-test}
export APISERVER_PORT=${TEST_NODE_APISERVER_PORT:-16443} ETCD_CLIENT_PORT=${TEST_NODE_ETCD_CLIENT_PORT:-16379}
export ETCD_PEER_PORT=${TEST_NODE_ETCD_PEER_PORT:-16380} CONTROLLER_MANAGER_PORT=${TEST_NODE_CONTROLLER_MANAGER_PORT:-16257}
export KUBELET_PORT=16250 KUBELET_HEALTHZ_PORT=16248 KUBE_PROXY_HEALTHZ_PORT=16256 KUBE_PROXY_METRICS_PORT=16249 SCHEDULER_PORT=16259
export NODE_BRIDGE=${TEST_NODE_BRIDGE:-nsclaim1} POD_CIDR=${TEST_NODE_POD_CIDR:-10.245.0.0/24}
export APISERVER_ADDRESS=${POD_CIDR%.*}.1 APISERVER_BRIDGE=$NODE_BRIDGE
export KUBE_BIN_DIR=${KUBE_BIN_DIR:-$REPO_ROOT/bin/k8s/1.37.1-linux-amd64}
KUBECTL=$KUBE_BIN_DIR/kubectl
KUSTOMIZE=${KUSTOMIZE:-$REPO_ROOT/bin/kustomize}
OPERATOR_SDK=${OPERATOR_SDK:-$REPO_ROOT/bin/operator-sdk}
IMAGES=$LOCAL_CLUSTER_DIR/images
MANAGER_IMAGE=localhost/nsclaim/nsclaim-operator:dev
OPERATOR_NS=nsclaim-operator-system
SERVER_URL=https://$APISERVER_ADDRESS:$APISERVER_PORT
# shellcheck source=hack/lib/scorecard.sh
source "$REPO_ROOT/hack/lib/scorecard.sh"
t0=$(date +%s)
say() { echo "test-node: [$(($(date +%s) - t0))s] $*" >&2; }

"$REPO_ROOT/hack/node-deps.sh"
cleanup() {
  local rc=$?
  if ((rc != 0)) && [[ -f $LOCAL_CLUSTER_DIR/kubeconfig ]]; then
    kc -n "$OPERATOR_NS" get pods -o wide >&2 || true
    kc get events -A --sort-by=.lastTimestamp 2>/dev/null | tail -20 >&2 || true
  fi
  "$REPO_ROOT/hack/local-node.sh" down || true
  "$REPO_ROOT/hack/local-cluster.sh" down || true
  say "done (exit $rc)"
}
kc() { KUBECACHEDIR=$LOCAL_CLUSTER_DIR/kubecache "$KUBECTL" --kubeconfig "$LOCAL_CLUSTER_DIR/kubeconfig" "$@"; }
trap cleanup EXIT
"$REPO_ROOT/hack/local-node.sh" down >/dev/null 2>&1 || true
"$REPO_ROOT/hack/local-cluster.sh" reset >/dev/null

say "assembling images in $IMAGES"
MANAGER_IMAGE=$MANAGER_IMAGE "$REPO_ROOT/hack/images.sh" "$IMAGES" pause manager httpd pipeline coredns untar scorecard-test

"$REPO_ROOT/hack/local-cluster.sh" up
PAUSE_IMAGE_TAR=$IMAGES/pause.tar "$REPO_ROOT/hack/local-node.sh" up
"$REPO_ROOT/hack/local-node.sh" import "$IMAGES/manager.tar" "$IMAGES/httpd.tar" "$IMAGES/pipeline.tar"
COREDNS_IMAGE_TAR=$IMAGES/coredns.tar "$REPO_ROOT/hack/local-node.sh" dns

say "deploying the operator with kustomize (config/default, image $MANAGER_IMAGE, never pulled)"
overlay=$LOCAL_CLUSTER_DIR/deploy
mkdir -p "$overlay"
base_image=$(awk '$1=="newName:"{print $2; exit}' "$REPO_ROOT/config/manager/kustomization.yaml")
# NSCLAIM_KUBECONFIG_SERVER: handed kubeconfigs name the API server's outside address; without it
# the manager writes its in-cluster address (https://10.96.0.1:443), which outside runners cannot reach.
cat >"$overlay/kustomization.yaml" <<EOF
resources:
- $(realpath --relative-to="$overlay" "$REPO_ROOT/config/default")
images:
- name: $base_image
  newName: ${MANAGER_IMAGE%:*}
  newTag: ${MANAGER_IMAGE##*:}
patches:
- target: {kind: Deployment, name: controller-manager}
  patch: |
    - op: add
      path: /spec/template/spec/containers/0/imagePullPolicy
      value: Never
EOF
# TEST_NODE_KUBECONFIG_SERVER=none leaves NSCLAIM_KUBECONFIG_SERVER out, to see what the manager
# writes into handed kubeconfigs on its own (the runner test then fails and prints it);
# =cluster-info leaves it out too but publishes the outside address in kube-public/cluster-info, as
# kubeadm does, which the manager reads when nothing is set.
case ${TEST_NODE_KUBECONFIG_SERVER:-} in
cluster-info)
  kc -n kube-public create configmap cluster-info --from-file=kubeconfig=<(
    printf 'apiVersion: v1\nkind: Config\nclusters:\n- name: ""\n  cluster:\n    server: %s\n    certificate-authority-data: %s\n' \
      "$SERVER_URL" "$(base64 -w0 <"$LOCAL_CLUSTER_DIR/pki/ca.crt")"
  ) >/dev/null
  ;;
esac
if [[ -z ${TEST_NODE_KUBECONFIG_SERVER:-} ]]; then
  cat >>"$overlay/kustomization.yaml" <<EOF
    - op: add
      path: /spec/template/spec/containers/0/env/-
      value: {name: NSCLAIM_KUBECONFIG_SERVER, value: "$SERVER_URL"}
EOF
fi
"$KUSTOMIZE" build "$overlay" >"$overlay/operator.yaml"
kc apply --server-side -f "$overlay/operator.yaml" >/dev/null
"$KUSTOMIZE" build "$REPO_ROOT/config/fence" | kc apply --server-side -f - >/dev/null
kc -n "$OPERATOR_NS" wait --for=condition=Available deployment/nsclaim-operator-controller-manager --timeout=180s
say "operator Deployment Available"

status=0
KUBECONFIG=$LOCAL_CLUSTER_DIR/kubeconfig NODE_APISERVER_URL=$SERVER_URL NODE_OPERATOR_NAMESPACE=$OPERATOR_NS \
  NODE_PIPELINE_IMAGE=localhost/nsclaim/pipeline:dev NODE_WORKLOAD_IMAGE=localhost/nsclaim/httpd:dev \
  NODE_MANAGER_IMAGE_TAR=$IMAGES/manager.tar NSCLAIM_REQUIRE_NODE=1 \
  go test ./test/node/ -count=1 -v -timeout 15m >"$LOCAL_CLUSTER_DIR/test-node.log" 2>&1 || status=$?
grep -E -- '^(--- |PASS|FAIL|ok)|^\s+--- |node_test.go' "$LOCAL_CLUSTER_DIR/test-node.log" || true
if ((status != 0)); then
  grep -E -A15 -- '--- FAIL' "$LOCAL_CLUSTER_DIR/test-node.log" >&2 || true
  echo "operator log tail:" >&2
  kc -n "$OPERATOR_NS" logs deployment/nsclaim-operator-controller-manager --tail=30 >&2 || true
fi
say "operator-sdk scorecard: the bundle's tests as Pods on the node"
"$REPO_ROOT/hack/local-node.sh" import "$IMAGES/untar.tar" "$IMAGES/scorecard-test.tar"
scorecard_pods "$LOCAL_CLUSTER_DIR/kubeconfig" "$LOCAL_CLUSTER_DIR" || status=1
say "node process memory (RSS): $("$REPO_ROOT/hack/local-node.sh" rss | tr '\n' ' ')"
exit "$status"
