#!/usr/bin/env bash
# Copyright 2026 The nsclaim Authors.
#
# Licensed under the Apache License, Version 2.0 (the "License");
# you may not use this file except in compliance with the License.
# You may obtain a copy of the License at
#
#     http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS,
# WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
# See the License for the specific language governing permissions and
# limitations under the License.

# make catalog: writes a file-based OLM catalog (FBC) of the package nsclaim-operator, offline.
#
# Usage: hack/catalog.sh OUT_DIR [VERSION...]
#
# The catalog holds one bundle per VERSION (default: $PREVIOUS_VERSION $VERSION), in the channels
# alpha and stable (default channel stable). Each version `replaces` the one before it and skips every
# older one (`skipRange: >=FIRST <THIS`), so OLM can upgrade from any listed version to the newest.
# Bundles are rendered with `opm render <bundle directory>`, so their manifests are inline in the
# catalog (`image: ""`): OLM installs them without pulling or unpacking a bundle image.
#   - $VERSION is ./bundle (made by `make bundle`; its CSV must be at $VERSION).
#   - Any other version is generated from config/manifests like `make bundle` does, with the manager
#     image tagged v<version>, into $CATALOG_WORK_DIR/bundles/<version> (no image is built or pulled).
# The catalog is validated with `opm validate` before the script exits.
#
# Environment (defaults): VERSION (0.2.0), PREVIOUS_VERSION (0.1.0), IMAGE_TAG_BASE
#   (ghcr.io/nsclaim/nsclaim-operator), CATALOG_WORK_DIR (<repo>/tmp/catalog-work),
#   OPM, OPERATOR_SDK, KUSTOMIZE (<repo>/bin/{opm,operator-sdk,kustomize}).
set -euo pipefail

REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PACKAGE=nsclaim-operator
CHANNELS=(alpha stable)
DEFAULT_CHANNEL=stable
VERSION=${VERSION:-0.2.0}
PREVIOUS_VERSION=${PREVIOUS_VERSION:-0.1.0}
IMAGE_TAG_BASE=${IMAGE_TAG_BASE:-ghcr.io/nsclaim/nsclaim-operator}
WORK=$(realpath -m "${CATALOG_WORK_DIR:-$REPO_ROOT/tmp/catalog-work}")
OPM=${OPM:-$REPO_ROOT/bin/opm}
OPERATOR_SDK=${OPERATOR_SDK:-$REPO_ROOT/bin/operator-sdk}
KUSTOMIZE=${KUSTOMIZE:-$REPO_ROOT/bin/kustomize}

if (($# < 1)); then
  sed -n '16,31p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
  exit 2
fi
OUT=$(realpath -m "$1")
shift
VERSIONS=("$@")
((${#VERSIONS[@]})) || VERSIONS=("$PREVIOUS_VERSION" "$VERSION")
mapfile -t VERSIONS < <(printf '%s\n' "${VERSIONS[@]}" | sort -u -V)

# bundle_dir VERSION prints the bundle directory of VERSION, generating it when it is not ./bundle.
bundle_dir() {
  local v=$1 dir
  if [[ $v == "$VERSION" ]]; then
    grep -qx "  version: $v" "$REPO_ROOT/bundle/manifests/$PACKAGE.clusterserviceversion.yaml" ||
      { echo "catalog: bundle/ is not at version $v; run: make bundle" >&2; return 1; }
    echo "$REPO_ROOT/bundle"
    return
  fi
  dir=$WORK/bundles/$v
  rm -rf "$dir" "$WORK/overlay-$v"
  mkdir -p "$WORK/overlay-$v"
  # The same manifests as `make bundle`, with the manager image (and the CSV's containerImage) at v$v.
  cat >"$WORK/overlay-$v/kustomization.yaml" <<EOF
resources:
- $(realpath --relative-to="$WORK/overlay-$v" "$REPO_ROOT/config/manifests")
images:
- name: $IMAGE_TAG_BASE
  newTag: v$v
replacements:
- source:
    kind: Deployment
    fieldPath: spec.template.spec.containers.[name=manager].image
  targets:
  - select:
      kind: ClusterServiceVersion
    fieldPaths:
    - metadata.annotations.containerImage
EOF
  # operator-sdk writes bundle.Dockerfile into the working directory and reads PROJECT from it, so it
  # runs in the overlay directory with a copy of PROJECT, never in the repository.
  cp "$REPO_ROOT/PROJECT" "$WORK/overlay-$v/PROJECT"
  (cd "$WORK/overlay-$v" && "$KUSTOMIZE" build . | "$OPERATOR_SDK" generate bundle -q --overwrite \
    --version "$v" --package "$PACKAGE" --channels "$(IFS=,; echo "${CHANNELS[*]}")" \
    --default-channel "$DEFAULT_CHANNEL" --output-dir "$dir" >"$WORK/generate-$v.log" 2>&1) ||
    { cat "$WORK/generate-$v.log" >&2; return 1; }
  sed -i '/^    createdAt: /d' "$dir/manifests/$PACKAGE.clusterserviceversion.yaml"
  echo "$dir"
}

rm -rf "$OUT"
mkdir -p "$OUT/$PACKAGE"
{
  cat <<EOF
---
schema: olm.package
name: $PACKAGE
defaultChannel: $DEFAULT_CHANNEL
EOF
  for ch in "${CHANNELS[@]}"; do
    printf -- '---\nschema: olm.channel\npackage: %s\nname: %s\nentries:\n' "$PACKAGE" "$ch"
    for i in "${!VERSIONS[@]}"; do
      printf -- '- name: %s.v%s\n' "$PACKAGE" "${VERSIONS[$i]}"
      if ((i > 0)); then
        printf -- '  replaces: %s.v%s\n' "$PACKAGE" "${VERSIONS[$((i - 1))]}"
        printf -- "  skipRange: '>=%s <%s'\n" "${VERSIONS[0]}" "${VERSIONS[$i]}"
      fi
    done
  done
} >"$OUT/$PACKAGE/package.yaml"

for v in "${VERSIONS[@]}"; do
  dir=$(bundle_dir "$v")
  "$OPM" render "$dir" -o yaml >"$OUT/$PACKAGE/bundle-v$v.yaml"
done
"$OPM" validate "$OUT"
echo "catalog: $OUT (package $PACKAGE, versions ${VERSIONS[*]}, channels ${CHANNELS[*]}) is valid"
