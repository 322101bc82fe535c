#!/usr/bin/env bash
# Builds kind's node image offline, from what this project already builds, and imports it into the
# project's dockerd (hack/docker.sh up): nothing is pulled, kindest/node included.
#
#   hack/kind-node-image.sh        prints the image name (KIND_NODE_IMAGE) once it is in dockerd
#
# The image follows kind's node image layout (sigs.k8s.io/kind's images/base, read from the kind module
# of KIND_VERSION, the kind that runs it):
#   - a Debian rootfs made by debootstrap (DEBIAN_SUITE, minbase plus systemd and the packages kind's
#     base image installs that the node uses; runc is Debian's), cached as bin/kind-base-<suite>/rootfs.tar;
#   - kind's files: /usr/local/bin/entrypoint, /kind/bin/*, the systemd units of containerd and kubelet,
#     containerd's config.toml, crictl.yaml, sysctls; /etc/containerd/cri-base.json made by `ctr oci spec`
#     as kind's Dockerfile makes it;
#   - the node binaries of hack/build-node.sh: containerd, containerd-shim-runc-v2, ctr (/usr/local/bin),
#     crictl, the CNI plugins (/opt/cni/bin); kubeadm, kubelet, kubectl (/usr/bin) of KUBE_VERSION;
#   - /kind/version, and the images kubeadm asks for (`kubeadm config images list`) under the names it
#     asks for, as OCI tarballs in /kind/images, imported into containerd's k8s.io namespace before
#     kubelet starts (a drop-in of containerd.service runs /kind/bin/import-images.sh): kube-apiserver,
#     kube-controller-manager, kube-scheduler and etcd (etcd of hack/etcd, v3.7.3, under kubeadm's etcd
#     name) are one static binary each; CoreDNS is bin/coredns-<version>; pause is hack/tools/imagebuild's;
#     kube-proxy is the Debian rootfs plus kube-proxy, since it runs iptables.
# What differs from kindest/node, because of this machine or of what is built here:
#   - no kindnetd and no local-path-provisioner: the CNI is a static bridge + host-local configuration
#     (/etc/cni/net.d, the project's CNI plugins, Pod subnet 10.244.0.0/24), so a cluster is one node;
#     /kind/manifests/default-cni.yaml and default-storage.yaml are ConfigMaps saying so (kind applies
#     them); there is no StorageClass (nothing here needs a volume);
#   - kubelet runs with --fail-cgroupv1=false (/etc/default/kubelet): this kernel has cgroup v1;
#   - containerd's restrict_oom_score_adj is on and no systemd unit sets OOMScoreAdjust: root here lacks
#     CAP_SYS_RESOURCE (docs/node.md), so nothing can lower an oom_score_adj.
#
# The finished rootfs is cached as bin/kind-node-v<KUBE_VERSION>-<key>/node.tar, where key hashes this
# script and every version that goes in; a node image missing from dockerd is `docker import`ed from it.
# Settings: KUBE_VERSION [1.37.1], KIND_VERSION [v0.33.0], DEBIAN_SUITE [bookworm], DEBIAN_MIRROR
# [http://deb.debian.org/debian], KIND_NODE_IMAGE [localhost/nsclaim/kind-node:v<KUBE_VERSION>-<key>], BIN_DIR [./bin].
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
KUBE_VERSION=${KUBE_VERSION:-1.37.1}
KIND_VERSION=${KIND_VERSION:-v0.33.0}
DEBIAN_SUITE=${DEBIAN_SUITE:-bookworm}
DEBIAN_MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
bin=${BIN_DIR:-$root/bin}
: "${DOCKER_HOST:?run hack/docker.sh up and export DOCKER_HOST}"

