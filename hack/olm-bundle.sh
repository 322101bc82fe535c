#!/usr/bin/env bash
# Installs or upgrades nsclaim with `operator-sdk run bundle` / `run bundle-upgrade`, as test/olm's
# NSCLAIM_OLM_INSTALL_CMD and NSCLAIM_OLM_UPGRADE_CMD, the same way on the local node (make
# test-node-olm) and on kind (make test-e2e-olm). First it applies the admission fence of the version
# being installed, as an admin does (docs/olm.md), and waits until the API server enforces it.
#
#   hack/olm-bundle.sh install BUNDLE_IMAGE FENCE_SRC   create the namespace, run bundle (AllNamespaces)
#   hack/olm-bundle.sh upgrade BUNDLE_IMAGE FENCE_SRC   run bundle-upgrade
#
# FENCE_SRC is a checkout of that version (its config/fence is applied): the tree for this version,
# `hack/releases.sh build X.Y.Z`'s src/ for a release.
# Environment: KUBECONFIG (required), NSCLAIM_OLM_NAMESPACE (nsclaim-operator-system), OPERATOR_SDK,
# KUSTOMIZE, KUBECTL (./bin), OPERATOR_SDK_FLAGS (added to both commands, e.g. --use-http),
# OPERATOR_SDK_INSTALL_FLAGS (added to run bundle, e.g. --index-image IMG --decompression-image IMG).
# operator-sdk writes a cache directory into its working directory: it runs in a temporary one.
set -euo pipefail
REPO_ROOT=$(cd "$(dirname "$0")/.." && pwd)
cmd=${1:-}
image=${2:-}
src=${3:-}
[[ ($cmd == install || $cmd == upgrade) && -n $image && -d $src/config/fence ]] ||
  { sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
: "${KUBECONFIG:?KUBECONFIG must be set}"
NS=${NSCLAIM_OLM_NAMESPACE:-nsclaim-operator-system}
OPERATOR_SDK=${OPERATOR_SDK:-$REPO_ROOT/bin/operator-sdk}
KUSTOMIZE=${KUSTOMIZE:-$REPO_ROOT/bin/kustomize}
KUBECTL=${KUBECTL:-$REPO_ROOT/bin/k8s/1.37.1-linux-amd64/kubectl}
read -r -a sdk_flags <<<"${OPERATOR_SDK_FLAGS:-}"
read -r -a install_flags <<<"${OPERATOR_SDK_INSTALL_FLAGS:-}"
log() { echo "olm-bundle: $*" >&2; }

"$KUSTOMIZE" build "$src/config/fence" | "$KUBECTL" apply --server-side --force-conflicts -f - >/dev/null
probe='apiVersion: v1
kind: ServiceAccount
metadata:
  name: label-guard-probe
  namespace: default
  labels: {tenancy.nsclaim.dev/managed-by: nsclaim}'
enforced=false
for _ in $(seq 1 60); do
  if ! out=$("$KUBECTL" create --dry-run=server -f - <<<"$probe" 2>&1) && [[ $out == *label-guard* ]]; then
    enforced=true
    break
  fi
  sleep 0.5
done
$enforced || { log "the admission fence of $src is not enforced: $out"; exit 1; }
log "the admission fence of $src is applied and enforced"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
case $cmd in
install)
  "$KUBECTL" create namespace "$NS" --dry-run=client -o yaml | "$KUBECTL" apply --server-side -f - >/dev/null
  "$OPERATOR_SDK" run bundle "$image" --namespace "$NS" --install-mode AllNamespaces --timeout 5m \
    "${sdk_flags[@]}" "${install_flags[@]}"
  ;;
upgrade)
  "$OPERATOR_SDK" run bundle-upgrade "$image" --namespace "$NS" --timeout 5m "${sdk_flags[@]}"
  ;;
esac
