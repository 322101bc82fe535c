#!/usr/bin/env bash
# Unpacks binaries from a Debian package into a directory keyed by the upstream version, with no
# dependence on the Debian revision.
#
#   hack/fetch-deb-tool.sh PACKAGE UPSTREAM_VERSION OUTDIR BINARY...
#
# Why the upstream version and not the full Debian version: Debian's archive serves one revision of
# a package per suite, and a point release replaces it (prometheus 2.42.0+ds-5+b6 became
# 2.42.0+ds-5+deb12u1 and the old one was gone from the mirror, which broke every cold `make test`).
# What the tests depend on is the upstream release, so that is what is pinned: any revision whose
# upstream part is UPSTREAM_VERSION is accepted, and after unpacking each binary must report
# UPSTREAM_VERSION ("version X" or "vX") in its `--version` output (VERSION_FLAG: busybox has no
# --version, its --help names the version), or the run fails. The package index is refreshed
# (apt-get update) whenever the version is not listed or its download fails, since a stale index names
# revisions the mirror no longer has.
set -euo pipefail
pkg=${1:?usage: fetch-deb-tool.sh PACKAGE UPSTREAM_VERSION OUTDIR BINARY...}
upstream=${2:?usage: fetch-deb-tool.sh PACKAGE UPSTREAM_VERSION OUTDIR BINARY...}
out=${3:?usage: fetch-deb-tool.sh PACKAGE UPSTREAM_VERSION OUTDIR BINARY...}
shift 3
[ $# -gt 0 ] || { echo "fetch-deb-tool.sh: name at least one binary" >&2; exit 2; }

# candidate prints the newest version of pkg in the index whose upstream part (no epoch, cut at the
# first '+' or the last '-') is the pinned upstream version.
candidate() {
  apt-cache madison "$pkg" 2>/dev/null | awk -F'|' '{gsub(/ /, "", $2); print $2}' | while read -r v; do
    u=${v#*:}; u=${u%%+*}; case "$u" in *-*) u=${u%-*} ;; esac
    if [ "$u" = "$upstream" ]; then echo "$v"; break; fi
  done
}

tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
fetched=""
for attempt in cached refreshed; do
  if [ "$attempt" = refreshed ]; then
    echo "fetch-deb-tool.sh: refreshing Debian's package index (apt-get update)" >&2
    apt-get update -qq
  fi
  v=$(candidate || true)
  [ -n "$v" ] || continue
  if apt-get download -qq "$pkg=$v" >/dev/null 2>&1; then fetched=$v; break; fi
done
if [ -z "$fetched" ]; then
  echo "fetch-deb-tool.sh: Debian serves no $pkg of upstream version $upstream; served:" >&2
  apt-cache madison "$pkg" >&2 || true
  exit 1
fi

dpkg -x "${pkg}"_*.deb x
mkdir -p "$out.tmp"
for b in "$@"; do
  path=$(find x/usr/bin x/usr/sbin x/bin -maxdepth 1 -name "$b" -type f 2>/dev/null | head -n1 || true)
  [ -n "$path" ] || { echo "fetch-deb-tool.sh: $pkg $fetched has no binary $b" >&2; exit 1; }
  cp "$path" "$out.tmp/$b"
  if ! "$out.tmp/$b" "${VERSION_FLAG:---version}" 2>&1 | grep -Eq "(version |v)$upstream\b"; then
    echo "fetch-deb-tool.sh: $b from $pkg $fetched does not report version $upstream:" >&2
    "$out.tmp/$b" "${VERSION_FLAG:---version}" >&2 || true
    exit 1
  fi
done
echo "$fetched" > "$out.tmp/DEBIAN_VERSION"
rm -rf "$out"; mv "$out.tmp" "$out"
echo "fetch-deb-tool.sh: $pkg $fetched (upstream $upstream) -> $out" >&2
