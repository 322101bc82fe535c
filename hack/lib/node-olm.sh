# shellcheck shell=bash
# OLM on a local node, shared by hack/test-node-olm.sh and hack/test-release-rehearsal.sh. The caller
# defines kc (kubectl of the cluster) and say, and sets REPO_ROOT and STATE (its state directory).

# shellcheck source=fence-identity.sh
source "$REPO_ROOT/hack/lib/fence-identity.sh"

# wait_established FILE: kubectl wait fails ("accessor error") on a CRD that has no conditions yet.
wait_established() {
  for _ in $(seq 1 60); do
    kc wait --for condition=established --timeout=60s -f "$1" >/dev/null 2>&1 && return 0
    sleep 0.5
  done
  kc wait --for condition=established --timeout=1s -f "$1" >/dev/null
}

# olm_up OLM_IMAGE OLM_TOOLS: OLM's CRDs, then its olm and catalog operators as Pods: OLM's quickstart
# manifest (deploy/upstream/quickstart/olm.yaml, as `operator-sdk olm install` applies it, of the OLM
# module pinned in hack/tools/olm) with OLM_IMAGE (the image assembled by hack/images.sh olm, in the
# node's registry) for OLM's; the bundle unpack Job's opm image is OLM_TOOLS (opm alpha bundle
# extract), its util image OLM's own (cp, cpb). Left out: the packageserver CSV (the packages API;
# nothing here reads it) and the operatorhub.io CatalogSource. Copied CSVs are disabled.
olm_up() {
  local olm_image=$1 olm_tools=$2 olm_dir
  olm_dir=$(go -C "$REPO_ROOT/hack/tools/olm" list -m -f '{{.Dir}}' github.com/operator-framework/operator-lifecycle-manager)
  kc apply --server-side -f "$olm_dir/deploy/chart/crds/" >/dev/null
  wait_established "$olm_dir/deploy/chart/crds/"
  printf 'apiVersion: operators.coreos.com/v1\nkind: OLMConfig\nmetadata: {name: cluster}\nspec: {features: {disableCopiedCSVs: true}}\n' |
    kc apply --server-side -f - >/dev/null
  # The catalog operator of v0.46.0 takes only --flags (cobra); the quickstart still writes -namespace.
  awk 'BEGIN { RS = "\n---\n" } !/kind: ClusterServiceVersion/ && !/kind: CatalogSource/ { print "---"; print }' \
    "$olm_dir/deploy/upstream/quickstart/olm.yaml" |
    sed -e "s|quay.io/operator-framework/olm@sha256:[0-9a-f]*|$olm_image|" \
      -e "s|^\( *\)- '-\([a-zA-Z][a-zA-Z-]*\)'\$|\1- --\2|" -e "s|^\( *\)- -\([a-zA-Z]\)|\1- --\2|" \
      -e "s|^\( *\)- --configmapServerImage=.*|&\n\1- --opmImage=$olm_tools|" >"$STATE/olm.yaml"
  kc apply --server-side -f "$STATE/olm.yaml" >/dev/null
  kc -n olm rollout status deployment/olm-operator --timeout=180s >/dev/null
  kc -n olm rollout status deployment/catalog-operator --timeout=180s >/dev/null
  say "OLM's operators run as Pods: $(kc -n olm get pods -o jsonpath='{range .items[*]}{.metadata.name} {.status.phase}, {end}')"
}

# serve_catalog IMAGE: a catalog Pod (opm serve: the catalog image's own entrypoint) behind the Service
# olm/nsclaim-catalog, running IMAGE; returns once it is ready.
serve_catalog() {
  kc apply --server-side -f - >/dev/null <<YAML
apiVersion: apps/v1
kind: Deployment
metadata: {name: nsclaim-catalog, namespace: olm}
spec:
  selector: {matchLabels: {app: nsclaim-catalog}}
  strategy: {type: Recreate}
  template:
    metadata: {labels: {app: nsclaim-catalog}}
    spec:
      automountServiceAccountToken: false
      securityContext: {runAsNonRoot: true, seccompProfile: {type: RuntimeDefault}}
      containers:
      - name: opm
        image: $1
        ports: [{containerPort: 50051, name: grpc}]
        readinessProbe: {tcpSocket: {port: 50051}, periodSeconds: 1}
        securityContext: {allowPrivilegeEscalation: false, capabilities: {drop: [ALL]}}
---
apiVersion: v1
kind: Service
metadata: {name: nsclaim-catalog, namespace: olm}
spec:
  selector: {app: nsclaim-catalog}
  ports: [{name: grpc, port: 50051, targetPort: 50051}]
YAML
  kc -n olm rollout status deployment/nsclaim-catalog --timeout=120s >/dev/null
  say "catalog Pod serves $1 ($(kc -n olm get pods -l app=nsclaim-catalog -o jsonpath='{.items[0].metadata.name} on {.items[0].spec.nodeName}'))"
}