modver() { awk -v m="$2" '$1==m{print $2; exit}' "$here/tools/$1/go.mod"; }
containerd_v=$(modver containerd github.com/containerd/containerd/v2)
cni_v=$(modver cni github.com/containernetworking/plugins)
coredns_v=$(modver coredns github.com/coredns/coredns)
crictl_v=$(modver crictl sigs.k8s.io/cri-tools)
kube=$bin/k8s/$KUBE_VERSION-linux-amd64
key=$( (cat "$0"; echo "$KIND_VERSION $DEBIAN_SUITE $containerd_v $cni_v $coredns_v $crictl_v") | sha256sum | cut -c1-10)
cache=$bin/kind-node-v$KUBE_VERSION-$key
KIND_NODE_IMAGE=${KIND_NODE_IMAGE:-localhost/nsclaim/kind-node:v$KUBE_VERSION-$key}
base=$bin/kind-base-$DEBIAN_SUITE/rootfs.tar
work=$root/tmp/kind-node

if docker image inspect "$KIND_NODE_IMAGE" >/dev/null 2>&1; then echo "$KIND_NODE_IMAGE"; exit 0; fi
import() {
  # docker import takes the rootfs; the image config (kind's Dockerfile's last lines) comes from a build
  # with no context, since dockerd 20.10's `import --change` refuses STOPSIGNAL.
  echo "kind-node-image.sh: docker import $cache/node.tar" >&2
  docker import "$cache/node.tar" "$KIND_NODE_IMAGE-rootfs" >/dev/null
  printf 'FROM %s\nENV container=docker\nSTOPSIGNAL SIGRTMIN+3\nENTRYPOINT ["/usr/local/bin/entrypoint", "/sbin/init"]\n' \
    "$KIND_NODE_IMAGE-rootfs" | DOCKER_BUILDKIT=0 docker build -q -t "$KIND_NODE_IMAGE" - >/dev/null
  docker rmi "$KIND_NODE_IMAGE-rootfs" >/dev/null
  echo "$KIND_NODE_IMAGE"
}
if [[ -f $cache/node.tar ]]; then import; exit 0; fi

start=$(date +%s)
for b in "$kube"/{kubeadm,kubelet,kubectl,kube-apiserver,kube-controller-manager,kube-scheduler,kube-proxy,etcd} \
  "$bin/containerd-$containerd_v"/{containerd,ctr,containerd-shim-runc-v2} "$bin/cni-plugins-$cni_v"/{bridge,host-local,loopback,portmap} \
  "$bin/coredns-$coredns_v/coredns" "$bin/crictl-$crictl_v/crictl"; do
  [[ -x $b ]] || { echo "kind-node-image.sh: missing $b (make node kubeadm)" >&2; exit 2; }
done
rm -rf "$work"
mkdir -p "$work" "$cache"

# 1. The Debian rootfs (once per suite): the packages of kind's base image this node uses.
if [[ ! -f $base ]]; then
  command -v debootstrap >/dev/null || {
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends debootstrap >/dev/null
  }
  pkgs=systemd,systemd-sysv,dbus,conntrack,iptables,nftables,iproute2,ethtool,util-linux,mount,kmod,libseccomp2,bash,ca-certificates,procps,runc,socat
  echo "kind-node-image.sh: debootstrap $DEBIAN_SUITE (first time only)" >&2
  debootstrap --variant=minbase --include="$pkgs" "$DEBIAN_SUITE" "$work/base" "$DEBIAN_MIRROR" >"$work/debootstrap.log" 2>&1 ||
    { tail -20 "$work/debootstrap.log" >&2; exit 1; }
  rm -rf "$work"/base/var/cache/apt/archives/*.deb "$work"/base/var/lib/apt/lists/*
  mkdir -p "$(dirname "$base")"
  tar -C "$work/base" --numeric-owner -cf "$base.tmp" . && mv "$base.tmp" "$base"
  rm -rf "$work/base"
fi

# 2. Images, under the names kubeadm asks for.
kind_dir=$(cd "$root" && go mod download -json "sigs.k8s.io/kind@$KIND_VERSION" | jq -r .Dir)
CGO_ENABLED=0 go -C "$here/tools/imagebuild" build -o "$work/imagebuild" .
CGO_ENABLED=0 go -C "$here/tools/imagebuild" build -trimpath -ldflags "-s -w" -o "$work/pause" ./pause
imgs=$work/rootfs/kind/images
mkdir -p "$imgs"
pause_image=""
while read -r name; do
  short=${name##*/}; short=${short%%:*}
  case $short in
  kube-apiserver | kube-controller-manager | kube-scheduler | etcd)
    "$work/imagebuild" -o "$imgs/$short.tar" -name "$name" -env PATH=/usr/local/bin:/usr/bin:/bin \
      -file "/usr/local/bin/$short=$kube/$short" -dir /tmp ;;
  coredns)
    "$work/imagebuild" -o "$imgs/$short.tar" -name "$name" -entrypoint /coredns -file "/coredns=$bin/coredns-$coredns_v/coredns" ;;
  pause)
    pause_image=$name
    "$work/imagebuild" -o "$imgs/$short.tar" -name "$name" -entrypoint /pause -user 65535:65535 -file "/pause=$work/pause" ;;
  kube-proxy)
    mkdir -p "$work/proxy"
    tar -C "$work/proxy" -xf "$base"
    install -m 0755 "$kube/kube-proxy" "$work/proxy/usr/local/bin/kube-proxy"
    tar -C "$work/proxy" --numeric-owner -cf "$work/proxy.tar" .
    docker import "$work/proxy.tar" "$name" >/dev/null
    docker save "$name" -o "$imgs/$short.tar"
    docker rmi "$name" >/dev/null
    rm -rf "$work/proxy" "$work/proxy.tar" ;;
  *) echo "kind-node-image.sh: kubeadm asks for $name, which is not built here" >&2; exit 1 ;;
  esac
