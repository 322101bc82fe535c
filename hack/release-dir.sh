#!/usr/bin/env bash
# make release-dir: one directory holding everything a release page and a registry hold for VERSION;
# the release workflow publishes exactly this directory (files as release assets, the *.oci.tar images
# pushed under the names they carry), and make test-release-rehearsal consumes nothing else.
#
#   install.yaml, fence.yaml, fence-keyless.yaml, monitoring.yaml   hack/release-manifests.sh (the
#                  same command and file as make build-installer; the Deployment's image is IMG)
#   nsclaim-dashboard.json     config/grafana's Grafana dashboard (to import, or as config/grafana's ConfigMap)
#   kubectl-nsclaim_<os>_<arch>.tar.gz, kubectl-nsclaim_checksums.txt, nsclaim.yaml (krew manifest)
#                  hack/plugin-dist.sh, for PLUGIN_PLATFORMS
#   manager-image.oci.tar      IMG as an OCI image index: linux/amd64 and linux/arm64 (MANAGER_ARCHS), cross-compiled
#                              and assembled offline (hack/images.sh manager-multiarch)
#   bundle-image.oci.tar       BUNDLE_IMG: ./bundle as bundle.Dockerfile builds it (hack/images.sh bundle)
#   catalog-image.oci.tar      CATALOG_IMG: opm serve of the file-based catalog of PREVIOUS_VERSION and
#                              VERSION (hack/catalog.sh; linux/amd64: opm is built here with cgo)
#   manager-sbom-linux-<arch>.cdx.json  the manager's SBOM (CycloneDX JSON) for each of MANAGER_ARCHS:
#                              cyclonedx-gomod app (CYCLONEDX_GOMOD) of ./cmd with the image's build
#                              constraints (CGO_ENABLED=0, GOOS=linux, GOARCH), the modules linked into
#                              the manager; the main module's version vVERSION (no serial number, no
#                              timestamp: the same tree gives the same file)
#   images.txt                 each *.oci.tar and the reference it is published as
#   SHA256SUMS                 sha256 of every other file (sha256sum -c reads it)
#
# Usage: hack/release-dir.sh DIR
# Environment: VERSION, PREVIOUS_VERSION, IMG, BUNDLE_IMG, CATALOG_IMG, PLUGIN_PLATFORMS, MANAGER_ARCHS, KUSTOMIZE,
#   OPM, TOOLS_BIN, CYCLONEDX_GOMOD (as the Makefile sets them).
set -euo pipefail
REPO_ROOT=$(cd "$(dirname "$0")/.." && pwd)
DIR=$(realpath -m "${1:?usage: $0 DIR}")
VERSION=${VERSION:?} PREVIOUS_VERSION=${PREVIOUS_VERSION:?}
IMG=${IMG:-ghcr.io/nsclaim/nsclaim-operator:v$VERSION}
BUNDLE_IMG=${BUNDLE_IMG:-ghcr.io/nsclaim/nsclaim-operator-bundle:v$VERSION}
CATALOG_IMG=${CATALOG_IMG:-ghcr.io/nsclaim/nsclaim-operator-catalog:v$VERSION}
PLUGIN_PLATFORMS=${PLUGIN_PLATFORMS:-linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64 windows/arm64}
say() { echo "release-dir: $*" >&2; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# plugin-dist starts from an empty directory: it goes first.
# shellcheck disable=SC2086 # PLUGIN_PLATFORMS is a list
"$REPO_ROOT/hack/plugin-dist.sh" "$VERSION" "$DIR" $PLUGIN_PLATFORMS >&2
"$REPO_ROOT/hack/release-manifests.sh" "$DIR"
grep -q "image: $IMG\$" "$DIR/install.yaml" || { say "install.yaml does not run $IMG"; exit 1; }
cp "$REPO_ROOT/config/grafana/nsclaim-dashboard.json" "$DIR/"

# cyclonedx-gomod takes the main module's version from git (and cannot read a worktree's): it reads a
# copy of the tree (tracked and untracked files, .gitignore honoured) committed and tagged vVERSION.
mkdir -p "$work/sbom-src"
(cd "$REPO_ROOT" && git ls-files -z --cached --others --exclude-standard |
  while IFS= read -r -d '' f; do if [[ -e $f ]]; then printf '%s\0' "$f"; fi; done | xargs -0 cp -P --parents -t "$work/sbom-src")
git -C "$work/sbom-src" init -q
git -C "$work/sbom-src" add -A
GIT_AUTHOR_DATE="2000-01-01T00:00:00Z" GIT_COMMITTER_DATE="2000-01-01T00:00:00Z" git -C "$work/sbom-src" -c user.name=release-dir -c user.email=release-dir@nsclaim.invalid commit -qm "v$VERSION"
git -C "$work/sbom-src" tag "v$VERSION"
# It runs while the images are built.
sbom() {
  for arch in ${MANAGER_ARCHS:-amd64 arm64}; do
    (cd "$work/sbom-src" && CGO_ENABLED=0 GOOS=linux GOARCH=$arch "${CYCLONEDX_GOMOD:-$REPO_ROOT/bin/cyclonedx-gomod}" app -json -noserial -notimestamp \
      -main cmd -output "$DIR/manager-sbom-linux-$arch.cdx.json" .) 2>"$work/sbom.log" || { cat "$work/sbom.log" >&2; return 1; }
  done
}
sbom &
sbom_pid=$!
MANAGER_IMAGE=$IMG "$REPO_ROOT/hack/images.sh" "$work" manager-multiarch
mv "$work/manager-multiarch.tar" "$DIR/manager-image.oci.tar"
BUNDLE_IMAGE=$BUNDLE_IMG "$REPO_ROOT/hack/images.sh" "$work" bundle
mv "$work/bundle.tar" "$DIR/bundle-image.oci.tar"
VERSION=$VERSION "$REPO_ROOT/hack/catalog.sh" "$work/catalog" "$PREVIOUS_VERSION" "$VERSION" >&2
CATALOG_IMAGE=$CATALOG_IMG CATALOG_DIR=$work/catalog "$REPO_ROOT/hack/images.sh" "$work" catalog
mv "$work/catalog.tar" "$DIR/catalog-image.oci.tar"
wait "$sbom_pid"
printf '%s %s\n' manager-image.oci.tar "$IMG" bundle-image.oci.tar "$BUNDLE_IMG" catalog-image.oci.tar "$CATALOG_IMG" >"$DIR/images.txt"

(cd "$DIR" && find . -maxdepth 1 -type f ! -name SHA256SUMS -printf '%f\n' | sort | xargs sha256sum >SHA256SUMS)
say "v$VERSION in $DIR:"
(cd "$DIR" && ls -l --time-style=+ | awk 'NR>1 {printf "  %10d  %s\n", $5, $NF}') >&2