# apply_fence SRC WHAT: SRC/config/fence, as an admin applies it, once its username regex is checked
# against the ServiceAccount of this tree's CSVs and of PREV's (check_fence_identity; PREV, when set, is
# the previous release's directory), then wait until it is enforced (an admin's dry run of a
# ServiceAccount labelled as nsclaim's is denied by the label guard). The caller also sets KUSTOMIZE.
apply_fence() {
  local src=$1 what=$2 out fence
  fence=$("$KUSTOMIZE" build "$src/config/fence")
  check_fence_identity "$fence" "$REPO_ROOT/bundle" ${PREV:+"$PREV/bundle"} || return 1
  kc apply --server-side --force-conflicts -f - <<<"$fence" >/dev/null
  for _ in $(seq 1 60); do
    if ! out=$(printf 'apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: label-guard-probe\n  namespace: default\n  labels: {tenancy.nsclaim.dev/managed-by: nsclaim}\n' |
      kc create --dry-run=server -f - 2>&1) && [[ $out == *label-guard* ]]; then
      say "the admission fence of $what is applied and enforced"
      return 0
    fi
    sleep 0.5
  done
  echo "the admission fence of $what is not enforced: $out" >&2
  return 1
}

# olm_images PREV: every image test/olm's bundle and catalog modes need, as OCI layout tarballs in
# IMAGES (hack/images.sh): pause, olm-tools, olm (named OLM_IMAGE), manager-from/-to (the CSVs' own
# names, ghcr.io/nsclaim/nsclaim-operator:vX.Y.Z; PREVIOUS_VERSION's built from its own source in
# PREV/src, as its Dockerfile builds it), bundle-from/-to (FROM_BUNDLE, TO_BUNDLE; PREV/bundle and this
# tree's), catalog-from/-to (opm serve of hack/catalog.sh's catalogs of PREVIOUS_VERSION, and of
# PREVIOUS_VERSION and VERSION, written to STATE/catalog-from and -to). The caller sets IMAGES,
# OLM_IMAGE, FROM_BUNDLE, TO_BUNDLE, REGISTRY, VERSION, PREVIOUS_VERSION.
olm_images() {
  local prev=$1 c
  mkdir -p "$IMAGES"
  "$REPO_ROOT/hack/catalog.sh" "$STATE/catalog-from" "$PREVIOUS_VERSION" >&2
  "$REPO_ROOT/hack/catalog.sh" "$STATE/catalog-to" "$PREVIOUS_VERSION" "$VERSION" >&2
  OLM_IMAGE=$OLM_IMAGE "$REPO_ROOT/hack/images.sh" "$IMAGES" pause olm-tools olm
  MANAGER_IMAGE=ghcr.io/nsclaim/nsclaim-operator:v$VERSION "$REPO_ROOT/hack/images.sh" "$IMAGES" manager
  mv "$IMAGES/manager.tar" "$IMAGES/manager-to.tar"
  BUNDLE_IMAGE=$TO_BUNDLE "$REPO_ROOT/hack/images.sh" "$IMAGES" bundle
  mv "$IMAGES/bundle.tar" "$IMAGES/bundle-to.tar"
  BUNDLE_IMAGE=$FROM_BUNDLE BUNDLE_DIR=$prev/bundle "$REPO_ROOT/hack/images.sh" "$IMAGES" bundle
  mv "$IMAGES/bundle.tar" "$IMAGES/bundle-from.tar"
  # The previous release's manager as its Dockerfile builds it, from its own source.
  (cd "$prev/src" && CGO_ENABLED=0 GOOS=linux GOARCH=amd64 go build -trimpath -o "$IMAGES/manager-from" ./cmd)
  "$IMAGES/imagebuild" -o "$IMAGES/manager-from.tar" -name "ghcr.io/nsclaim/nsclaim-operator:v$PREVIOUS_VERSION" \
    -entrypoint /manager -user 65532:65532 -file /manager="$IMAGES/manager-from"
  for c in from to; do
    CATALOG_IMAGE=$REGISTRY/nsclaim/nsclaim-operator-catalog:$c CATALOG_DIR=$STATE/catalog-$c \
      "$REPO_ROOT/hack/images.sh" "$IMAGES" catalog
    mv "$IMAGES/catalog.tar" "$IMAGES/catalog-$c.tar"
  done
}

