#!/usr/bin/env bash
# make test-e2e-olm: nsclaim installed and upgraded by OLM on the kind cluster of setup-test-e2e, with
# live claims (test/olm, the test of make test-olm and make test-node-olm), in two modes:
#
#   bundle   `operator-sdk run bundle` of PREVIOUS_VERSION's bundle image, then `operator-sdk run
#            bundle-upgrade` to VERSION's (hack/olm-bundle.sh, as on the local node);
#   catalog  a CatalogSource at a catalog Pod (opm serve of hack/catalog.sh's catalog of
#            PREVIOUS_VERSION) and a Subscription; the upgrade is offered by rolling the catalog Pod to
#            the catalog of PREVIOUS_VERSION and VERSION. The same cluster, after bundle's uninstall.
#
# KIND_REGISTRY says where the images come from:
#   local      (make test-kind; nothing pulled from outside) the images are assembled here as make
#              test-node-olm assembles them (hack/lib/node-olm.sh: olm_images, olm_push, olm_up): a
#              registry process (hack/tools/imagebuild/registry) runs inside the kind node on
#              <node IP>:KIND_REGISTRY_PORT, plain HTTP and TLS on one port (certificate signed by the
#              cluster's CA, which operator-sdk trusts: it reads an index image's labels over HTTPS
#              whatever --use-http says); containerd's /etc/containerd/certs.d (hack/kind-config.yaml)
#              sends that address, ghcr.io and registry.access.redhat.com there over plain HTTP; OLM's
#              image is loaded with `kind load image-archive`; OLM is its quickstart with that image
#              (olm_up). Modes: bundle catalog.
#   otherwise  (the release workflow: ghcr.io) OLM from `operator-sdk olm install`, the bundle images
#              PREVIOUS_BUNDLE_IMG and BUNDLE_IMG as pushed there. Modes: bundle (the catalog image is
#              published only after this test passed).
#
# Environment: KIND, KIND_CLUSTER, KUBECTL, KUBECONFIG (kind's), OPERATOR_SDK, KUSTOMIZE, VERSION,
# PREVIOUS_VERSION, KIND_NODE_IMAGE (for the cluster of each mode after the first), KIND_REGISTRY, BUNDLE_IMG, PREVIOUS_BUNDLE_IMG (not local), OLM_VERSION,
# OLM_E2E_MODES (default above), KIND_REGISTRY_PORT [5000], TOOLS_BIN, OPM.
set -euo pipefail
REPO_ROOT=$(cd "$(dirname "$0")/.." && pwd)
SELF=$REPO_ROOT/hack/test-e2e-olm.sh
: "${KIND:?}" "${KIND_CLUSTER:?}" "${KUBECTL:?}" "${KUBECONFIG:?}" "${OPERATOR_SDK:?}" "${KUSTOMIZE:?}"
: "${VERSION:?}" "${PREVIOUS_VERSION:?}" "${OLM_VERSION:?}"
export TOOLS_BIN=${TOOLS_BIN:-$REPO_ROOT/bin} OPM=${OPM:-$REPO_ROOT/bin/opm}
KIND_REGISTRY=${KIND_REGISTRY:-ghcr.io}
NS=${OLM_E2E_NAMESPACE:-nsclaim-operator-system}
STATE=$REPO_ROOT/tmp/kind-olm
IMAGES=$STATE/images
NODE=$KIND_CLUSTER-control-plane
OLM_IMAGE=localhost/nsclaim/olm:$OLM_VERSION
# addresses: the kind node's address on Docker's network, the registry in it, the images pulled from it.
addresses() {
  NODE_IP=$(docker inspect -f '{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}' "$NODE")
  REGISTRY=$NODE_IP:${KIND_REGISTRY_PORT:-5000}
  OLM_TOOLS=$REGISTRY/nsclaim/olm-tools:dev
  if [[ $KIND_REGISTRY == local ]]; then
    FROM_BUNDLE=$REGISTRY/nsclaim/nsclaim-operator-bundle:v$PREVIOUS_VERSION
    TO_BUNDLE=$REGISTRY/nsclaim/nsclaim-operator-bundle:v$VERSION
  else
    FROM_BUNDLE=${PREVIOUS_BUNDLE_IMG:?} TO_BUNDLE=${BUNDLE_IMG:?}
  fi
}
addresses
if [[ $KIND_REGISTRY == local ]]; then MODES=${OLM_E2E_MODES:-bundle catalog}; else MODES=${OLM_E2E_MODES:-bundle}; fi
t0=$(date +%s)
say() { echo "test-e2e-olm: [$(($(date +%s) - t0))s] $*" >&2; }
kc() { "$KUBECTL" "$@"; }
# wait_established, apply_fence, olm_images, olm_push, olm_up, serve_catalog, olm_test: hack/lib/node-olm.sh
# shellcheck source=lib/node-olm.sh
source "$REPO_ROOT/hack/lib/node-olm.sh"

