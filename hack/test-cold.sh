#!/usr/bin/env bash
# Runs a target (default: `make test`) the way CI and a new user do: in a fresh clone of HEAD, with
# an empty ./bin, an empty Go module cache and an empty Go build cache, so that every pinned download
# (Go modules, Debian packages) is fetched again. This is the check that finds a pin a registry has
# withdrawn (issue 33: Debian replaced prometheus 2.42.0+ds-5+b6) before a user does; a warm tree
# hides it because ./bin already holds the tool.
#
#   hack/test-cold.sh [MAKE TARGET...]        (make test-cold)
#
# Settings: COLD_DIR [$TMPDIR/nsclaim-cold, emptied first; outside the tree, or `go ... ./...` would walk
# into its module cache]. The clone is of the committed HEAD: commit first.
# It prints the wall-clock minutes at the end; a cold `make test` must stay inside CI's 90 minutes.
set -euo pipefail
REPO_ROOT=$(cd "$(dirname "$0")/.." && pwd)
COLD_DIR=${COLD_DIR:-${TMPDIR:-/tmp}/nsclaim-cold}
targets=("$@"); [ ${#targets[@]} -gt 0 ] || targets=(test)

case "$COLD_DIR" in "$REPO_ROOT"/*) echo "COLD_DIR must be outside the tree (go ./... would walk into its module cache)" >&2; exit 2 ;; ""|/) exit 2 ;; esac
if [ -d "$COLD_DIR" ]; then chmod -R u+w "$COLD_DIR" 2>/dev/null || true; rm -rf "$COLD_DIR"; fi
mkdir -p "$COLD_DIR"
git clone -q "$REPO_ROOT" "$COLD_DIR/src"
export GOMODCACHE="$COLD_DIR/gomod" GOCACHE="$COLD_DIR/gocache" GOLANGCI_LINT_CACHE="$COLD_DIR/lintcache"
start=$(date +%s)
status=0
(cd "$COLD_DIR/src" && make "${targets[@]}") || status=$?
end=$(date +%s)
echo "test-cold: make ${targets[*]} from a fresh clone with empty caches: exit $status after $(( (end - start) / 60 )) min $(( (end - start) % 60 )) s"
exit "$status"
