#!/usr/bin/env bash
# make test-release-rehearsal: the release of RELEASE_DIR (make release-dir) installed and used as a user
# downloads it, from that directory alone:
#   - its files are served by an HTTP server on loopback (python3 -m http.server), and every file is
#     downloaded from there and checked against the served SHA256SUMS before use;
#   - its images (manager-image.oci.tar, ...) are pushed, as the release workflow pushes them (skopeo copy
#     --all of the OCI archives; Debian's skopeo, hack/node-deps.sh), into the local node's registry, which containerd uses for ghcr.io (REGISTRY_MIRRORS): the Deployment of
#     install.yaml pulls ghcr.io/nsclaim/nsclaim-operator:vVERSION, the multi-arch index, from there;
#   - a fresh local cluster with a real node (hack/local-cluster.sh, hack/local-node.sh; test-node's ports
#     and bridge: do not run both at once), then
#     0. the upgrade (with PREVIOUS_DIR, hack/previous-release-dir.sh): the previous release's directory
#        served too, its images pushed; its install.yaml, a claim Ready; this release's install.yaml then
#        fence.yaml (the README's order), never new RBAC unfenced in between; the claim keeps its
#        namespace and its old kubeconfig works, a new claim is Ready; the README's uninstall;
#     1. the README's quick start, word for word (the block between its quickstart markers) with R set to
#        the served URL: install.yaml and fence.yaml applied from the URLs, the rollout waited for;
#     2. the manager Pod runs the image pulled from the index (its imageID is the index's digest); the
#        release's SBOM lists exactly the modules of the manager binary in the index's amd64 image;
#     3. the plugin: kubectl-nsclaim_linux_amd64.tar.gz from the served release, its checksum verified,
#        an admin makes a pipeline identity; the pipeline claims, writes into its namespace, releases;
#        krew (built from its Go module) installs the plugin from the served krew manifest and archive
#        (kubectl krew install --manifest --archive, KREW_ROOT of its own); kubectl runs it from krew's bin;
#     4. the GitHub Action (action/main.js then action/post.js, with download-base = the served URL) and
#        the GitLab component's claim and release jobs (download-base likewise) download the plugin
#        from the served release, verify its checksum, claim and release;
#     5. the README's uninstall (the block between its uninstall markers), then no operator object is
#        left: no CRD, ClusterRole, ClusterRoleBinding, admission policy or namespace of nsclaim;
#     6. from a checkout: a fresh clone of HEAD runs `make deploy IMG=<the manager image in the node's
#        registry>` (it builds the kubectl it runs), the manager runs as a Pod, `make undeploy` removes
#        it (REHEARSAL_DEPLOY_FROM_CLONE=0 skips this; it reads the repository, not the release);
#     7. OLM (its operators as Pods, hack/lib/node-olm.sh): a CatalogSource at a Pod running the release's
#        catalog image and a Subscription install the operator on a cluster with no monitoring.coreos.com
#        CRD (a claim is Ready); then the Prometheus Operator's CRDs applied (generated from its API module:
#        hack/monitoring-crds.sh; REHEARSAL_OLM_REINSTALL=1: uninstalled before and installed again after),
#        monitoring.yaml applied, and its ServiceMonitor,
#        translated into the Prometheus Operator's scrape job (hack/servicemonitor-scrape.py), is scraped
#        by Prometheus 2.42.0 (PROMETHEUS) with the token of a ServiceAccount bound to the metrics reader.
# Its log names every artefact it consumed and from which URL or registry reference. Node
# infrastructure that is no release artefact (the pause image, kubectl, the node's binaries) comes from
# this checkout, as for test-node.
#
# Usage: hack/test-release-rehearsal.sh RELEASE_DIR [PREVIOUS_DIR]     Environment: VERSION (0.4.0),
#   PREVIOUS_VERSION (0.3.0), REHEARSAL_HTTP_PORT (16580; PREVIOUS_DIR at the port after it, Prometheus
#   10 after it), TEST_REHEARSAL_CLUSTER_DIR (<repo>/tmp/rehearsal), KREW (<repo>/bin/krew), PROMETHEUS,
#   CONTROLLER_GEN, OLM_VERSION (as the Makefile sets them).
set -euo pipefail
REPO_ROOT=$(cd "$(dirname "$0")/.." && pwd)
RELEASE_DIR=$(realpath "${1:?usage: $0 RELEASE_DIR [PREVIOUS_DIR]}")
export LOCAL_CLUSTER_DIR=${TEST_REHEARSAL_CLUSTER_DIR:-$REPO_ROOT/tmp/rehearsal}
export APISERVER_PORT=16443 ETCD_CLIENT_PORT=16379 ETCD_PEER_PORT=16380 CONTROLLER_MANAGER_PORT=16257
export KUBELET_PORT=16250 KUBELET_HEALTHZ_PORT=16248 KUBE_PROXY_HEALTHZ_PORT=16256 KUBE_PROXY_METRICS_PORT=16249 SCHEDULER_PORT=16259
export NODE_BRIDGE=nsclaim1 POD_CIDR=10.245.0.0/24 REGISTRY_PORT=16500 REGISTRY_MIRRORS=ghcr.io
export APISERVER_ADDRESS=${POD_CIDR%.*}.1 APISERVER_BRIDGE=$NODE_BRIDGE
export KUBE_BIN_DIR=${KUBE_BIN_DIR:-$REPO_ROOT/bin/k8s/1.37.1-linux-amd64}
VERSION=${VERSION:-0.4.0}
PREVIOUS_VERSION=${PREVIOUS_VERSION:-0.3.0}
PREVIOUS_DIR=${2:+$(realpath "$2")}
KREW=${KREW:-$REPO_ROOT/bin/krew}
PROMETHEUS=${PROMETHEUS:-$REPO_ROOT/bin/prometheus-2.42.0/prometheus}
CONTROLLER_GEN=${CONTROLLER_GEN:-$REPO_ROOT/bin/controller-gen}
OLM_VERSION=${OLM_VERSION:-v0.46.0}
HTTP_PORT=${REHEARSAL_HTTP_PORT:-16580}
URL=http://127.0.0.1:$HTTP_PORT
PREVIOUS_HTTP_PORT=$((HTTP_PORT + 1))
PREVIOUS_URL=http://127.0.0.1:$PREVIOUS_HTTP_PORT
STATE=$(realpath -m "$LOCAL_CLUSTER_DIR")
WORK=$STATE-work
REGISTRY=$APISERVER_ADDRESS:$REGISTRY_PORT
SERVER_URL=https://$APISERVER_ADDRESS:$APISERVER_PORT
NS=nsclaim-operator-system
DEPLOY=nsclaim-operator-controller-manager
t0=$(date +%s)
say() { echo "rehearsal: [$(($(date +%s) - t0))s] $*" >&2; }
kc() { KUBECACHEDIR=$STATE/kubecache "$KUBE_BIN_DIR/kubectl" --kubeconfig "$STATE/kubeconfig" "$@"; }
# wait_established, olm_up, serve_catalog: hack/lib/node-olm.sh
# shellcheck source=lib/node-olm.sh
source "$REPO_ROOT/hack/lib/node-olm.sh"
HTTP_PIDS=()
OLM_IMAGES_PID=""