# registry_up: the registry process in the kind node, its certificate, containerd's hosts.toml files.
registry_up() {
  local pki=$STATE/pki host
  mkdir -p "$pki"
  CGO_ENABLED=0 go -C "$REPO_ROOT/hack/tools/imagebuild" build -o "$STATE/registry" ./registry
  docker exec "$NODE" cat /etc/kubernetes/pki/ca.crt >"$pki/ca.crt"
  (umask 077 && docker exec "$NODE" cat /etc/kubernetes/pki/ca.key >"$pki/ca.key")
  openssl genrsa -out "$pki/registry.key" 2048 2>/dev/null
  openssl req -new -key "$pki/registry.key" -subj "/CN=$NODE_IP" -out "$pki/registry.csr" 2>/dev/null
  printf '%s\n' "basicConstraints=critical,CA:FALSE" "keyUsage=critical,digitalSignature,keyEncipherment" \
    "extendedKeyUsage=serverAuth" "subjectAltName=IP:$NODE_IP,IP:127.0.0.1" >"$pki/registry.ext"
  openssl x509 -req -in "$pki/registry.csr" -CA "$pki/ca.crt" -CAkey "$pki/ca.key" -set_serial "0x$(openssl rand -hex 16)" \
    -days 1 -sha256 -extfile "$pki/registry.ext" -out "$pki/registry.crt" 2>/dev/null
  rm -f "$pki/ca.key" "$pki/registry.csr" "$pki/registry.ext"
  docker exec "$NODE" mkdir -p /nsclaim-registry/blobs
  docker cp "$STATE/registry" "$NODE:/nsclaim-registry/registry" >/dev/null
  docker cp "$pki/registry.crt" "$NODE:/nsclaim-registry/registry.crt" >/dev/null
  docker cp "$pki/registry.key" "$NODE:/nsclaim-registry/registry.key" >/dev/null
  docker exec -d "$NODE" sh -c "exec /nsclaim-registry/registry serve -addr $REGISTRY -dir /nsclaim-registry/blobs \
    -tls-cert /nsclaim-registry/registry.crt -tls-key /nsclaim-registry/registry.key >/nsclaim-registry/log 2>&1"
  for _ in $(seq 1 60); do curl -fsS --max-time 2 -o /dev/null "http://$REGISTRY/v2/" && break; sleep 0.5; done
  curl -fsS --max-time 2 -o /dev/null "http://$REGISTRY/v2/"
  for host in "$REGISTRY" ghcr.io registry.access.redhat.com; do
    docker exec "$NODE" mkdir -p "/etc/containerd/certs.d/$host"
    printf 'server = "http://%s"\n\n[host."http://%s"]\n  capabilities = ["pull", "resolve"]\n' "$REGISTRY" "$REGISTRY" |
      docker exec -i "$NODE" tee "/etc/containerd/certs.d/$host/hosts.toml" >/dev/null
  done
  say "registry on $REGISTRY in $NODE; containerd pulls $REGISTRY, ghcr.io and registry.access.redhat.com from it"
}

push() { "$STATE/registry" push "$1" "$REGISTRY/$2" >&2; }

# cluster_olm: OLM on the cluster, and the registry and images (local) or OLM's release (otherwise).
cluster_olm() {
  if [[ $KIND_REGISTRY == local ]]; then
    registry_up
    olm_push push
    "$KIND" load image-archive "$IMAGES/olm.tar" --name "$KIND_CLUSTER"
    say "images pushed; OLM's image loaded into $NODE"
    olm_up "$OLM_IMAGE" "$OLM_TOOLS"
  else
    "$OPERATOR_SDK" olm install --version "$OLM_VERSION" --timeout 5m
  fi
  # PREVIOUS_VERSION's bundle carries a ServiceMonitor and a PrometheusRule: OLM needs their kinds served
  # (kind has no Prometheus Operator; test/olm/monitoring-crds.yaml are stand-ins, as in test-olm).
  kc apply --server-side -f "$REPO_ROOT/test/olm/monitoring-crds.yaml" >/dev/null
  wait_established "$REPO_ROOT/test/olm/monitoring-crds.yaml"
}

