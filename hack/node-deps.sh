#!/usr/bin/env bash
# Installs the Debian packages the local node (hack/local-node.sh) needs and that are not built from Go
# modules: runc (the OCI runtime under containerd's runc shim), iptables (kube-proxy's rules, CNI portmap
# and masquerading) and conntrack (kube-proxy clears stale UDP entries with it); and skopeo, with which
# test-release-rehearsal publishes the release's images into the node's registry as the release
# workflow publishes them (skopeo copy --all). Root only; a no-op when they are present.
set -euo pipefail
need=()
command -v runc >/dev/null 2>&1 || need+=(runc)
command -v iptables >/dev/null 2>&1 || need+=(iptables)
command -v conntrack >/dev/null 2>&1 || need+=(conntrack)
command -v skopeo >/dev/null 2>&1 || need+=(skopeo)
if ((${#need[@]} == 0)); then exit 0; fi
if ((EUID != 0)); then
  echo "node-deps.sh: need root to install ${need[*]} (apt-get)" >&2
  exit 1
fi
echo "node-deps.sh: installing ${need[*]} from Debian" >&2
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