done < <("$kube/kubeadm" config images list --kubernetes-version "v$KUBE_VERSION" 2>/dev/null)
[[ -n $pause_image ]] || { echo "kind-node-image.sh: kubeadm named no pause image" >&2; exit 1; }

# 3. The node's rootfs: Debian, kind's files, the binaries.
r=$work/rootfs
tar -C "$r" -xf "$base"
f=$kind_dir/images/base/files
install -m 0755 "$f"/usr/local/bin/* "$r/usr/local/bin/"
mkdir -p "$r/kind/bin" "$r/kind/manifests" "$r/etc/containerd" "$r/etc/systemd/system/kubelet.service.d" "$r/opt/cni/bin" "$r/etc/cni/net.d" "$r/etc/kubernetes/manifests" "$r/LICENSES"
install -m 0755 "$f"/kind/bin/* "$r/kind/bin/"
install -m 0644 "$f/etc/crictl.yaml" "$r/etc/"
install -m 0644 "$f"/etc/containerd/* "$r/etc/containerd/"
install -m 0644 "$f"/etc/default/* "$r/etc/default/"
install -m 0644 "$f"/etc/sysctl.d/* "$r/etc/sysctl.d/"
install -m 0644 "$f"/etc/systemd/system/*.service "$f"/etc/systemd/system/*.slice "$r/etc/systemd/system/"
install -m 0644 "$f"/etc/systemd/system/kubelet.service.d/* "$r/etc/systemd/system/kubelet.service.d/"
for b in containerd ctr containerd-shim-runc-v2; do install -m 0755 "$bin/containerd-$containerd_v/$b" "$r/usr/local/bin/"; done
install -m 0755 "$bin/crictl-$crictl_v/crictl" "$r/usr/local/bin/"
for b in bridge host-local loopback portmap; do install -m 0755 "$bin/cni-plugins-$cni_v/$b" "$r/opt/cni/bin/"; done
for b in kubeadm kubelet kubectl; do install -m 0755 "$kube/$b" "$r/usr/bin/"; done
echo "v$KUBE_VERSION" >"$r/kind/version"

# containerd: the pause image kubeadm names; clamp oom_score_adj (no CAP_SYS_RESOURCE here).
sed -i -e "s|^\( *sandbox_image = \).*|\1\"$pause_image\"|" \
  -e 's|^\( *restrict_oom_score_adj = \).*|\1true|' "$r/etc/containerd/config.toml"
grep -q "sandbox_image = \"$pause_image\"" "$r/etc/containerd/config.toml"
grep -q 'restrict_oom_score_adj = true' "$r/etc/containerd/config.toml"
# kind adds /kind/bin/mount-product-files.sh as a createContainer hook (a product_uuid per node, for
# multi-node clusters; it needs jq): left out, these clusters are one node.
"$bin/containerd-$containerd_v/ctr" oci spec | jq 'del(.process.rlimits)' >"$r/etc/containerd/cri-base.json"
find "$r/etc/systemd" "$r/lib/systemd/system" -name '*.service' -type f -exec sed -i '/^OOMScoreAdjust=/d' {} +
echo 'KUBELET_EXTRA_ARGS=--runtime-cgroups=/system.slice/containerd.service --fail-cgroupv1=false' >"$r/etc/default/kubelet"

# The images go into containerd before kubelet starts (an ExecStartPre of kubelet.service), pause first.
cat >"$r/kind/bin/import-images.sh" <<'EOF'
#!/bin/sh
# Imports /kind/images/*.tar (built by hack/kind-node-image.sh) into containerd's k8s.io namespace, once.
set -eu
[ -f /var/lib/kind-images-imported ] && exit 0
for i in $(seq 1 60); do ctr version >/dev/null 2>&1 && break; sleep 0.5; done
for t in /kind/images/pause.tar $(ls /kind/images/*.tar | grep -v '/pause.tar$'); do
  ctr --namespace=k8s.io images import --label=io.cri-containerd.pinned=pinned --snapshotter=overlayfs "$t"
done
touch /var/lib/kind-images-imported
EOF
chmod 0755 "$r/kind/bin/import-images.sh"
printf '[Service]\nExecStartPre=/kind/bin/import-images.sh\n' >"$r/etc/systemd/system/kubelet.service.d/20-import-images.conf"

# The CNI: a bridge on the node, no kindnetd.
cat >"$r/etc/cni/net.d/10-nsclaim.conflist" <<'EOF'
{
  "cniVersion": "1.0.0",
  "name": "nsclaim",
  "plugins": [
    {"type": "bridge", "bridge": "cni0", "isGateway": true, "ipMasq": false, "hairpinMode": true,
     "ipam": {"type": "host-local", "ranges": [[{"subnet": "10.244.0.0/24"}]], "routes": [{"dst": "0.0.0.0/0"}]}},
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
}
EOF
for m in cni storage; do
  cat >"$r/kind/manifests/default-$m.yaml" <<EOF
# hack/kind-node-image.sh: this node image has no default $m add-on (see the script's header).
apiVersion: v1
kind: ConfigMap
metadata:
  name: nsclaim-kind-node-no-default-$m
  namespace: kube-system
data:
  reason: "built offline by hack/kind-node-image.sh; $( [ $m = cni ] && echo 'a static bridge CNI configuration in /etc/cni/net.d, one node' || echo 'no StorageClass: nothing needs a volume')"
EOF
done

# systemd as kind's Dockerfile sets it up.
rm -f "$r"/lib/systemd/system/multi-user.target.wants/* "$r"/etc/systemd/system/*.wants/* \
  "$r"/lib/systemd/system/local-fs.target.wants/* "$r"/lib/systemd/system/sockets.target.wants/*udev* \
  "$r"/lib/systemd/system/sockets.target.wants/*initctl* "$r"/lib/systemd/system/basic.target.wants/*
find "$r/lib/systemd/system/sysinit.target.wants/" -name systemd-tmpfiles-setup.service -delete
echo "ReadKMsg=no" >>"$r/etc/systemd/journald.conf"
chroot "$r" systemctl enable kubelet.service containerd.service undo-mount-hacks.service >/dev/null 2>&1
chroot "$r" systemctl mask systemd-binfmt.service >/dev/null 2>&1
[[ -L $r/etc/systemd/system/multi-user.target.wants/kubelet.service ]]

tar -C "$r" --numeric-owner -cf "$cache/node.tar.tmp" .
mv "$cache/node.tar.tmp" "$cache/node.tar"
rm -rf "$work"
echo "kind-node-image.sh: built $cache/node.tar in $(($(date +%s) - start)) s" >&2
import
