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
#   - Any other version must be a release recorded in hack/releases.txt: its bundle is the one its own
#     commit makes (`hack/releases.sh build VERSION`: `make bundle` in a `git archive` of the commit,
#     under $RELEASES_BUILD_DIR), so the catalog offers what was released, not this tree's manifests.
# The catalog is validated with `opm validate` before the script exits.
#
# Environment (defaults): VERSION (0.4.0), PREVIOUS_VERSION (0.3.0), RELEASES_BUILD_DIR
#   (<repo>/tmp/releases), OPM (<repo>/bin/opm).
set -euo pipefail

REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PACKAGE=nsclaim-operator
CHANNELS=(alpha stable)
DEFAULT_CHANNEL=stable
VERSION=${VERSION:-0.4.0}
PREVIOUS_VERSION=${PREVIOUS_VERSION:-0.3.0}
OPM=${OPM:-$REPO_ROOT/bin/opm}

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
  # A release: the bundle its own commit makes (hack/releases.sh build), never this tree's manifests.
  dir=$("$REPO_ROOT/hack/releases.sh" build "$v") || { echo "catalog: $v is not the tree's VERSION ($VERSION), so it must be a release recorded in hack/releases.txt" >&2; return 1; }
  echo "$dir/bundle"
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
