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

# The release history (hack/releases.txt) and the release notes (CHANGELOG.md).
#
# Usage: hack/releases.sh list              every release: VERSION COMMIT (resolved)
#        hack/releases.sh commit VERSION    the commit of a release
#        hack/releases.sh notes VERSION     the CHANGELOG.md section of VERSION (without its heading)
#        hack/releases.sh check [VERSION]   VERSION (default and required: the Makefile's) and every
#                                           recorded release have a CHANGELOG section, and the Makefile's
#                                           PREVIOUS_VERSION is the release before VERSION (make verify)
#        hack/releases.sh check-tag TAG [COMMIT]
#                                           the release workflow's gate: TAG is vVERSION of a recorded
#                                           release whose commit is COMMIT (default HEAD), VERSION is the
#                                           Makefile's, and check passes
#        hack/releases.sh build VERSION     build a recorded release from its commit, offline, and print
#                                           the directory (under RELEASES_BUILD_DIR, a cache shared by
#                                           worktrees): src/ (`git archive` of the commit), manager
#                                           (`go build ./cmd` of src/), bundle/ (src/'s own `make bundle
#                                           VERSION=VERSION`, with the tools src/'s Makefile pins, taken
#                                           from ./bin, never built), build.log; once per commit (the
#                                           file built marks a finished build). When the commit's own
#                                           bundle/ is at VERSION, the rebuilt bundle must equal it.
# Environment: RELEASES_FILE (<repo>/hack/releases.txt), CHANGELOG (<repo>/CHANGELOG.md),
#   RELEASES_BUILD_DIR ($XDG_CACHE_HOME or ~/.cache, /nsclaim/releases; a release is built once into
#   VERSION-COMMIT under it: the commit's content never changes),
#   IMAGE_TAG_BASE (the release's own) for build, TOOLS_BIN (<repo>/bin).
set -euo pipefail
REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
RELEASES_FILE=${RELEASES_FILE:-$REPO_ROOT/hack/releases.txt}
CHANGELOG=${CHANGELOG:-$REPO_ROOT/CHANGELOG.md}

die() { echo "releases: $*" >&2; exit 1; }

# entries prints the "VERSION COMMIT" lines of the releases file, without comments.
entries() { sed -e 's/#.*//' -e '/^[[:space:]]*$/d' "$RELEASES_FILE" | awk '{print $1, $2}'; }

makefile_var() { sed -n "s/^$1 ?= *//p" "$REPO_ROOT/Makefile"; }

# commit_of VERSION prints the full commit hash of a release.
commit_of() {
  local v=$1 c line rel
  c=$(entries | awk -v v="$v" '$1 == v {print $2}')
  [ -n "$c" ] || die "$v is not a release in $RELEASES_FILE"
  if [ "$c" = "-" ]; then
    # The newest commit that changed the number of occurrences of the line, which is still there.
    line=$(grep -E "^$(sed 's/\./\\./g' <<<"$v")[[:space:]]+-([[:space:]]|$)" "$RELEASES_FILE" | head -1)
    rel=$(realpath --relative-to="$REPO_ROOT" "$RELEASES_FILE")
    c=$(git -C "$REPO_ROOT" log -1 --format=%H -S"$line" -- "$rel")
    [ -n "$c" ] || die "the line '$line' of $rel is not committed yet: its commit is the one that adds it"
    git -C "$REPO_ROOT" show "$c:$rel" | grep -qxF -- "$line" || die "commit $c removed '$line'"
  fi
  git -C "$REPO_ROOT" rev-parse --verify --quiet "$c^{commit}" || die "commit $c of $v is not in this repository"
}