cleanup() {
  local rc=$?
  if ((rc != 0)) && [[ -f $STATE/kubeconfig ]]; then
    kc get pods -A -o wide >&2 || true
    kc get events -A --sort-by=.lastTimestamp 2>/dev/null | tail -20 >&2 || true
    kc -n "$NS" logs "deployment/$DEPLOY" --tail=20 >&2 || true
  fi
  local pid
  for pid in "${HTTP_PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  "$REPO_ROOT/hack/local-node.sh" down >/dev/null 2>&1 || true
  "$REPO_ROOT/hack/local-cluster.sh" down >/dev/null 2>&1 || true
  say "done (exit $rc)"
}

# fetch NAME [BASE DIR]: download NAME from the served release (BASE: URL) into DIR (WORK/download),
# check it against DIR's SHA256SUMS (downloaded from BASE first).
fetch() {
  local f=$1 base=${2:-$URL} dir=${3:-$WORK/download}
  curl -fsS -o "$dir/$f" "$base/$f"
  (cd "$dir" && grep " $f\$" SHA256SUMS | sha256sum -c --quiet -) || { say "$f: checksum mismatch"; return 1; }
  say "consumed $f from $base/$f (sha256 $(sha256sum "$dir/$f" | cut -c1-16)..., as SHA256SUMS says)"
}

# serve DIR PORT: an HTTP server on loopback serving DIR (its PID appended to HTTP_PIDS); waits until
# DIR's SHA256SUMS is served.
serve() {
  python3 -m http.server --bind 127.0.0.1 --directory "$1" "$2" >>"$WORK/http.log" 2>&1 &
  HTTP_PIDS+=("$!")
  for _ in $(seq 1 50); do curl -fsS -o /dev/null "http://127.0.0.1:$2/SHA256SUMS" 2>/dev/null && return 0; sleep 0.2; done
  say "nothing serves $1 at port $2"
  return 1
}