# cluster_again: the kind cluster deleted and made again by setup-test-e2e (KIND_NODE_IMAGE as given).
cluster_again() {
  "$KIND" delete cluster --name "$KIND_CLUSTER"
  make -C "$REPO_ROOT" --no-print-directory setup-test-e2e KIND_CLUSTER="$KIND_CLUSTER" KIND_NODE_IMAGE="${KIND_NODE_IMAGE:-}" >&2
  "$KIND" get kubeconfig --name "$KIND_CLUSTER" >"$KUBECONFIG"
  addresses
}

main() {
  local mode status=0 m0 failed=()
  rm -rf "$STATE" && mkdir -p "$STATE"
  PREV=$(TOOLS_BIN=$TOOLS_BIN "$REPO_ROOT/hack/releases.sh" build "$PREVIOUS_VERSION")
  local bundle_env=(OPERATOR_SDK="$OPERATOR_SDK" KUSTOMIZE="$KUSTOMIZE" KUBECTL="$KUBECTL")
  if [[ $KIND_REGISTRY == local ]]; then
    say "assembling images in $IMAGES (previous release $PREVIOUS_VERSION from $PREV)"
    olm_images "$PREV"
    # operator-sdk trusts the cluster CA for the index image's labels; everything else over plain HTTP.
    bundle_env+=(SSL_CERT_FILE="$STATE/pki/ca.crt" OPERATOR_SDK_FLAGS=--use-http NSCLAIM_OLM_COPIED_CSVS=disabled)
  fi
  local first=true
  for mode in $MODES; do
    m0=$SECONDS status=0
    # Each mode on a fresh cluster, as on the local node: run bundle leaves its CatalogSource and
    # OperatorGroup behind (a second OperatorGroup in the namespace stops OLM).
    $first || cluster_again
    first=false
    cluster_olm
    say "$mode: cluster, registry, images and OLM ready after $((SECONDS - m0))s"
    case $mode in
    bundle)
      local install_flags=()
      if [[ $KIND_REGISTRY == local ]]; then
        install_flags=(OPERATOR_SDK_INSTALL_FLAGS="--index-image $OLM_TOOLS --decompression-image $OLM_TOOLS")
      fi
      olm_test bundle "$PREV" "${bundle_env[@]}" "${install_flags[@]}" \
        NSCLAIM_OLM_INSTALL_CMD="$REPO_ROOT/hack/olm-bundle.sh install $FROM_BUNDLE $PREV/src" \
        NSCLAIM_OLM_UPGRADE_CMD="$REPO_ROOT/hack/olm-bundle.sh upgrade $TO_BUNDLE $REPO_ROOT" || status=$?
      ;;
    catalog)
      [[ $KIND_REGISTRY == local ]] || { say "catalog: needs KIND_REGISTRY=local"; exit 2; }
      apply_fence "$PREV/src" "$PREVIOUS_VERSION"
      serve_catalog "$REGISTRY/nsclaim/nsclaim-operator-catalog:from"
      olm_test catalog "$PREV" NSCLAIM_OLM_COPIED_CSVS=disabled NSCLAIM_OLM_NO_MONITORING_CRDS=1 \
        NSCLAIM_OLM_CATALOG_ADDRESS="$(kc -n olm get service nsclaim-catalog -o jsonpath='{.spec.clusterIP}'):50051" \
        NSCLAIM_OLM_OFFER_UPGRADE_CMD="$SELF offer-upgrade" NSCLAIM_OLM_KUBECONFIG_SERVER="https://$NODE_IP:6443" || status=$?
      ;;
    *) say "unknown mode $mode (bundle, catalog)"; exit 2 ;;
    esac
    say "$mode: $( ((status == 0)) && echo PASS || echo FAIL) in $((SECONDS - m0))s; node container memory: $(docker stats --no-stream --format '{{.MemUsage}}' "$NODE")"
    ((status == 0)) || failed+=("$mode")
  done
  if ((${#failed[@]} > 0)); then say "FAIL: ${failed[*]}"; return 1; fi
  say "PASS: $MODES"
}

case ${1:-} in
offer-upgrade)
  # Monitoring is optional under OLM: VERSION's bundle carries no monitoring.coreos.com object, so it
  # installs on a cluster without the Prometheus Operator's CRDs (test/olm checks they are gone:
  # NSCLAIM_OLM_NO_MONITORING_CRDS). The catalog path only: run bundle-upgrade is not tried without them.
  kc delete --wait -f "$REPO_ROOT/test/olm/monitoring-crds.yaml" >/dev/null
  apply_fence "$REPO_ROOT" "$VERSION"
  serve_catalog "$REGISTRY/nsclaim/nsclaim-operator-catalog:to"
  ;;
*) main ;;
esac