# notes VERSION prints the section "## [VERSION] ..." of the CHANGELOG up to the next "## " heading,
# without its heading and without leading or trailing blank lines.
notes() {
  local v=$1 out
  out=$(awk -v v="$v" '
    /^## / { if (found) exit; if (index($0, "## [" v "]") == 1 || index($0, "## " v " ") == 1 || $0 == "## " v) { found = 1; next } }
    found { print }' "$CHANGELOG" | sed -e '/./,$!d' | tac | sed -e '/./,$!d' | tac)
  [ -n "$out" ] || die "CHANGELOG.md has no section for $v (a heading '## [$v] - DATE')"
  printf '%s\n' "$out"
}

# check VERSION: VERSION (default: the Makefile's) has release notes; every recorded release has
# release notes; the Makefile's PREVIOUS_VERSION is the release before VERSION (the newest recorded
# release when VERSION is still in development, i.e. has no line yet).
check() {
  local v=${1:-$(makefile_var VERSION)} prev ver
  [ "$v" = "$(makefile_var VERSION)" ] || die "the Makefile's VERSION is $(makefile_var VERSION), not $v"
  notes "$v" >/dev/null
  while read -r ver _; do notes "$ver" >/dev/null; done < <(entries)
  if entries | awk -v v="$v" '$1 == v {f = 1} END {exit !f}'; then
    prev=$(entries | awk -v v="$v" '$1 == v {print p; exit} {p = $1}')
  else
    prev=$(entries | awk 'END {print $1}')
  fi
  [ -z "$prev" ] || [ "$prev" = "$(makefile_var PREVIOUS_VERSION)" ] ||
    die "the release before $v is $prev, but the Makefile's PREVIOUS_VERSION is $(makefile_var PREVIOUS_VERSION)"
  echo "releases: $v has release notes, every recorded release has notes, PREVIOUS_VERSION $prev is the release before it"
}

# build VERSION builds the release VERSION from its commit (see the usage) and prints the directory.
build() {
  local v=$1 c final dir src tool var ver csv base key
  c=$(commit_of "$v")
  # IMAGE_TAG_BASE, when set and not the commit's own, is passed to its make bundle (the CSV then names
  # the manager image there) and is part of the build's name.
  base=$(git -C "$REPO_ROOT" show "$c:Makefile" | sed -n 's/^IMAGE_TAG_BASE ?= *//p')
  key=$v-$c
  if [ -n "${IMAGE_TAG_BASE:-}" ] && [ "$IMAGE_TAG_BASE" != "$base" ]; then
    base=$IMAGE_TAG_BASE key=$key-$(sha256sum <<<"$base" | cut -c1-12)
  fi
  final=$(realpath -m "${RELEASES_BUILD_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/nsclaim/releases}/$key")
  if [ -f "$final/built" ]; then echo "$final"; return; fi
  # Built aside and renamed when done, so that concurrent builds (worktrees share the cache) never see
  # a half-built release.
  mkdir -p "$(dirname "$final")"
  dir=$(mktemp -d "$final.building.XXXXXX")
  trap 'rm -rf "$dir"' EXIT
  src=$dir/src
  mkdir -p "$src/bin" "$dir/committed"
  git -C "$REPO_ROOT" archive "$c" | tar -x -C "$src"
  git -C "$REPO_ROOT" archive "$c" bundle | tar -x -C "$dir/committed"
  # The tools src/'s Makefile pins, linked the way its go-install-tool expects (bin/NAME -> bin/NAME-VERSION),
  # so that its `make bundle` finds them and builds nothing.
  for tool in kustomize:KUSTOMIZE_VERSION controller-gen:CONTROLLER_TOOLS_VERSION operator-sdk:OPERATOR_SDK_VERSION; do
    var=${tool#*:} tool=${tool%%:*}
    ver=$(sed -n "s/^$var ?= *//p" "$src/Makefile")
    [ -n "$ver" ] || die "$v ($c): its Makefile sets no $var"
    [ -x "${TOOLS_BIN:-$REPO_ROOT/bin}/$tool-$ver" ] ||
      die "$v ($c) pins $tool $ver, which is not in ${TOOLS_BIN:-$REPO_ROOT/bin} (build it there first)"
    ln -s "$(realpath "${TOOLS_BIN:-$REPO_ROOT/bin}/$tool-$ver")" "$src/bin/$tool-$ver"
    ln -s "$src/bin/$tool-$ver" "$src/bin/$tool"
  done
  {
    echo "releases: building $v from $c ($(git -C "$REPO_ROOT" log -1 --format=%s "$c"))"
    (cd "$src" && go build -trimpath -o "$dir/manager" ./cmd)
    make -C "$src" --no-print-directory bundle VERSION="$v" IMAGE_TAG_BASE="$base"
  } >"$dir/build.log" 2>&1 || { tail -30 "$dir/build.log" >&2; die "building $v from $c failed"; }
  csv=bundle/manifests/nsclaim-operator.clusterserviceversion.yaml
  grep -qx "  version: $v" "$src/$csv" || die "$v ($c): its make bundle did not make a bundle at $v"
  if [ "$key" = "$v-$c" ] && grep -qx "  version: $v" "$dir/committed/$csv" 2>/dev/null; then
    diff -r "$dir/committed/bundle" "$src/bundle" >&2 ||
      die "$v ($c): its make bundle does not reproduce the bundle committed in $c (diff above)"
    echo "releases: the rebuilt bundle of $v equals the one committed in $c" >>"$dir/build.log"
  fi
  ln -s src/bundle "$dir/bundle"
  rm -rf "$dir/committed"
  touch "$dir/built"
  # Another build may have finished first: keep that one (same commit, same result).
  mv -T "$dir" "$final" 2>/dev/null || [ -f "$final/built" ] || die "cannot move the build of $v to $final"
  trap - EXIT
  rm -rf "$dir"
  echo "$final"
}

case "${1:-}" in
  build) (($# == 2)) || die "usage: $0 build VERSION"; build "$2" ;;
  list) entries | while read -r v _; do echo "$v $(commit_of "$v" 2>/dev/null || echo "(its line is not committed yet)")"; done ;;
  commit) (($# == 2)) || die "usage: $0 commit VERSION"; commit_of "$2" ;;
  notes) (($# == 2)) || die "usage: $0 notes VERSION"; notes "$2" ;;
  check) check "${2:-}" ;;
  check-tag)
    (($# >= 2)) || die "usage: $0 check-tag TAG [COMMIT]"
    [[ $2 == v* ]] || die "tag $2 does not start with v"
    v=${2#v}
    check "$v"
    entries | awk -v v="$v" '$1 == v {f = 1} END {exit !f}' || die "$v has no line in $RELEASES_FILE"
    want=$(commit_of "$v")
    got=$(git -C "$REPO_ROOT" rev-parse --verify "${3:-HEAD}^{commit}")
    [ "$want" = "$got" ] || die "tag $2 is at $got, but hack/releases.txt records $v as $want"
    echo "releases: tag $2 is the recorded commit of $v ($want)" ;;
  *) sed -n '16,38p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
esac
