#!/usr/bin/env bash
# The release directory of a recorded release (hack/releases.txt) that predates make release-dir, for
# test-release-rehearsal's upgrade: what a user of that release installed, rebuilt from its recorded
# commit (hack/releases.sh build: `git archive` of the commit, the tools its Makefile pins):
#   install.yaml           the release's own `make build-installer` (its config/default, with the
#                          Deployment's image set to IMG as that target sets it; up to 0.3.0 this
#                          includes the admission fence) and what its `make deploy` applies
#   fence.yaml             its config/fence (`kubectl apply -k config/fence`, as its README says for OLM)
#   manager-image.oci.tar  IMG: its manager as its Dockerfile builds it (CGO_ENABLED=0 go build ./cmd,
#                          ENTRYPOINT /manager, USER 65532:65532), linux/amd64 only (as its image was)
#   images.txt, SHA256SUMS as make release-dir writes them
#   release.txt            the version, its commit and how this directory was made
# Why not the release's own directory: releases up to 0.3.0 attached no file to their release page and
# have no make release-dir (CHANGELOG.md, issue 41); a release that has one is built with it instead.
#
# Usage: hack/previous-release-dir.sh VERSION DIR
# Environment: IMAGE_TAG_BASE (ghcr.io/nsclaim/nsclaim-operator), TOOLS_BIN (<repo>/bin).
set -euo pipefail
REPO_ROOT=$(cd "$(dirname "$0")/.." && pwd)
VERSION=${1:?usage: $0 VERSION DIR}
DIR=$(realpath -m "${2:?usage: $0 VERSION DIR}")
IMG=${IMAGE_TAG_BASE:-ghcr.io/nsclaim/nsclaim-operator}:v$VERSION
say() { echo "previous-release-dir: $*" >&2; }

build=$(TOOLS_BIN=${TOOLS_BIN:-$REPO_ROOT/bin} "$REPO_ROOT/hack/releases.sh" build "$VERSION")
src=$build/src
commit=$("$REPO_ROOT/hack/releases.sh" commit "$VERSION")
# The directory is a function of the commit and of this script: reused when both are the same and its
# files check out.
stamp="$VERSION $commit: rebuilt by hack/previous-release-dir.sh (sha256 $(sha256sum "$0" | cut -c1-16)) from its recorded commit (its make build-installer, config/fence, its manager image)"
if [[ -f $DIR/release.txt && $(cat "$DIR/release.txt") == "$stamp" ]] && (cd "$DIR" && sha256sum -c --quiet SHA256SUMS 2>/dev/null); then
  say "v$VERSION ($commit) in $DIR is up to date"
  exit 0
fi
if [[ -x $src/hack/release-dir.sh ]]; then
  say "$VERSION ($commit) has its own make release-dir: build its directory with it (make -C <its source> release-dir)"
  exit 1
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
rm -rf "$DIR" && mkdir -p "$DIR"

# The kustomize its Makefile pins, from TOOLS_BIN (the build's own bin/ links may point at a worktree
# that is gone: the build cache is shared).
kustomize=${TOOLS_BIN:-$REPO_ROOT/bin}/kustomize-$(sed -n 's/^KUSTOMIZE_VERSION ?= *//p' "$src/Makefile")
[[ -x $kustomize ]] || { say "$VERSION pins $(basename "$kustomize"), which is not built (make kustomize KUSTOMIZE_VERSION=...)"; exit 1; }
# Its build-installer: cd config/manager && kustomize edit set image controller=IMG; kustomize build
# config/default (on a copy: the build under RELEASES_BUILD_DIR is shared and never changes).
cp -r "$src/config" "$work/config"
(cd "$work/config/manager" && "$kustomize" edit set image "controller=$IMG")
"$kustomize" build "$work/config/default" >"$DIR/install.yaml"
"$kustomize" build "$work/config/fence" >"$DIR/fence.yaml"
grep -q "image: $IMG\$" "$DIR/install.yaml" || { say "install.yaml of $VERSION does not run $IMG"; exit 1; }

(cd "$src" && CGO_ENABLED=0 GOOS=linux GOARCH=amd64 go build -trimpath -o "$work/manager" ./cmd)
CGO_ENABLED=0 go -C "$REPO_ROOT/hack/tools/imagebuild" build -o "$work/imagebuild" .
"$work/imagebuild" -o "$DIR/manager-image.oci.tar" -name "$IMG" -entrypoint /manager -user 65532:65532 -file /manager="$work/manager"
printf '%s %s\n' manager-image.oci.tar "$IMG" >"$DIR/images.txt"
echo "$stamp" >"$DIR/release.txt"
(cd "$DIR" && find . -maxdepth 1 -type f ! -name SHA256SUMS -printf '%f\n' | sort | xargs sha256sum >SHA256SUMS)
say "v$VERSION ($commit) in $DIR:"
(cd "$DIR" && ls -l --time-style=+ | awk 'NR>1 {printf "  %10d  %s\n", $5, $NF}') >&2
