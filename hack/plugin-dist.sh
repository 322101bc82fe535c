#!/usr/bin/env bash
# Builds the kubectl-nsclaim release files into DIST: one kubectl-nsclaim_<os>_<arch>.tar.gz per
# platform (the binary, kubectl-nsclaim.exe on windows, stamped with VERSION for `kubectl nsclaim
# version`, and kubectl_complete-nsclaim, the file kubectl runs to complete `kubectl nsclaim <TAB>`;
# kubectl_complete-nsclaim.cmd on windows), kubectl-nsclaim_checksums.txt (sha256, the
# format `sha256sum -c` reads; the GitHub Action and the GitLab component check downloads against it),
# and the krew manifest nsclaim.yaml rendered from plugins/krew/nsclaim.yaml.
# Usage: hack/plugin-dist.sh VERSION DIST PLATFORM... (PLATFORM is os/arch, e.g. linux/amd64)
# Environment: PLUGIN_DOWNLOAD_BASE, where the krew manifest's uris point (default: the GitHub release
# of VERSION, https://github.com/nsclaim/nsclaim-operator/releases/download/vVERSION).
set -euo pipefail
REPO_ROOT=$(cd "$(dirname "$0")/.." && pwd)
VERSION=${1:?usage: $0 VERSION DIST PLATFORM...}
DIST=$(realpath -m "${2:?usage: $0 VERSION DIST PLATFORM...}")
shift 2
BASE=${PLUGIN_DOWNLOAD_BASE:-https://github.com/nsclaim/nsclaim-operator/releases/download/v$VERSION}
(($# > 0)) || { echo "usage: $0 VERSION DIST PLATFORM..." >&2; exit 2; }
rm -rf "$DIST" && mkdir -p "$DIST"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
platforms=""
for p in "$@"; do
  os=${p%/*} arch=${p#*/} bin=kubectl-nsclaim complete=kubectl_complete-nsclaim
  mkdir -p "$work/$os-$arch"
  if [[ $os == windows ]]; then
    bin=kubectl-nsclaim.exe complete=kubectl_complete-nsclaim.cmd
    printf '@kubectl-nsclaim __complete %%*\r\n' > "$work/$os-$arch/$complete"
  else
    printf '#!/bin/sh\n# kubectl runs this to complete "kubectl nsclaim ..." (kubectl 1.26+).\nexec kubectl-nsclaim __complete "$@"\n' > "$work/$os-$arch/$complete"
    chmod 0755 "$work/$os-$arch/$complete"
  fi
  (cd "$REPO_ROOT" && CGO_ENABLED=0 GOOS=$os GOARCH=$arch go build -trimpath -ldflags "-s -w -X main.version=v$VERSION" -o "$work/$os-$arch/$bin" ./cmd/kubectl-nsclaim)
  archive=kubectl-nsclaim_${os}_${arch}.tar.gz
  tar -C "$work/$os-$arch" -czf "$DIST/$archive" "$bin" "$complete"
  sum=$(sha256sum "$DIST/$archive" | cut -d' ' -f1)
  echo "$sum  $archive" >> "$DIST/kubectl-nsclaim_checksums.txt"
  platforms+="  - selector: {matchLabels: {os: $os, arch: $arch}}
    uri: ${BASE%/}/$archive
    sha256: $sum
    bin: $bin
"
done
template=$(sed '/^#/d' "$REPO_ROOT/plugins/krew/nsclaim.yaml")
template=${template//'{{VERSION}}'/$VERSION}
printf '%s\n' "${template//'{{PLATFORMS}}'/${platforms%$'\n'}}" > "$DIST/nsclaim.yaml"
if grep -q '{{' "$DIST/nsclaim.yaml"; then echo "plugin-dist: unrendered placeholder in nsclaim.yaml" >&2; exit 1; fi
echo "plugin-dist: $(ls "$DIST" | tr '\n' ' ')"
