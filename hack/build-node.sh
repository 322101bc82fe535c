#!/usr/bin/env bash
# Builds the local node's binaries (hack/local-node.sh) from pinned Go modules into ./bin, each keyed
# by version, so that a second run builds nothing:
#   bin/k8s/<KUBE_VERSION>-linux-amd64/{kubelet,kube-proxy,kube-scheduler}   hack/kube, stamped like
#                                              the control plane (hack/build-control-plane.sh)
#   bin/containerd-<CONTAINERD_VERSION>/{containerd,containerd-shim-runc-v2,ctr}
#                                              hack/tools/containerd; CGO_ENABLED=0 with the tags of
#                                              containerd's static release build plus no_btrfs,
#                                              no_devmapper, no_zfs (no snapshotter but overlayfs and
#                                              native is needed); the shim also no_grpc, like upstream
#   bin/cni-plugins-<CNI_PLUGINS_VERSION>/{bridge,host-local,loopback,portmap}
#                                              hack/tools/cni
#   bin/coredns-<COREDNS_VERSION>/coredns      hack/tools/coredns
#   bin/crictl-<CRI_TOOLS_VERSION>/crictl      hack/tools/crictl (local-node.sh down removes Pod sandboxes)
# runc, iptables and conntrack come from Debian (hack/node-deps.sh): runc needs cgo and libseccomp.
#
# Usage: hack/build-node.sh BIN_DIR KUBE_VERSION   (e.g. bin v1.37.1; versions of the others are read
# from the wrapper modules' go.mod files)
set -euo pipefail
bin=${1:?usage: build-node.sh BIN_DIR KUBE_VERSION}
kube_version=${2:?usage: build-node.sh BIN_DIR KUBE_VERSION}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$bin"
bin=$(cd "$bin" && pwd)

# modver DIR MODULE: the version of MODULE required by the wrapper module in DIR.
modver() { awk -v m="$2" '$1==m{print $2; exit}' "$1/go.mod"; }

"$here/build-control-plane.sh" "$bin/k8s/${kube_version#v}-linux-amd64" "$kube_version" \
  kubelet kube-proxy kube-scheduler

# build DIR OUT PACKAGE [go build flags...]: build PACKAGE of wrapper module DIR into OUT unless it exists.
build() {
  local dir=$1 out=$2 pkg=$3
  shift 3
  if [[ -x $out ]]; then return 0; fi
  echo "building ${out#"$bin"/} (first time only)" >&2
  mkdir -p "$(dirname "$out")"
  CGO_ENABLED=0 go -C "$dir" build -trimpath "$@" -o "$out.tmp" "$pkg"
  mv "$out.tmp" "$out"
}

d=$here/tools/containerd
v=$(modver "$d" github.com/containerd/containerd/v2)
pkg=github.com/containerd/containerd/v2
tags=urfave_cli_no_docs,osusergo,netgo,static_build,no_btrfs,no_devmapper,no_zfs
ld="-s -w -X $pkg/version.Version=$v -X $pkg/version.Revision=$v -X $pkg/version.Package=$pkg"
build "$d" "$bin/containerd-$v/containerd" "$pkg/cmd/containerd" -tags "$tags" -ldflags "$ld"
build "$d" "$bin/containerd-$v/ctr" "$pkg/cmd/ctr" -tags "$tags" -ldflags "$ld"
build "$d" "$bin/containerd-$v/containerd-shim-runc-v2" "$pkg/cmd/containerd-shim-runc-v2" \
  -tags "$tags,no_grpc" -ldflags "$ld"

d=$here/tools/cni
v=$(modver "$d" github.com/containernetworking/plugins)
for p in main/bridge main/loopback ipam/host-local meta/portmap; do
  build "$d" "$bin/cni-plugins-$v/${p#*/}" "github.com/containernetworking/plugins/plugins/$p" \
    -ldflags "-s -w -X github.com/containernetworking/plugins/pkg/utils/buildversion.BuildVersion=$v"
done

d=$here/tools/coredns
v=$(modver "$d" github.com/coredns/coredns)
build "$d" "$bin/coredns-$v/coredns" github.com/coredns/coredns \
  -ldflags "-s -w -X github.com/coredns/coredns/coremain.GitCommit=$v"

d=$here/tools/crictl
v=$(modver "$d" sigs.k8s.io/cri-tools)
build "$d" "$bin/crictl-$v/crictl" sigs.k8s.io/cri-tools/cmd/crictl \
  -ldflags "-s -w -X sigs.k8s.io/cri-tools/pkg/version.Version=$v"
