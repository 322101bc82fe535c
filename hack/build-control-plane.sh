#!/usr/bin/env bash
# Builds etcd, kube-apiserver, kube-controller-manager and kubectl from their Go modules into
# $1 (a directory keyed by version, for example bin/k8s/1.37.1-linux-amd64), the way upstream release
# builds do: static, trimmed, and stamped with the version so the server does not report v0.0.0-master.
# A binary that already exists is not built again. Further arguments name the binaries to build
# instead (any of etcd and hack/kube/cmd/*: hack/build-node.sh builds kubelet, kube-proxy and
# kube-scheduler this way, with the same stamping).
set -euo pipefail
out=${1:?usage: build-control-plane.sh OUTDIR KUBE_VERSION [BINARY...]}
kube_version=${2:?usage: build-control-plane.sh OUTDIR KUBE_VERSION [BINARY...]}
shift 2
bins=("$@")
if ((${#bins[@]} == 0)); then bins=(etcd kube-apiserver kube-controller-manager kubectl); fi
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
out=$(cd "$out" && pwd)

major=${kube_version#v}; major=${major%%.*}
minor=${kube_version#v*.}; minor=${minor%%.*}
stamp=""
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  stamp+=" -X ${pkg}.gitVersion=${kube_version} -X ${pkg}.gitMajor=${major} -X ${pkg}.gitMinor=${minor}"
  stamp+=" -X ${pkg}.gitTreeState=clean -X ${pkg}.buildDate=1970-01-01T00:00:00Z"
done

build() { # dir package binary
  local dir=$1 pkg=$2 bin=$3
  if [ -x "$out/$bin" ]; then return 0; fi
  echo "building $bin (first time only; see README for timings)" >&2
  (cd "$dir" && CGO_ENABLED=0 go build -trimpath -tags selinux,notest,grpcnotrace \
    -ldflags "-s -w${stamp}" -o "$out/$bin.tmp" "$pkg")
  mv "$out/$bin.tmp" "$out/$bin"
}

for b in "${bins[@]}"; do
  if [[ $b == etcd ]]; then
    build "$here/etcd" . etcd
  elif [[ -d $here/kube/cmd/$b ]]; then
    build "$here/kube" "./cmd/$b" "$b"
  else
    echo "build-control-plane.sh: unknown binary $b" >&2
    exit 2
  fi
done