# push_images BASE DIR: the images of the release served at BASE, as its images.txt names them,
# downloaded into DIR and published as the release workflow publishes them: `skopeo copy --all
# "oci-archive:$file" "docker://$ref"` (Debian's skopeo, hack/node-deps.sh), the reference's ghcr.io
# replaced by the node's registry (plain HTTP: --dest-tls-verify=false), which containerd uses for
# ghcr.io. The images in the registry must hold the archives' manifests (same instance digests).
push_images() {
  local base=$1 dir=$2 file ref dest want got
  grep -qF 'skopeo copy --all "oci-archive:$file" "docker://$ref"' "$REPO_ROOT/.github/workflows/release.yaml" ||
    { say "the release workflow no longer publishes with skopeo copy --all \"oci-archive:\$file\" \"docker://\$ref\": rehearse what it does"; return 1; }
  fetch images.txt "$base" "$dir"
  while read -r file ref; do
    fetch "$file" "$base" "$dir"
    dest=$REGISTRY/${ref#ghcr.io/}
    (cd "$dir" && skopeo copy -q --all --dest-tls-verify=false "oci-archive:$file" "docker://$dest")
    want=$(skopeo inspect --raw "oci-archive:$dir/$file" | jq -c '[.manifests[]?.digest] | sort')
    got=$(skopeo inspect --raw --tls-verify=false "docker://$dest" | jq -c '[.manifests[]?.digest] | sort')
    [[ $want == "$got" ]] || { say "$dest does not hold the manifests of $file: $got, not $want"; return 1; }
    say "published $file as $ref: skopeo $(skopeo --version | awk '{print $3}') copy --all oci-archive:$file docker://$dest (which containerd uses for ghcr.io; $(skopeo inspect --raw --tls-verify=false "docker://$dest" | jq -r '.mediaType | sub("application/vnd.oci.image."; "")'), digest $(skopeo inspect --raw --tls-verify=false "docker://$dest" | sha256sum | cut -c1-16)...)"
  done <"$dir/images.txt"
}

# readme_block NAME: the shell code of README.md between <!-- NAME:begin --> and <!-- NAME:end -->.
readme_block() {
  awk -v b="<!-- $1:begin -->" -v e="<!-- $1:end -->" '$0==b {on=1; next} $0==e {on=0} on && /^```/ {code=!code; next} on && code' "$REPO_ROOT/README.md"
}

# user_shell CODE [R]: run CODE as a user's shell runs it: kubectl and the downloaded plugin on the PATH,
# KUBECONFIG the cluster admin's, R the served release (URL).
user_shell() {
  env -i HOME="$WORK/home" PATH="$WORK/plugin:$KUBE_BIN_DIR:/usr/bin:/bin" KUBECONFIG="$STATE/kubeconfig" \
    KUBECACHEDIR="$STATE/kubecache" R="${2:-$URL}" bash -euo pipefail -c "$1"
}

main() {
  "$REPO_ROOT/hack/node-deps.sh"
  trap cleanup EXIT
  "$REPO_ROOT/hack/local-node.sh" down >/dev/null 2>&1 || true
  "$REPO_ROOT/hack/local-cluster.sh" reset >/dev/null
  rm -rf "$WORK" && mkdir -p "$WORK/download" "$WORK/previous" "$WORK/home" "$WORK/plugin" "$WORK/infra"

  serve "$RELEASE_DIR" "$HTTP_PORT"
  curl -fsS -o "$WORK/download/SHA256SUMS" "$URL/SHA256SUMS"
  say "release v$VERSION served from $RELEASE_DIR at $URL: consumed SHA256SUMS from $URL/SHA256SUMS ($(wc -l <"$WORK/download/SHA256SUMS") files)"
  if [[ -n $PREVIOUS_DIR ]]; then
    serve "$PREVIOUS_DIR" "$PREVIOUS_HTTP_PORT"
    curl -fsS -o "$WORK/previous/SHA256SUMS" "$PREVIOUS_URL/SHA256SUMS"
    say "previous release v$PREVIOUS_VERSION served from $PREVIOUS_DIR at $PREVIOUS_URL: consumed SHA256SUMS from $PREVIOUS_URL/SHA256SUMS ($(curl -fsS "$PREVIOUS_URL/release.txt"))"
  fi

  say "node infrastructure from this checkout (no release artefact): the pause image, OLM's images (assembled meanwhile)"
  "$REPO_ROOT/hack/images.sh" "$WORK/infra" pause
  OLM_IMAGE=$REGISTRY/nsclaim/olm:$OLM_VERSION OLM_TOOLS_IMAGE=$REGISTRY/nsclaim/olm-tools:dev \
    "$REPO_ROOT/hack/images.sh" "$WORK/infra-olm" olm-tools olm >"$WORK/olm-images.log" 2>&1 &
  OLM_IMAGES_PID=$!
  "$REPO_ROOT/hack/local-cluster.sh" up
  PAUSE_IMAGE_TAR=$WORK/infra/pause.tar "$REPO_ROOT/hack/local-node.sh" up

  # The images, pushed as the release workflow publishes them (images.txt: file and reference).
  push_images "$URL" "$WORK/download"
  local ref digest
  ref=$(awk '$1=="manager-image.oci.tar" {print $2}' "$WORK/download/images.txt")
  digest=$(curl -fsSI -H 'Accept: application/vnd.oci.image.index.v1+json' "http://$REGISTRY/v2/$(sed 's|^ghcr.io/||; s|:\([^:]*\)$|/manifests/\1|' <<<"$ref")" |
    tr -d '\r' | awk 'tolower($1)=="docker-content-digest:" {print $2}')
  local platforms
  platforms=$(curl -fsS -H 'Accept: application/vnd.oci.image.index.v1+json' "http://$REGISTRY/v2/$(sed 's|^ghcr.io/||; s|:[^:]*$||' <<<"$ref")/manifests/$digest" |
    jq -r '[.manifests[].platform | "\(.os)/\(.architecture)"] | join(" ")')
  say "manager image $ref is the index $digest of $platforms"
  # MANAGER_ARCHS: the architectures the release directory was built for (make test: the machine's own).
  local arch
  for arch in ${MANAGER_ARCHS:-amd64 arm64}; do
    [[ $platforms == *linux/$arch* ]] || { say "the manager image must cover linux/$arch"; return 1; }
  done

  # 0. The upgrade from the previous release, in the README's order; then the README's uninstall.
  if [[ -n $PREVIOUS_DIR ]]; then
    upgrade_from_previous
  fi

  # 1. The README's quick start, word for word, with R the served release.
  local quick
  quick=$(readme_block quickstart | grep -v '^R=')
  [[ -n $quick ]] || { say "README.md has no quickstart block"; return 1; }
  say "README quick start (R=$URL): $(tr '\n' ';' <<<"$quick")"
  user_shell "$quick"
  say "consumed install.yaml from $URL/install.yaml and fence.yaml from $URL/fence.yaml (kubectl apply of the URLs)"
  # The README's "Set the address pipelines reach the API server at" for runners outside the cluster.
  kc -n "$NS" set env "deployment/$DEPLOY" NSCLAIM_KUBECONFIG_SERVER="$SERVER_URL" >/dev/null
  kc -n "$NS" rollout status "deployment/$DEPLOY" --timeout=180s >/dev/null

  sbom_check

  # 2. The manager Pod runs the index.
  local image image_id
  image=$(kc -n "$NS" get pods -l control-plane=controller-manager -o jsonpath='{.items[0].spec.containers[0].image}')
  image_id=$(kc -n "$NS" get pods -l control-plane=controller-manager -o jsonpath='{.items[0].status.containerStatuses[0].imageID}')
  say "manager Pod runs $image, imageID $image_id"
  [[ $image == "$ref" && $image_id == *"@$digest" ]] || { say "the manager Pod must run $ref pulled as $digest"; return 1; }

  # 3. The plugin from the served release.
  local asset=kubectl-nsclaim_linux_amd64.tar.gz
  fetch kubectl-nsclaim_checksums.txt
  fetch "$asset"
  (cd "$WORK/download" && grep " $asset\$" kubectl-nsclaim_checksums.txt | sha256sum -c --quiet -)
  tar -xzf "$WORK/download/$asset" -C "$WORK/plugin"
  say "kubectl-nsclaim from $URL/$asset: $("$WORK/plugin/kubectl-nsclaim" version 2>&1 | head -1)"
  kc create namespace rehearsal-ci >/dev/null
  user_shell "kubectl nsclaim pipeline-identity rehearsal-ci --duration 1h -w '$WORK/pipeline.kubeconfig'" 2>/dev/null
  local claimed
  claimed=$(env -i HOME="$WORK/home" PATH="$WORK/plugin:$KUBE_BIN_DIR:/usr/bin:/bin" KUBECONFIG="$WORK/pipeline.kubeconfig" \
    KUBECACHEDIR="$STATE/kubecache" bash -euo pipefail -c "
      kubectl nsclaim claim --ttl 1h --write-kubeconfig '$WORK/ns.kubeconfig' -- rehearsal
      KUBECONFIG='$WORK/ns.kubeconfig' kubectl create configmap rehearsal --from-literal=from=release >/dev/null
      KUBECONFIG='$WORK/ns.kubeconfig' kubectl get configmap rehearsal -o name >&2
      kubectl nsclaim release --wait -- rehearsal >&2")
  say "plugin: the pipeline claimed $claimed, wrote a ConfigMap there with the handed kubeconfig, released it"
  if kc get namespace "$claimed" >/dev/null 2>&1; then say "namespace $claimed is still there after release --wait"; return 1; fi

  krew_install "$asset"

  # 4. The GitHub Action and the GitLab component, downloading from the served release.
  action_run
  gitlab_run

  # 5. The README's uninstall.
  local uninstall
  uninstall=$(readme_block uninstall-manifests)
  [[ -n $uninstall ]] || { say "README.md has no uninstall-manifests block"; return 1; }
  say "README uninstall (R=$URL): $(tr '\n' ';' <<<"$uninstall")"
  user_shell "$uninstall"
  leftovers
  if [[ ${REHEARSAL_DEPLOY_FROM_CLONE:-1} == 1 ]]; then deploy_from_clone "$ref"; fi
  # 7. OLM, from the catalog image.
  olm_run
  say "PASS: release v$VERSION rehearsed from $URL and $REGISTRY"
}

# claim_ready NAMESPACE NAME TTL: an admin's claim (the default class) in NAMESPACE, waited for until Ready.
claim_ready() {
  printf 'apiVersion: tenancy.nsclaim.dev/v1alpha1\nkind: NamespaceClaim\nmetadata: {name: %s, namespace: %s}\nspec: {ttl: %s}\n' "$2" "$1" "$3" |
    kc apply --server-side -f - >/dev/null
  kc -n "$1" wait --for=condition=Ready "namespaceclaim/$2" --timeout=120s >/dev/null
}

# upgrade_from_previous: the previous release (PREVIOUS_DIR, served at PREVIOUS_URL) installed as its
# users did, its install.yaml (up to 0.3.0 it carries the fence), a class and a claim Ready; then this
# release applied in the README's upgrade order, install.yaml then fence.yaml, never leaving new RBAC
# unfenced: with install.yaml applied and the previous fence still in place the operator holds none of
# sleep's new rights (scale subresources, CronJobs), and once fence.yaml grants them its fence denies
# them outside managed namespaces. The claim made before the upgrade keeps its namespace, is Ready
# and the kubeconfig handed before the upgrade still works there; a new claim becomes Ready. Then the
# README's uninstall leaves nothing of either release.
upgrade_from_previous() {
  local sa=system:serviceaccount:$NS:$DEPLOY before after kcfg=$WORK/before-upgrade.kubeconfig verb out
  push_images "$PREVIOUS_URL" "$WORK/previous"
  user_shell "kubectl apply --server-side -f \$R/install.yaml >/dev/null
    kubectl -n $NS rollout status deployment/$DEPLOY --timeout=3m >/dev/null" "$PREVIOUS_URL"
  say "v$PREVIOUS_VERSION installed: kubectl apply --server-side -f $PREVIOUS_URL/install.yaml (consumed install.yaml from $PREVIOUS_URL/install.yaml); its manager runs $(kc -n "$NS" get deployment "$DEPLOY" -o jsonpath='{.spec.template.spec.containers[0].image}')"
  kc create namespace rehearsal-upgrade >/dev/null
  kc apply --server-side -f - >/dev/null <<EOF
apiVersion: tenancy.nsclaim.dev/v1alpha1
kind: NamespaceClass
metadata: {name: ci}
spec:
  default: true
  clusterRole: edit
  naming: {prefix: ci-}
  podSecurity: restricted
  lifetime: {defaultTTL: 24h, maxTTL: 168h}
  credentials: {tokenTTL: 1h, renewBefore: 20m}
EOF
  claim_ready rehearsal-upgrade before-upgrade 2h
  before=$(kc -n rehearsal-upgrade get namespaceclaim before-upgrade -o jsonpath='{.status.namespace}')
  kc -n rehearsal-upgrade get secret "$(kc -n rehearsal-upgrade get namespaceclaim before-upgrade -o jsonpath='{.status.credentialsSecretName}')" \
    -o jsonpath='{.data.kubeconfig}' | base64 -d >"$kcfg"
  KUBECONFIG=$kcfg "$KUBE_BIN_DIR/kubectl" --server "$SERVER_URL" create configmap before-upgrade --from-literal=v="$PREVIOUS_VERSION" >/dev/null
  say "v$PREVIOUS_VERSION: claim rehearsal-upgrade/before-upgrade Ready in namespace $before; its kubeconfig wrote a ConfigMap there"

  # The README's upgrade: install.yaml, then fence.yaml. In between, the previous fence is the fence.
  user_shell "kubectl apply --server-side -f \$R/install.yaml >/dev/null"
  say "upgrade step 1: kubectl apply --server-side -f $URL/install.yaml (consumed install.yaml from $URL/install.yaml)"
  for verb in "patch deployments.apps --subresource=scale" "patch statefulsets.apps --subresource=scale" "patch cronjobs.batch"; do
    # shellcheck disable=SC2086 # verb is the words of a kubectl auth can-i
    if [[ $(kc auth can-i $verb --all-namespaces --as="$sa" 2>/dev/null) != no ]]; then
      say "with v$VERSION's install.yaml and v$PREVIOUS_VERSION's fence, the operator may $verb: new RBAC the previous fence does not confine"
      return 1
    fi
  done
  say "with v$VERSION's install.yaml and v$PREVIOUS_VERSION's fence the operator holds none of sleep's new rights (can-i: no)"
  kc -n rehearsal-upgrade create deployment fence-probe --image=registry.k8s.io/pause:3.10 --replicas=0 >/dev/null
  user_shell "kubectl apply --server-side -f \$R/fence.yaml >/dev/null
    kubectl -n $NS rollout status deployment/$DEPLOY --timeout=3m >/dev/null"
  say "upgrade step 2: kubectl apply --server-side -f $URL/fence.yaml (consumed fence.yaml from $URL/fence.yaml)"
  [[ $(kc auth can-i patch deployments.apps --subresource=scale -n rehearsal-upgrade --as="$sa") == yes ]] ||
    { say "fence.yaml did not grant the scale subresource"; return 1; }
  if out=$(kc -n rehearsal-upgrade patch deployment fence-probe --subresource=scale --type=merge -p '{"spec":{"replicas":1}}' \
    --dry-run=server --as="$sa" 2>&1) ||
    [[ $out != *"may only write deployments/scale in namespaces it created"* ]]; then
    say "the operator's new right to scale is not fenced outside managed namespaces: $out"
    return 1
  fi
  say "fence.yaml grants the scale subresource and fences it: the operator scaling rehearsal-upgrade/fence-probe is denied ($(sed 's/.*denied request: //' <<<"$out" | cut -c1-100))"

  kc -n rehearsal-upgrade wait --for=condition=Ready namespaceclaim/before-upgrade --timeout=120s >/dev/null
  after=$(kc -n rehearsal-upgrade get namespaceclaim before-upgrade -o jsonpath='{.status.namespace}')
  [[ $after == "$before" ]] || { say "the claim's namespace changed in the upgrade: $before -> $after"; return 1; }
  KUBECONFIG=$kcfg "$KUBE_BIN_DIR/kubectl" --server "$SERVER_URL" get configmap before-upgrade -o name >/dev/null ||
    { say "the kubeconfig handed by v$PREVIOUS_VERSION no longer works in $before"; return 1; }
  claim_ready rehearsal-upgrade after-upgrade 1h
  say "upgraded to v$VERSION (manager $(kc -n "$NS" get pods -l control-plane=controller-manager -o jsonpath='{.items[0].status.containerStatuses[0].image}')): claim before-upgrade still Ready in $before, its old kubeconfig works there; new claim after-upgrade Ready in $(kc -n rehearsal-upgrade get namespaceclaim after-upgrade -o jsonpath='{.status.namespace}')"

  say "README uninstall after the upgrade (R=$URL)"
  user_shell "$(readme_block uninstall-manifests)"
  kc delete namespace rehearsal-upgrade --wait=false >/dev/null
  leftovers
}

# sbom_check: the release's SBOM of the linux/amd64 manager (manager-sbom-linux-amd64.cdx.json) lists
# exactly the modules linked into the manager binary of the published image: the binary is taken from
# the amd64 image of manager-image.oci.tar's index and `go version -m` reads its module list.
sbom_check() {
  local sbom=manager-sbom-linux-amd64.cdx.json archive=$WORK/download/manager-image.oci.tar d=$WORK/sbom idx m l
  mkdir -p "$d/rootfs"
  fetch "$sbom"
  blob() { tar -xOf "$archive" "blobs/sha256/${1#sha256:}"; }
  idx=$(tar -xOf "$archive" index.json | jq -r '.manifests[0].digest')
  m=$(blob "$idx" | jq -r '.manifests[] | select(.platform.os == "linux" and .platform.architecture == "amd64") | .digest')
  for l in $(blob "$m" | jq -r '.layers[].digest'); do blob "$l" | tar -xzf - -C "$d/rootfs"; done
  go version -m "$d/rootfs/manager" | awk '$1 == "dep" {print $2 "@" $3}' | sort >"$d/binary.txt"
  jq -r '.components[] | select(.type == "library") | "\(.name)@\(.version)"' "$WORK/download/$sbom" | sort >"$d/sbom.txt"
  if [[ ! -s $d/binary.txt ]] || ! diff -u "$d/binary.txt" "$d/sbom.txt" >&2; then
    say "$sbom does not list the modules of the manager in manager-image.oci.tar (diff above: binary, SBOM)"
    return 1
  fi
  [[ $(jq -r .metadata.component.name "$WORK/download/$sbom") == "$(go version -m "$d/rootfs/manager" | awk '$1 == "mod" {print $2}')" ]] ||
    { say "$sbom is not the SBOM of the manager's main module"; return 1; }
  say "$sbom ($(jq -r '.metadata.component | "\(.name) \(.version)"' "$WORK/download/$sbom"), CycloneDX $(jq -r .specVersion "$WORK/download/$sbom")) lists the $(wc -l <"$d/binary.txt") modules linked into the manager of manager-image.oci.tar ($m), no more, no fewer"
}

# krew_install ASSET: krew (built from its Go module, KREW) installs the plugin from the served krew
# manifest and the downloaded ASSET (krew checks the archive against the manifest's sha256), into a
# KREW_ROOT of its own; then kubectl runs the plugin from krew's bin.
krew_install() {
  local asset=$1 root=$WORK/krew out
  fetch nsclaim.yaml
  mkdir -p "$root/cli"
  cp "$KREW" "$root/cli/kubectl-krew"
  local krew_env=(env -i HOME="$WORK/home" PATH="$root/cli:$KUBE_BIN_DIR:/usr/bin:/bin" KREW_ROOT="$root" KREW_NO_UPGRADE_CHECK=1)
  "${krew_env[@]}" kubectl krew install --manifest="$WORK/download/nsclaim.yaml" --archive="$WORK/download/$asset" \
    </dev/null >"$WORK/krew.log" 2>&1 || { cat "$WORK/krew.log" >&2; return 1; }
  say "krew ($(basename "$(realpath "$KREW")"), built from sigs.k8s.io/krew) installed nsclaim from $URL/nsclaim.yaml with --archive $asset into KREW_ROOT=$root: $(grep -m1 '^Installed plugin' "$WORK/krew.log")"
  out=$(env -i HOME="$WORK/home" PATH="$root/bin:$KUBE_BIN_DIR:/usr/bin:/bin" KUBECONFIG="$STATE/kubeconfig" KUBECACHEDIR="$STATE/kubecache" \
    kubectl nsclaim version 2>&1)
  [[ $(realpath "$root/bin/kubectl-nsclaim") == "$root"/store/nsclaim/v$VERSION/kubectl-nsclaim && $out == *"v$VERSION"* ]] ||
    { say "kubectl nsclaim from krew's bin ($root/bin) did not run v$VERSION: $out"; return 1; }
  say "kubectl nsclaim version, from krew's bin: $(tr '\n' ' ' <<<"$out")"
}

# olm_run: the release's catalog image (from images.txt, in the node's registry) installs the operator
# through a CatalogSource and a Subscription on a cluster with no monitoring.coreos.com CRD (a claim
# becomes Ready); then the Prometheus Operator's CRDs are added (hack/monitoring-crds.sh: generated from
# its API module; with REHEARSAL_OLM_REINSTALL=1 the operator is uninstalled first and installed again
# once they are there); monitoring.yaml is applied as the README
# says and the ServiceMonitor, as the API server holds it, is translated into the scrape job the
# Prometheus Operator makes of it (hack/servicemonitor-scrape.py) and a real Prometheus scrapes the
# manager with it, as the Prometheus ServiceAccount bound to the release's metrics reader role.
olm_run() {
  local catalog_ref csv=nsclaim-operator.v$VERSION crd
  catalog_ref=$(awk '$1=="catalog-image.oci.tar" {print $2}' "$WORK/download/images.txt")
  wait "$OLM_IMAGES_PID" || { cat "$WORK/olm-images.log" >&2; return 1; }
  "$REPO_ROOT/hack/local-node.sh" push "$WORK/infra-olm/olm-tools.tar" nsclaim/olm-tools:dev >/dev/null
  "$REPO_ROOT/hack/local-node.sh" push "$WORK/infra-olm/olm.tar" "nsclaim/olm:$OLM_VERSION" >/dev/null
  say "node infrastructure from this checkout (no release artefact): OLM $OLM_VERSION's operators and its helper image"
  olm_up "$REGISTRY/nsclaim/olm:$OLM_VERSION" "$REGISTRY/nsclaim/olm-tools:dev"
  if kc get crds -o name | grep -q 'monitoring.coreos.com'; then say "the cluster must have no monitoring.coreos.com CRD"; return 1; fi
  serve_catalog "$catalog_ref"
  say "consumed $catalog_ref (catalog-image.oci.tar) from the registry: the CatalogSource's catalog Pod runs it"
  user_shell "kubectl apply --server-side -f \$R/fence.yaml >/dev/null"
  say "OLM: the fence from $URL/fence.yaml, as the README's OLM section says"
  olm_subscribe "$csv"
  say "OLM installed $csv from the catalog on a cluster with no monitoring.coreos.com CRD: manager $(kc -n "$NS" get pods -l control-plane=controller-manager -o jsonpath='{.items[0].spec.containers[0].image} ({.items[0].status.containerStatuses[0].imageID})')"
  kc create namespace rehearsal-olm >/dev/null
  claim_ready rehearsal-olm olm 1h
  say "OLM: claim rehearsal-olm/olm Ready in $(kc -n rehearsal-olm get namespaceclaim olm -o jsonpath='{.status.namespace}') (class $(kc -n rehearsal-olm get namespaceclaim olm -o jsonpath='{.status.className}'))"
  # REHEARSAL_OLM_REINSTALL=1: uninstall, and install again once the CRDs are there (56 s more on 2
  # cores; make test adds the CRDs to the cluster the operator was installed on instead).
  if [[ ${REHEARSAL_OLM_REINSTALL:-0} == 1 ]]; then
    kc -n "$NS" delete subscription nsclaim-operator --wait >/dev/null
    kc -n "$NS" delete csv "$csv" --wait >/dev/null
    kc -n "$NS" wait --for=delete "deployment/$DEPLOY" --timeout=120s >/dev/null 2>&1 || true
  fi
  crd=$(CONTROLLER_GEN=$CONTROLLER_GEN "$REPO_ROOT/hack/monitoring-crds.sh")
  kc apply --server-side -f "$crd" >/dev/null
  wait_established "$crd"
  say "the Prometheus Operator's CRDs ($(basename "$crd"), generated from its API types) are served: $(kc get crds -o name | grep -c monitoring.coreos.com) monitoring.coreos.com CRDs"
  if [[ ${REHEARSAL_OLM_REINSTALL:-0} == 1 ]]; then
    olm_subscribe "$csv"
    say "OLM installed $csv again, with the Prometheus Operator's CRDs present"
  fi
  user_shell "kubectl apply --server-side -f \$R/monitoring.yaml >/dev/null"
  say "consumed monitoring.yaml from $URL/monitoring.yaml (kubectl apply): $(kc -n "$NS" get servicemonitors,prometheusrules -o name | tr '\n' ' ')"
  scrape_servicemonitor
}

# olm_subscribe CSV: an OperatorGroup (AllNamespaces) and a Subscription to the package in the
# CatalogSource at the catalog Pod; returns when CSV has succeeded and the manager is rolled out.
olm_subscribe() {
  kc apply --server-side -f - >/dev/null <<EOF
apiVersion: v1
kind: Namespace
metadata: {name: $NS}
---
apiVersion: operators.coreos.com/v1alpha1
kind: CatalogSource
metadata: {name: nsclaim, namespace: olm}
spec:
  sourceType: grpc
  address: $(kc -n olm get service nsclaim-catalog -o jsonpath='{.spec.clusterIP}'):50051
  displayName: nsclaim (rehearsed release)
---
apiVersion: operators.coreos.com/v1
kind: OperatorGroup
metadata: {name: nsclaim, namespace: $NS}
spec: {}
---
apiVersion: operators.coreos.com/v1alpha1
kind: Subscription
metadata: {name: nsclaim-operator, namespace: $NS}
spec:
  name: nsclaim-operator
  source: nsclaim
  sourceNamespace: olm
  startingCSV: $1
  installPlanApproval: Automatic
EOF
  local phase=""
  for _ in $(seq 1 240); do
    phase=$(kc -n "$NS" get csv "$1" -o jsonpath='{.status.phase}' 2>/dev/null || true)
    [[ $phase == Succeeded ]] && break
    sleep 1
  done
  [[ $phase == Succeeded ]] || { say "OLM: $1 is not Succeeded (phase '$phase')"; kc -n "$NS" get subscription,installplan,csv -o wide >&2; return 1; }
  kc -n "$NS" rollout status "deployment/$DEPLOY" --timeout=180s >/dev/null
}

# scrape_servicemonitor: Prometheus (PROMETHEUS, 2.42.0) scrapes the targets of the release's
# ServiceMonitor, translated by hack/servicemonitor-scrape.py, with the token of a Prometheus
# ServiceAccount bound to nsclaim-operator-metrics-reader as docs/monitoring.md says; the manager's
# target must be up and its nsclaim_ series scraped.
scrape_servicemonitor() {
  local d=$WORK/prometheus port=$((HTTP_PORT + 10)) up="" series=""
  mkdir -p "$d"
  kc create namespace monitoring >/dev/null
  kc -n monitoring create serviceaccount prometheus >/dev/null
  kc create clusterrolebinding nsclaim-metrics-reader-prometheus --clusterrole=nsclaim-operator-metrics-reader \
    --serviceaccount=monitoring:prometheus >/dev/null
  kc -n monitoring create token prometheus --duration=1h >"$d/token"
  kc get servicemonitors -A -o json >"$d/servicemonitors.json"
  kc get services -A -o json >"$d/services.json"
  kc get endpointslices.discovery.k8s.io -A -o json >"$d/endpointslices.json"
  python3 "$REPO_ROOT/hack/servicemonitor-scrape.py" "$d/servicemonitors.json" "$d/services.json" "$d/endpointslices.json" "$d/token" >"$d/prometheus.yml"
  say "ServiceMonitor translated into a scrape job: $(jq -c '.scrape_configs[] | {job_name, scheme, metrics_path, tls_config, authorization: (.authorization.type), targets: [.static_configs[].targets[]]}' "$d/prometheus.yml")"
  "$PROMETHEUS" --config.file="$d/prometheus.yml" --storage.tsdb.path="$d/data" --web.listen-address="127.0.0.1:$port" >"$d/prometheus.log" 2>&1 &
  HTTP_PIDS+=("$!")
  for _ in $(seq 1 60); do
    up=$(curl -fsS "http://127.0.0.1:$port/api/v1/query" --data-urlencode 'query=up{namespace="'"$NS"'"}' 2>/dev/null | jq -r '.data.result[0].value[1] // empty' || true)
    series=$(curl -fsS "http://127.0.0.1:$port/api/v1/query" --data-urlencode 'query=count({__name__=~"nsclaim_.+", namespace="'"$NS"'"})' 2>/dev/null | jq -r '.data.result[0].value[1] // empty' || true)
    [[ $up == 1 && -n $series ]] && break
    sleep 1
  done
  if [[ $up != 1 || -z $series ]]; then
    say "Prometheus did not scrape the manager through the ServiceMonitor (up '$up', nsclaim_ series '$series')"
    curl -fsS "http://127.0.0.1:$port/api/v1/targets" | jq -c '.data.activeTargets[] | {scrapeUrl, health, lastError}' >&2 || true
    return 1
  fi
  say "Prometheus $("$PROMETHEUS" --version 2>&1 | awk 'NR==1 {print $3}') scraped the manager through the ServiceMonitor: up 1, $series nsclaim_ series ($(curl -fsS "http://127.0.0.1:$port/api/v1/targets" | jq -r '.data.activeTargets[0].scrapeUrl'))"
}

# action_run: action/main.js then action/post.js as a GitHub runner runs them (INPUT_*, runner files;
# post gets main's state as STATE_*), the plugin not on the PATH, download-base the served release.
action_run() {
  local d=$WORK/action
  mkdir -p "$d/temp"
  touch "$d/output" "$d/env" "$d/state" "$d/summary" "$d/path"
  local runner=(env -i HOME="$WORK/home" PATH="$KUBE_BIN_DIR:/usr/bin:/bin" KUBECACHEDIR="$STATE/kubecache"
    GITHUB_ACTIONS=true CI=true RUNNER_TEMP="$d/temp" GITHUB_OUTPUT="$d/output" GITHUB_ENV="$d/env" GITHUB_STATE="$d/state"
    GITHUB_STEP_SUMMARY="$d/summary" GITHUB_PATH="$d/path" GITHUB_RUN_ID=41 GITHUB_RUN_ATTEMPT=1 GITHUB_JOB=rehearsal
    "INPUT_KUBECONFIG=$(cat "$WORK/pipeline.kubeconfig")" "INPUT_DOWNLOAD-BASE=$URL" INPUT_TTL=1h INPUT_TIMEOUT=3m
    INPUT_EXPORT-KUBECONFIG=true INPUT_RELEASE=true)
  "${runner[@]}" node "$REPO_ROOT/action/main.js" >"$d/main.log" 2>&1 || { cat "$d/main.log" >&2; return 1; }
  local ns
  ns=$(sed -n 's/^namespace=//p' "$d/output")
  [[ -n $ns ]] && kc get namespace "$ns" >/dev/null || { say "the Action's main step claimed no namespace"; cat "$d/main.log" "$d/output" >&2; return 1; }
  [[ -f $d/temp/nsclaim/kubectl-nsclaim_linux_amd64.tar.gz ]] || { say "the Action did not download the plugin"; return 1; }
  say "GitHub Action main: downloaded kubectl-nsclaim_linux_amd64.tar.gz and kubectl-nsclaim_checksums.txt from $URL (download-base), checksum verified, claimed $ns"
  local states=()
  while IFS= read -r kv; do states+=("STATE_$kv"); done < <(python3 - "$d/state" <<'EOF'
import sys
lines = open(sys.argv[1]).read().split("\n")
i = 0
while i < len(lines):
    line = lines[i]
    if "<<" in line and "=" not in line.split("<<")[0]:
        k, delim = line.split("<<", 1)
        v = []
        i += 1
        while i < len(lines) and lines[i] != delim:
            v.append(lines[i]); i += 1
        print(k + "=" + "\n".join(v))
    elif "=" in line:
        print(line)
    i += 1
EOF
  )
  "${runner[@]}" "${states[@]}" node "$REPO_ROOT/action/post.js" >"$d/post.log" 2>&1 || { cat "$d/post.log" >&2; return 1; }
  for _ in $(seq 1 120); do kc get namespace "$ns" >/dev/null 2>&1 || break; sleep 0.5; done
  if kc get namespace "$ns" >/dev/null 2>&1; then say "the Action's post step did not release $ns"; return 1; fi
  say "GitHub Action post: released the claim, namespace $ns deleted"
}

# gitlab_run: templates/nsclaim.yml's nsclaim-claim and nsclaim-release jobs (inputs interpolated:
# defaults, download-base the served release), their before_script and script in one bash each, as a
# runner runs them, the plugin not on the PATH.
gitlab_run() {
  local d=$WORK/gitlab
  mkdir -p "$d/project"
  python3 - "$REPO_ROOT/templates/nsclaim.yml" "$VERSION" "$URL" "$d" <<'EOF'
import re, sys, yaml
path, version, url, out = sys.argv[1:]
header, body = open(path).read().split("\n---\n", 1)
inputs = yaml.safe_load(header)["spec"]["inputs"]
values = {k: str(v.get("default", "")) for k, v in inputs.items()}
values.update({"download-base": url, "ttl": "1h"})
body = body.replace("$[[ component.version ]]", version)
body = re.sub(r"\$\[\[ inputs\.([a-z-]+) \]\]", lambda m: values[m.group(1)], body)
jobs = yaml.safe_load(body)
for name in ("nsclaim-claim", "nsclaim-release"):
    job, base = jobs[name], jobs[jobs[name]["extends"]]
    with open(f"{out}/{name}.sh", "w") as f:
        for k, v in {**base.get("variables", {}), **job.get("variables", {})}.items():
            # A runner expands $VARIABLES in variables' values: double quotes do.
            v = ("" if v is None else str(v)).replace("\\", "\\\\").replace('"', '\\"').replace("`", "\\`")
            f.write(f'export {k}="{v}"\n')
        f.write("\n".join(base.get("before_script", []) + job.get("before_script", []) + job["script"]) + "\n")
EOF
  local job id=1001
  for job in nsclaim-claim nsclaim-release; do
    env -i HOME="$WORK/home" PATH="$KUBE_BIN_DIR:/usr/bin:/bin" KUBECACHEDIR="$STATE/kubecache" GITLAB_CI=true CI=true \
      CI_PROJECT_ID=41 CI_ENVIRONMENT_SLUG=rehearsal CI_COMMIT_REF_SLUG=rehearsal CI_PROJECT_DIR="$d/project" CI_JOB_ID=$id \
      NSCLAIM_KUBECONFIG="$WORK/pipeline.kubeconfig" bash -eo pipefail -c "cd '$d/project' && . '$d/$job.sh'" >"$d/$job.log" 2>&1 ||
      { cat "$d/$job.log" >&2; return 1; }
    grep -q '^kubectl-nsclaim_linux_amd64.tar.gz: OK$' "$d/$job.log" || { say "GitLab $job did not download and check the plugin"; cat "$d/$job.log" >&2; return 1; }
    say "GitLab component $job: downloaded kubectl-nsclaim_linux_amd64.tar.gz and its checksums from $URL (download-base), sha256sum -c passed"
    id=$((id + 1))
  done
  local ns
  ns=$(sed -n 's/^NSCLAIM_NAMESPACE=//p' "$d/project/nsclaim.env")
  [[ -n $ns ]] || { say "the GitLab claim job wrote no namespace"; return 1; }
  if kc get namespace "$ns" >/dev/null 2>&1; then say "the GitLab release job left namespace $ns"; return 1; fi
  say "GitLab component: claimed $ns, the release job deleted it"
}

# deploy_from_clone REF: a fresh clone of HEAD (empty ./bin: make builds the kubectl, kustomize and
# controller-gen it runs) deploys with `make deploy IMG=<the image in the node's registry>`; the manager
# runs as a Pod; `make undeploy` removes it.
deploy_from_clone() {
  local img=$REGISTRY/${1#ghcr.io/} clone=$WORK/clone
  git clone -q --no-local "$REPO_ROOT" "$clone"
  say "make deploy IMG=$img in a fresh clone of $(git -C "$clone" rev-parse --short HEAD) (empty ./bin)"
  env KUBECONFIG="$STATE/kubeconfig" KUBECACHEDIR="$STATE/kubecache" make -C "$clone" deploy IMG="$img" >"$WORK/deploy.log" 2>&1 ||
    { tail -20 "$WORK/deploy.log" >&2; return 1; }
  kc -n "$NS" rollout status "deployment/$DEPLOY" --timeout=180s >/dev/null
  say "make deploy: the manager Pod runs $(kc -n "$NS" get pods -l control-plane=controller-manager -o jsonpath='{.items[0].status.containerStatuses[0].image} ({.items[0].status.containerStatuses[0].imageID})'), with the kubectl make built ($(ls "$clone"/bin/k8s/*/kubectl))"
  env KUBECONFIG="$STATE/kubeconfig" KUBECACHEDIR="$STATE/kubecache" make -C "$clone" undeploy >>"$WORK/deploy.log" 2>&1 ||
    { tail -20 "$WORK/deploy.log" >&2; return 1; }
  leftovers
}

# leftovers fails if any object of nsclaim is left after the uninstall.
leftovers() {
  local left=""
  left+=$(kc get crd -o name | grep 'nsclaim' || true)
  left+=$(kc get clusterroles,clusterrolebindings -o name | grep 'nsclaim' || true)
  left+=$(kc get validatingadmissionpolicies,validatingadmissionpolicybindings,mutatingadmissionpolicies,mutatingadmissionpolicybindings -o name 2>/dev/null | grep 'nsclaim' || true)
  left+=$(kc get namespaces -o name | grep -E "/($NS|ci-.*)$" || true)
  left+=$(kc get namespaces -l tenancy.nsclaim.dev/managed-by -o name 2>/dev/null || true)
  if [[ -n $left ]]; then say "left after the README's uninstall: $left"; return 1; fi
  say "uninstall left no CRD, ClusterRole, ClusterRoleBinding, admission policy or namespace of nsclaim"
}

main "$@"
