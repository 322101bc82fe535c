#!/usr/bin/env bash
# make test-node-olm: nsclaim installed and upgraded by OLM as users do it, onto a real node, with
# live claims. Each mode gets a fresh local cluster with a node (hack/local-cluster.sh,
# hack/local-node.sh) and the node's image registry (plain HTTP on the bridge; containerd resolves
# ghcr.io and registry.access.redhat.com there, so nothing is pulled from outside), OLM's olm and
# catalog operators as Pods (OLM's quickstart manifest, deploy/upstream/quickstart/olm.yaml, as
# `operator-sdk olm install` applies it, with the image assembled here; no packageserver and no
# operatorhub.io CatalogSource), and runs
# test/olm (the same test as make test-olm and make test-e2e-olm): install PREVIOUS_VERSION, claims
# Ready, the leader election Lease held by the manager's Pod, upgrade to this tree's VERSION with the
# claims live (same claims, Secrets, namespaces; the handed tokens still work), uninstall.
#
#   bundle   `operator-sdk run bundle` of PREVIOUS_VERSION's bundle image (built by its own commit,
#            hack/releases.sh build), then `operator-sdk run bundle-upgrade` to this tree's bundle
#            image. Both images are pushed to the node's registry; operator-sdk's registry Pod and
#            OLM's bundle unpack Job run on the node from the olm-tools image (hack/images.sh).
#   catalog  a CatalogSource at a catalog Pod (opm serve of hack/catalog.sh's file-based catalog of
#            PREVIOUS_VERSION) behind a Service, a Subscription (Manual approval); the upgrade is
#            offered by rolling the catalog Pod to a catalog of PREVIOUS_VERSION and VERSION
#            (replaces/skipRange), and OLM upgrades.
#
# The manager images are the CSVs' own names (ghcr.io/nsclaim/nsclaim-operator:vX.Y.Z), built from
# each version's source (hack/images.sh manager) and pushed to the node's registry under those names.
# The admission fence of each version is applied as an admin does: the previous release's before the
# install, this tree's before the upgrade.
#
# Usage: hack/test-node-olm.sh [bundle|catalog]...   (default: bundle catalog)
# Shares test-node's ports and bridge (one node per machine): do not run both at once.
set -euo pipefail
REPO_ROOT=$(cd "$(dirname "$0")/.." && pwd)
SELF=$REPO_ROOT/hack/test-node-olm.sh
export LOCAL_CLUSTER_DIR=${TEST_NODE_OLM_CLUSTER_DIR:-$REPO_ROOT/tmp/node-olm}
export APISERVER_PORT=16443 ETCD_CLIENT_PORT=16379 ETCD_PEER_PORT=16380 CONTROLLER_MANAGER_PORT=16257
export KUBELET_PORT=16250 KUBELET_HEALTHZ_PORT=16248 KUBE_PROXY_HEALTHZ_PORT=16256 KUBE_PROXY_METRICS_PORT=16249 SCHEDULER_PORT=16259
export NODE_BRIDGE=nsclaim1 POD_CIDR=10.245.0.0/24 REGISTRY_PORT=16500
export REGISTRY_MIRRORS="ghcr.io registry.access.redhat.com"
export APISERVER_ADDRESS=${POD_CIDR%.*}.1 APISERVER_BRIDGE=$NODE_BRIDGE
export KUBE_BIN_DIR=${KUBE_BIN_DIR:-$REPO_ROOT/bin/k8s/1.37.1-linux-amd64}
export VERSION=${VERSION:-0.4.0} PREVIOUS_VERSION=${PREVIOUS_VERSION:-0.3.0}
export OPM=${OPM:-$REPO_ROOT/bin/opm} TOOLS_BIN=${TOOLS_BIN:-$REPO_ROOT/bin}
OLM_VERSION=${OLM_VERSION:-v0.46.0}
KUSTOMIZE=${KUSTOMIZE:-$REPO_ROOT/bin/kustomize}
OPERATOR_SDK=${OPERATOR_SDK:-$REPO_ROOT/bin/operator-sdk}
KUBECTL=$KUBE_BIN_DIR/kubectl
STATE=$(realpath -m "$LOCAL_CLUSTER_DIR")
IMAGES=$STATE-images
NS=nsclaim-operator-system
REGISTRY=$APISERVER_ADDRESS:$REGISTRY_PORT
# The olm-tools image serves operator-sdk as index and decompression image and OLM as opm image; OLM's
# own image (olm, catalog, cpb, cp) is also its util image.
OLM_TOOLS=$REGISTRY/nsclaim/olm-tools:dev
OLM_IMAGE=$REGISTRY/nsclaim/olm:$OLM_VERSION
FROM_BUNDLE=$REGISTRY/nsclaim/nsclaim-operator-bundle:v$PREVIOUS_VERSION
TO_BUNDLE=$REGISTRY/nsclaim/nsclaim-operator-bundle:v$VERSION
t0=$(date +%s)
say() { echo "test-node-olm: [$(($(date +%s) - t0))s] $*" >&2; }
kc() { KUBECACHEDIR=$STATE/kubecache "$KUBECTL" --kubeconfig "$STATE/kubeconfig" "$@"; }
# wait_established, apply_fence, olm_images, olm_push, olm_up, serve_catalog, olm_test: hack/lib/node-olm.sh
# shellcheck source=lib/node-olm.sh
source "$REPO_ROOT/hack/lib/node-olm.sh"

teardown() {
  "$REPO_ROOT/hack/local-node.sh" down || true
  "$REPO_ROOT/hack/local-cluster.sh" down || true
}