# olm_push PUSH...: pushes olm_images' tarballs (all but OLM's own, olm.tar, which the caller places)
# with the command PUSH... TARBALL NAME, NAME relative to the registry: the olm-tools image, also as
# ubi9/ubi:9.7 (operator-sdk run bundle-upgrade has no --decompression-image: its registry Pod's init
# container is registry.access.redhat.com/ubi9/ubi:9.7, which needs sh, cat and gzip; that host
# resolves to the registry), both managers, both bundles, both catalogs.
olm_push() {
  "$@" "$IMAGES/olm-tools.tar" nsclaim/olm-tools:dev >/dev/null
  "$@" "$IMAGES/olm-tools.tar" ubi9/ubi:9.7 >/dev/null
  "$@" "$IMAGES/manager-from.tar" "nsclaim/nsclaim-operator:v$PREVIOUS_VERSION" >/dev/null
  "$@" "$IMAGES/manager-to.tar" "nsclaim/nsclaim-operator:v$VERSION" >/dev/null
  "$@" "$IMAGES/bundle-from.tar" "nsclaim/nsclaim-operator-bundle:v$PREVIOUS_VERSION" >/dev/null
  "$@" "$IMAGES/bundle-to.tar" "nsclaim/nsclaim-operator-bundle:v$VERSION" >/dev/null
  "$@" "$IMAGES/catalog-from.tar" "nsclaim/nsclaim-operator-catalog:from" >/dev/null
  "$@" "$IMAGES/catalog-to.tar" "nsclaim/nsclaim-operator-catalog:to" >/dev/null
}

# olm_test MODE PREV ENV...: test/olm (TestInstallUpgradeUninstall, TestBundleHasNoMonitoringObjects and
# TestSubset) with PREVIOUS_VERSION (its bundle in PREV/bundle) as FROM and this tree as TO, in the namespace NS, ENV... added; its log in
# STATE/olm-test-MODE.log, of which the summary lines are printed, and on failure the cluster's state.
olm_test() {
  local mode=$1 prev=$2 status=0
  shift 2
  env NSCLAIM_OLM_NAMESPACE="$NS" NSCLAIM_OLM_FROM_CSV="nsclaim-operator.v$PREVIOUS_VERSION" \
    NSCLAIM_OLM_TO_CSV="nsclaim-operator.v$VERSION" NSCLAIM_OLM_FROM_BUNDLE="$prev/bundle" \
    NSCLAIM_OLM_TO_BUNDLE="$REPO_ROOT/bundle" "$@" \
    go test "$REPO_ROOT/test/olm/" -run 'TestInstallUpgradeUninstall|TestBundleHasNoMonitoringObjects|TestSubset' -count=1 -v -timeout 20m \
    >"$STATE/olm-test-$mode.log" 2>&1 || status=$?
  grep -E -- '^(--- |PASS|FAIL|ok)|^\s+--- |Lease is held|upgraded to|succeeded;|claims Ready in' "$STATE/olm-test-$mode.log" || true
  if ((status != 0)); then
    grep -E -A20 -- '_test.go:[0-9]+: *$|panic:|Error Trace' "$STATE/olm-test-$mode.log" | head -80 >&2 || true
    kc get pods -A -o wide >&2 || true
    kc -n "$NS" get csv,subscription,installplan,catalogsource >&2 || true
    kc get events -A --sort-by=.lastTimestamp 2>/dev/null | tail -25 >&2 || true
    for name in olm-operator catalog-operator; do
      echo "--- $name log tail:" >&2
      kc -n olm logs "deployment/$name" --tail=10 >&2 || true
    done
  fi
  return "$status"
}