# start_cluster: a fresh cluster and node with OLM, the images in the registry and the previous
# release's fence.
start_cluster() {
  local prev=$1
  "$REPO_ROOT/hack/local-node.sh" down >/dev/null 2>&1 || true
  "$REPO_ROOT/hack/local-cluster.sh" reset >/dev/null
  mkdir -p "$STATE/logs"
  "$REPO_ROOT/hack/local-cluster.sh" up
  PAUSE_IMAGE_TAR=$IMAGES/pause.tar "$REPO_ROOT/hack/local-node.sh" up
  "$REPO_ROOT/hack/local-node.sh" push "$IMAGES/olm.tar" "nsclaim/olm:$OLM_VERSION" >/dev/null
  olm_push "$REPO_ROOT/hack/local-node.sh" push

  olm_up "$OLM_IMAGE" "$OLM_TOOLS"
  # PREVIOUS_VERSION's bundle carries a ServiceMonitor and a PrometheusRule: their kinds must be served
  # (stand-ins); VERSION's bundle carries none (test-olm installs it without them).
  kc apply --server-side -f "$REPO_ROOT/test/olm/monitoring-crds.yaml" >/dev/null
  wait_established "$REPO_ROOT/test/olm/monitoring-crds.yaml"
  apply_fence "$prev/src" "$PREVIOUS_VERSION"
}

# run_olm_test MODE PREV ENV...: test/olm (olm_test) on the node, its log also in tmp/.
run_olm_test() {
  local mode=$1 status=0
  olm_test "$@" KUBECONFIG="$STATE/kubeconfig" NSCLAIM_OLM_COPIED_CSVS=disabled || status=$?
  cp "$STATE/olm-test-$mode.log" "$REPO_ROOT/tmp/node-olm-test-$mode.log" 2>/dev/null || true
  return "$status"
}

run_mode() {
  local mode=$1 prev status=0 m0=$SECONDS
  prev=$("$REPO_ROOT/hack/releases.sh" build "$PREVIOUS_VERSION")
  say "$mode: starting a cluster with a node, its registry and OLM"
  start_cluster "$prev"
  say "$mode: cluster, node, registry, images and OLM ready after $((SECONDS - m0))s"
  case $mode in
  bundle)
    # hack/olm-bundle.sh, as on kind. operator-sdk v1.42.2 reads an index image's labels over HTTPS
    # whatever --use-http says (internal/registry/image.go GetImageLabels), so it trusts the cluster CA,
    # which signed the registry's certificate; bundles and the index are pulled over plain HTTP.
    run_olm_test bundle "$prev" SSL_CERT_FILE="$STATE/pki/ca.crt" OPERATOR_SDK="$OPERATOR_SDK" KUSTOMIZE="$KUSTOMIZE" KUBECTL="$KUBECTL" \
      OPERATOR_SDK_FLAGS=--use-http OPERATOR_SDK_INSTALL_FLAGS="--index-image $OLM_TOOLS --decompression-image $OLM_TOOLS" \
      NSCLAIM_OLM_INSTALL_CMD="$REPO_ROOT/hack/olm-bundle.sh install $FROM_BUNDLE $prev/src" \
      NSCLAIM_OLM_UPGRADE_CMD="$REPO_ROOT/hack/olm-bundle.sh upgrade $TO_BUNDLE $REPO_ROOT" || status=$?
    ;;
  catalog)
    serve_catalog_of from
    run_olm_test catalog "$prev" \
      NSCLAIM_OLM_CATALOG_ADDRESS="$(kc -n olm get service nsclaim-catalog -o jsonpath='{.spec.clusterIP}'):50051" \
      NSCLAIM_OLM_OFFER_UPGRADE_CMD="$SELF offer-upgrade" NSCLAIM_OLM_KUBECONFIG_SERVER="https://$APISERVER_ADDRESS:$APISERVER_PORT" || status=$?
    ;;
  esac
  say "$mode: $( ((status == 0)) && echo PASS || echo FAIL) in $((SECONDS - m0))s; node memory (RSS): $("$REPO_ROOT/hack/local-node.sh" rss | tr '\n' ' ')"
  teardown
  ((status == 0)) || FAILED+=("$mode")
}

# serve_catalog_of from|to: the catalog Pod behind the Service olm/nsclaim-catalog runs the catalog
# image of PREVIOUS_VERSION (from) or of PREVIOUS_VERSION and VERSION (to).
serve_catalog_of() {
  serve_catalog "$REGISTRY/nsclaim/nsclaim-operator-catalog:$1"
}

main() {
  local modes=("$@") mode prev
  ((${#modes[@]} > 0)) || modes=(bundle catalog)
  for mode in "${modes[@]}"; do
    [[ $mode == bundle || $mode == catalog ]] || { echo "usage: $0 [bundle|catalog]..." >&2; exit 2; }
  done
  "$REPO_ROOT/hack/node-deps.sh"
  trap 'rc=$?; teardown; say "done (exit $rc)"' EXIT
  prev=$("$REPO_ROOT/hack/releases.sh" build "$PREVIOUS_VERSION")
  say "assembling images in $IMAGES (previous release $PREVIOUS_VERSION from $prev)"
  olm_images "$prev"
  say "images assembled"
  # run_mode records a failed test in FAILED and goes on; anything else failing stops the run (set -e).
  FAILED=()
  for mode in "${modes[@]}"; do
    run_mode "$mode"
  done
  if ((${#FAILED[@]} > 0)); then
    say "FAIL: ${FAILED[*]}"
    return 1
  fi
  say "PASS: ${modes[*]}"
}

case ${1:-} in
offer-upgrade)
  apply_fence "$REPO_ROOT" "$VERSION"
  serve_catalog_of to
  ;;
*) main "$@" ;;
esac
