#!/usr/bin/env bash
# Runs a real node for the local cluster of hack/local-cluster.sh: containerd 2.x (runc shim, Debian's
# runc), kubelet, kube-proxy and kube-scheduler as processes, Pods in their own network namespaces on a
# Linux bridge of this machine. Start the control plane first, with the API server on the bridge:
#
#   APISERVER_ADDRESS=10.244.0.1 APISERVER_BRIDGE=nsclaim0 hack/local-cluster.sh up
#   hack/local-node.sh up        # same LOCAL_CLUSTER_DIR, NODE_BRIDGE=nsclaim0, POD_CIDR=10.244.0.0/24
#   ...
#   hack/local-node.sh down      # before hack/local-cluster.sh down (which deletes the bridge)
#
# Usage: hack/local-node.sh SUBCOMMAND
#   up        start the node and wait until it is Ready (idempotent)
#   down      remove every Pod sandbox, stop the node's processes and the containers' shims, unmount,
#             delete the node's cgroups, network namespaces and iptables rules, restore the sysctls
#             that up and kubelet changed (exit 0 if nothing runs)
#   status    print each component's state; exit 0 only if all are healthy and the node is Ready
#   import TARBALL...
#             import image tarballs (OCI or docker-archive) into containerd's k8s.io namespace
#   push TARBALL NAME
#             push the image of an OCI layout tarball (hack/images.sh) into the node's registry as
#             NAME (repository:tag, e.g. nsclaim/nsclaim-operator:v0.3.0); prints the full reference
#   env       print export lines for crictl and ctr: eval "$(hack/local-node.sh env)"
#   dns       run CoreDNS as a Pod (image COREDNS_IMAGE_TAR, hack/images.sh), Service at CLUSTER_DNS
#   rss       print the resident memory of the node's processes
#
# Configuration (environment variables, with defaults):
#   LOCAL_CLUSTER_DIR     <repo>/tmp/local-cluster  the control plane's state; the node's is node/ in it
#   KUBE_BIN_DIR          <repo>/bin/k8s/1.37.1-linux-amd64  kubelet, kube-proxy, kube-scheduler, kubectl
#   CONTAINERD_BIN_DIR    <repo>/bin/containerd-v2.4.2      containerd, containerd-shim-runc-v2, ctr
#   CNI_BIN_DIR           <repo>/bin/cni-plugins-v1.10.0    bridge, host-local (hack/build-node.sh)
#   CRICTL                <repo>/bin/crictl-v1.37.0/crictl
#   RUNC                  /usr/sbin/runc (Debian, hack/node-deps.sh)
#   NODE_NAME             nsclaim-node
#   NODE_BRIDGE           nsclaim0       the bridge the API server's address is on (APISERVER_BRIDGE)
#   POD_CIDR              10.244.0.0/24  Pod addresses; the bridge holds its first address, which is
#                                        the API server's (APISERVER_ADDRESS) and the node's IP
#   SERVICE_CIDR          10.96.0.0/16   must equal the control plane's
#   CLUSTER_DNS           10.96.0.10     the DNS Service IP written into Pods' resolv.conf
#   PAUSE_IMAGE           localhost/nsclaim/pause:3.10   the sandbox image; containerd must have it
#                                        (hack/images.sh builds and up imports it, there is no pull)
#   KUBELET_PORT 15250, KUBELET_HEALTHZ_PORT 15248, KUBE_PROXY_HEALTHZ_PORT 15256,
#   KUBE_PROXY_METRICS_PORT 15249, SCHEDULER_PORT 15259
#   NODE_TIMEOUT          120 (seconds to wait for readiness in `up`)
#   REGISTRY_PORT         15500  the node's image registry listens on <node IP>:REGISTRY_PORT
#   REGISTRY_MIRRORS      (none) registry hosts (e.g. ghcr.io) whose images containerd pulls from the
#                                node's registry instead, never from the host itself
#
# The registry: hack/tools/imagebuild/registry (go-containerregistry's pkg/registry, built by `up`
# into node/bin), a host process like the others, on the bridge address: plain HTTP for containerd
# (node/containerd/certs.d/<node IP>:<port>/hosts.toml says `server = "http://..."`), and TLS on the
# same port (certificate signed by the cluster CA) for clients with no plain-HTTP switch. Blobs live in
# node/registry and go with the state directory. `push` fills it from hack/images.sh's tarballs.
#
# What this machine's kernel needs (checked here, kernel 6.18, no systemd):
#   - cgroups are v1 (cpu, cpuacct, cpuset, memory, devices, freezer, blkio, pids, name=systemd) plus
#     cgroup2 at /sys/fs/cgroup/unified (hybrid). kubelet 1.35+ refuses v1 unless its configuration
#     says failCgroupV1: false; the driver is cgroupfs (no systemd) in kubelet and in the runc shim
#     (SystemdCgroup = false). Pods live under cgroupRoot /nsclaim-<NODE_NAME> (kubelet wants it to
#     exist: up creates it in every hierarchy, copying cpuset.cpus/mems; down removes the tree).
#   - root here lacks CAP_SYS_RESOURCE: oom_score_adj cannot go below 0, so containerd clamps it
#     (restrict_oom_score_adj, as rootless setups do); kubelet's own -999 fails with a warning.
#   - overlayfs for containerd's snapshotter; no btrfs, devmapper or zfs (built without them).
#   - kubelet sets kernel tunables it expects (vm.overcommit_memory=1, kernel.panic=10,
#     kernel.panic_on_oops=1, ...) unless protectKernelDefaults, which makes it refuse to start on this
#     machine's values; the CNI bridge plugin sets net.ipv4.ip_forward=1 (Pod -> Service -> Pod is
#     routed through the host). up records their values and down writes them back.
#   - br_netfilter's bridge-nf-call-iptables is 1 here (replies of Service traffic between Pods on
#     the same bridge pass conntrack); kube-proxy runs in iptables mode (nf_tables backend of Debian's
#     iptables 1.8.9) with localhostNodePorts off (no route_localnet) and conntrack sysctls left alone;
#     down runs kube-proxy --cleanup.
# Network: Pods get POD_CIDR addresses on NODE_BRIDGE (no uplink; no masquerading). A chain
# NSCLAIM-NODE in FORWARD drops anything routed between the bridge and any other interface, so with
# ip_forward on no packet of a Pod leaves the machine. Host processes reach Pods and Services
# directly (OUTPUT chain); Pods reach the API server at the bridge's address, or through the
# kubernetes Service (kube-apiserver keeps its EndpointSlice when APISERVER_ADDRESS is not 127.0.0.1).
# kube-proxy owns the host's KUBE-* chains: run one node per machine at a time.
#
# Layout of $LOCAL_CLUSTER_DIR/node: containerd/ (root, state, socket), kubelet/ (root-dir), pod-logs/,
# cni/ (net.d, IPAM data), runc/, pki/ (node, kube-proxy, scheduler client certs), *.kubeconfig,
# *.yaml, logs/, pids/, sysctl.saved.
set -euo pipefail

REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

CLUSTER=$(realpath -m "${LOCAL_CLUSTER_DIR:-$REPO_ROOT/tmp/local-cluster}")
STATE=$CLUSTER/node
KUBE_BIN_DIR=$(realpath -m "${KUBE_BIN_DIR:-$REPO_ROOT/bin/k8s/1.37.1-linux-amd64}")
CONTAINERD_BIN_DIR=$(realpath -m "${CONTAINERD_BIN_DIR:-$REPO_ROOT/bin/containerd-v2.4.2}")
CNI_BIN_DIR=$(realpath -m "${CNI_BIN_DIR:-$REPO_ROOT/bin/cni-plugins-v1.10.0}")
CRICTL=$(realpath -m "${CRICTL:-$REPO_ROOT/bin/crictl-v1.37.0/crictl}")
RUNC=${RUNC:-/usr/sbin/runc}
NODE_NAME=${NODE_NAME:-nsclaim-node}
NODE_BRIDGE=${NODE_BRIDGE:-nsclaim0}
POD_CIDR=${POD_CIDR:-10.244.0.0/24}
SERVICE_CIDR=${SERVICE_CIDR:-10.96.0.0/16}
CLUSTER_DNS=${CLUSTER_DNS:-10.96.0.10}
PAUSE_IMAGE=${PAUSE_IMAGE:-localhost/nsclaim/pause:3.10}
KUBELET_PORT=${KUBELET_PORT:-15250}
KUBELET_HEALTHZ_PORT=${KUBELET_HEALTHZ_PORT:-15248}
KUBE_PROXY_HEALTHZ_PORT=${KUBE_PROXY_HEALTHZ_PORT:-15256}
KUBE_PROXY_METRICS_PORT=${KUBE_PROXY_METRICS_PORT:-15249}
SCHEDULER_PORT=${SCHEDULER_PORT:-15259}
NODE_TIMEOUT=${NODE_TIMEOUT:-120}
REGISTRY_PORT=${REGISTRY_PORT:-15500}
REGISTRY_MIRRORS=${REGISTRY_MIRRORS:-}

PKI=$CLUSTER/pki
NPKI=$STATE/pki
LOGS=$STATE/logs
PIDS=$STATE/pids
SOCK=$STATE/containerd/containerd.sock
REGISTRY_BIN=$STATE/bin/registry
KUBECTL=$KUBE_BIN_DIR/kubectl
CGROUP_ROOT=/nsclaim-$NODE_NAME
FWD_CHAIN=NSCLAIM-NODE
# Sysctls that up (the CNI bridge plugin) and kubelet change; saved by up, written back by down.
SYSCTLS=(net/ipv4/ip_forward vm/overcommit_memory vm/panic_on_oom kernel/panic kernel/panic_on_oops
  kernel/keys/root_maxkeys kernel/keys/root_maxbytes)

# Components in start order; down stops them in reverse order.
COMPONENTS=(registry containerd kube-scheduler kube-proxy kubelet)
STARTED=()

log() { echo "local-node: $*" >&2; }
die() { log "error: $*"; exit 1; }
usage() {
  sed -n '/^# Usage/,/^# What this machine/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//' >&2
  exit 2
}

kubectl_admin() {
  KUBECACHEDIR=$CLUSTER/kubecache "$KUBECTL" --kubeconfig "$CLUSTER/kubeconfig" "$@"
}
crictl_() { "$CRICTL" --runtime-endpoint "unix://$SOCK" --image-endpoint "unix://$SOCK" --timeout 20s "$@"; }
ctr_() { "$CONTAINERD_BIN_DIR/ctr" --address "$SOCK" --namespace k8s.io "$@"; }

# ---------------------------------------------------------------------------------------------------
# Processes (same conventions as hack/local-cluster.sh: PID files, own session, command line must
# name this state directory before anything is signalled)
# ---------------------------------------------------------------------------------------------------

# pid_of, alive, ours, running: hack/lib/procs.sh
# shellcheck source=lib/procs.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/procs.sh"
# kill_pid PID WHAT: SIGTERM, up to 15 s, then SIGKILL.
kill_pid() {
  local pid=$1 what=$2 i
  log "stopping $what (pid $pid)"
  kill -TERM "$pid" 2>/dev/null || true
  for ((i = 0; i < 150; i++)); do
    alive "$pid" || break
    sleep 0.1
  done
  if alive "$pid"; then
    log "$what (pid $pid) did not exit within 15s; sending SIGKILL"
    kill -KILL "$pid" 2>/dev/null || true
    for ((i = 0; i < 50; i++)); do
      alive "$pid" || break
      sleep 0.1
    done
  fi
  wait "$pid" 2>/dev/null || true
}
stop() {
  local name=$1 pid
  pid=$(pid_of "$name")
  if [[ -n $pid ]]; then
    if ! alive "$pid"; then
      log "$name (pid $pid) is not running"
    elif ! ours "$name" "$pid"; then
      log "warning: pid $pid no longer belongs to $name of $STATE; not killing it"
    else
      kill_pid "$pid" "$name"
    fi
  fi
  rm -f "$PIDS/$name.pid"
}
start() {
  local name=$1 bin=$2
  shift 2
  if [[ -f $LOGS/$name.log ]]; then mv -f "$LOGS/$name.log" "$LOGS/$name.log.prev"; fi
  echo "# $(date -u +%Y-%m-%dT%H:%M:%SZ) $bin $*" >"$LOGS/$name.log"
  PATH=$CONTAINERD_BIN_DIR:$PATH setsid "$bin" "$@" </dev/null >>"$LOGS/$name.log" 2>&1 9>&- &
  local pid=$!
  STARTED+=("$name")
  echo "$pid" >"$PIDS/$name.pid"
  # Until the background child has exec'd the binary, /proc/PID/cmdline is this shell's, and `running`
  # would call the component dead (and the EXIT trap stop it: "etcd stopped gracefully within a
  # second of its start"). Wait for the exec, briefly.
  local i
  for ((i = 0; i < 100; i++)); do
    if ours "$name" "$pid" || ! alive "$pid"; then break; fi
    sleep 0.05
  done
  log "started $name (pid $pid, log $LOGS/$name.log)"
}

# ---------------------------------------------------------------------------------------------------
# Configuration
# ---------------------------------------------------------------------------------------------------

sign_client() { # NAME SUBJECT
  local name=$1 subj=$2
  [[ -f $NPKI/$name.crt ]] && return 0
  openssl genrsa -out "$NPKI/$name.key" 2048 2>/dev/null
  openssl req -new -key "$NPKI/$name.key" -subj "$subj" -out "$NPKI/$name.csr" 2>/dev/null
  printf '%s\n' "basicConstraints=critical,CA:FALSE" "keyUsage=critical,digitalSignature,keyEncipherment" \
    "extendedKeyUsage=clientAuth" >"$NPKI/$name.ext"
  openssl x509 -req -in "$NPKI/$name.csr" -CA "$PKI/ca.crt" -CAkey "$PKI/ca.key" \
    -set_serial "0x$(openssl rand -hex 16)" -days 3650 -sha256 -extfile "$NPKI/$name.ext" \
    -out "$NPKI/$name.crt" 2>/dev/null
  rm -f "$NPKI/$name.csr" "$NPKI/$name.ext"
}

sign_server() { # NAME CN IP...
  local name=$1 cn=$2 san="" ip
  shift 2
  [[ -f $NPKI/$name.crt ]] && return 0
  for ip in "$@"; do san+="${san:+,}IP:$ip"; done
  openssl genrsa -out "$NPKI/$name.key" 2048 2>/dev/null
  openssl req -new -key "$NPKI/$name.key" -subj "/CN=$cn" -out "$NPKI/$name.csr" 2>/dev/null
  printf '%s\n' "basicConstraints=critical,CA:FALSE" "keyUsage=critical,digitalSignature,keyEncipherment" \
    "extendedKeyUsage=serverAuth" "subjectAltName=$san" >"$NPKI/$name.ext"
  openssl x509 -req -in "$NPKI/$name.csr" -CA "$PKI/ca.crt" -CAkey "$PKI/ca.key" \
    -set_serial "0x$(openssl rand -hex 16)" -days 3650 -sha256 -extfile "$NPKI/$name.ext" \
    -out "$NPKI/$name.crt" 2>/dev/null
  rm -f "$NPKI/$name.csr" "$NPKI/$name.ext"
}

write_kubeconfig() { # FILE USER NAME
  local file=$1 user=$2 name=$3
  (
    umask 077
    cat >"$file.tmp" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: local
  cluster:
    server: $SERVER_URL
    certificate-authority-data: $(base64 -w0 <"$PKI/ca.crt")
users:
- name: $user
  user:
    client-certificate-data: $(base64 -w0 <"$NPKI/$name.crt")
    client-key-data: $(base64 -w0 <"$NPKI/$name.key")
contexts:
- name: $user@local
  context:
    cluster: local
    user: $user
current-context: $user@local
EOF
  )
  mv "$file.tmp" "$file"
}

# cluster_server: the API server URL of the control plane's admin kubeconfig.
cluster_server() {
  awk '$1=="server:"{print $2; exit}' "$CLUSTER/kubeconfig"
}

write_configs() {
  mkdir -p "$NPKI" "$STATE/containerd" "$STATE/kubelet" "$STATE/pod-logs" "$STATE/cni/net.d" \
    "$STATE/cni/ipam" "$STATE/runc" "$STATE/volume-plugins"
  sign_client kubelet "/O=system:nodes/CN=system:node:$NODE_NAME"
  sign_client kube-proxy "/CN=system:kube-proxy"
  sign_client kube-scheduler "/CN=system:kube-scheduler"
  sign_server registry "$NODE_IP" "$NODE_IP" 127.0.0.1
  write_kubeconfig "$STATE/kubelet.kubeconfig" "system:node:$NODE_NAME" kubelet
  write_kubeconfig "$STATE/kube-proxy.kubeconfig" system:kube-proxy kube-proxy
  write_kubeconfig "$STATE/kube-scheduler.kubeconfig" system:kube-scheduler kube-scheduler

  cat >"$STATE/containerd.toml" <<EOF
version = 3
root = "$STATE/containerd/root"
state = "$STATE/containerd/state"
# No NRI socket under /var/run, no /opt/containerd, no snapshotters this kernel lacks.
disabled_plugins = ["io.containerd.nri.v1.nri", "io.containerd.internal.v1.opt",
  "io.containerd.snapshotter.v1.blockfile", "io.containerd.snapshotter.v1.erofs"]

[grpc]
  address = "$SOCK"

[ttrpc]
  address = "$SOCK.ttrpc"

[plugins.'io.containerd.cri.v1.images']
  snapshotter = "overlayfs"
  [plugins.'io.containerd.cri.v1.images'.registry]
    # hosts.toml per registry host: the node's registry over plain HTTP, and REGISTRY_MIRRORS.
    config_path = "$STATE/containerd/certs.d"
  [plugins.'io.containerd.cri.v1.images'.pinned_images]
    sandbox = "$PAUSE_IMAGE"

[plugins.'io.containerd.cri.v1.runtime']
  enable_selinux = false
  disable_apparmor = true
  # Root on this machine lacks CAP_SYS_RESOURCE (not in the bounding set), so no process may lower
  # an oom_score_adj below 0: runc failed "failed to update /proc/self/oom_score_adj: Permission
  # denied" for every sandbox (kubelet asks -998 for pause). Clamp to containerd's own value (0).
  restrict_oom_score_adj = true
  cdi_spec_dirs = []
  [plugins.'io.containerd.cri.v1.runtime'.cni]
    bin_dirs = ["$CNI_BIN_DIR"]
    conf_dir = "$STATE/cni/net.d"
  [plugins.'io.containerd.cri.v1.runtime'.containerd]
    default_runtime_name = "runc"
    [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
        BinaryName = "$RUNC"
        Root = "$STATE/runc"
        SystemdCgroup = false

[plugins.'io.containerd.grpc.v1.cri']
  disable_tcp_service = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
EOF

  # containerd pulls from the node's registry over plain HTTP; hosts in REGISTRY_MIRRORS resolve there
  # too (server replaced, so nothing is ever asked of the real host).
  rm -rf "$STATE/containerd/certs.d"
  local host
  for host in "$NODE_IP:$REGISTRY_PORT" $REGISTRY_MIRRORS; do
    mkdir -p "$STATE/containerd/certs.d/$host"
    printf 'server = "http://%s"\n\n[host."http://%s"]\n  capabilities = ["pull", "resolve"]\n' \
      "$NODE_IP:$REGISTRY_PORT" "$NODE_IP:$REGISTRY_PORT" >"$STATE/containerd/certs.d/$host/hosts.toml"
  done

  cat >"$STATE/cni/net.d/10-nsclaim.conflist" <<EOF
{
  "cniVersion": "1.0.0",
  "name": "nsclaim",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "$NODE_BRIDGE",
      "isGateway": true,
      "ipMasq": false,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "ranges": [[{"subnet": "$POD_CIDR", "gateway": "$NODE_IP"}]],
        "routes": [{"dst": "0.0.0.0/0"}],
        "dataDir": "$STATE/cni/ipam"
      }
    }
  ]
}
EOF

  # Pods with dnsPolicy Default get this; ClusterFirst Pods get CLUSTER_DNS. No upstream resolver:
  # nothing a Pod resolves leaves the machine.
  printf '# local node %s: no upstream resolver\n' "$NODE_NAME" >"$STATE/resolv.conf"

  cat >"$STATE/kubelet.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
# cgroup v1 (with a v2 mount at /sys/fs/cgroup/unified): opt in, cgroupfs, own root.
failCgroupV1: false
cgroupDriver: cgroupfs
cgroupRoot: $CGROUP_ROOT
cgroupsPerQOS: true
enforceNodeAllocatable: ["pods"]
containerRuntimeEndpoint: unix://$SOCK
imageServiceEndpoint: unix://$SOCK
address: $NODE_IP
port: $KUBELET_PORT
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: $KUBELET_HEALTHZ_PORT
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: $PKI/ca.crt}
authorization:
  mode: Webhook
clusterDomain: cluster.local
clusterDNS: [$CLUSTER_DNS]
resolvConf: $STATE/resolv.conf
podLogsDir: $STATE/pod-logs
volumePluginDir: $STATE/volume-plugins
failSwapOn: false
protectKernelDefaults: false
maxPods: 50
serializeImagePulls: false
# Images are imported or pulled from the node's registry: never collect them; evict only when the disk is really full.
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard:
  memory.available: 100Mi
  nodefs.available: 2%
  imagefs.available: 2%
  nodefs.inodesFree: 2%
EOF

  cat >"$STATE/kube-proxy.yaml" <<EOF
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection:
  kubeconfig: $STATE/kube-proxy.kubeconfig
hostnameOverride: $NODE_NAME
bindAddress: $NODE_IP
healthzBindAddress: 127.0.0.1:$KUBE_PROXY_HEALTHZ_PORT
metricsBindAddress: 127.0.0.1:$KUBE_PROXY_METRICS_PORT
clusterCIDR: $POD_CIDR
mode: iptables
iptables:
  localhostNodePorts: false
  masqueradeAll: false
nodePortAddresses: ["$POD_CIDR"]
# 0: leave the machine's conntrack sysctls as they are.
conntrack:
  maxPerCore: 0
  min: 0
  tcpEstablishedTimeout: 0s
  tcpCloseWaitTimeout: 0s
EOF
}

# ---------------------------------------------------------------------------------------------------
# Host state: cgroups, sysctls, FORWARD guard
# ---------------------------------------------------------------------------------------------------

cgroup_hierarchies() {
  local d
  for d in /sys/fs/cgroup/*; do
    if [[ -d $d && ! -L $d && -f $d/cgroup.procs ]]; then echo "$d"; fi
  done
}

ensure_cgroups() {
  local h
  while read -r h; do
    mkdir -p "$h$CGROUP_ROOT"
    if [[ -f $h/cpuset.cpus ]]; then
      [[ -n $(<"$h$CGROUP_ROOT/cpuset.cpus") ]] || cat "$h/cpuset.cpus" >"$h$CGROUP_ROOT/cpuset.cpus"
      [[ -n $(<"$h$CGROUP_ROOT/cpuset.mems") ]] || cat "$h/cpuset.mems" >"$h$CGROUP_ROOT/cpuset.mems"
    fi
  done < <(cgroup_hierarchies)
}

# remove_cgroups: kill what is left in the node's cgroups, then rmdir them depth-first.
remove_cgroups() {
  local h d pid left=0
  while read -r h; do
    [[ -d $h$CGROUP_ROOT ]] || continue
    while read -r d; do
      while read -r pid; do
        [[ -n $pid ]] && kill -KILL "$pid" 2>/dev/null && left=$((left + 1))
      done <"$d/cgroup.procs"
    done < <(find "$h$CGROUP_ROOT" -type d)
  done < <(cgroup_hierarchies)
  if ((left > 0)); then
    log "killed $left process(es) left in cgroup $CGROUP_ROOT"
    sleep 1
  fi
  while read -r h; do
    [[ -d $h$CGROUP_ROOT ]] || continue
    find "$h$CGROUP_ROOT" -depth -type d -exec rmdir {} \; 2>/dev/null ||
      log "warning: could not remove every cgroup under $h$CGROUP_ROOT"
  done < <(cgroup_hierarchies)
}

save_sysctls() {
  [[ -s $STATE/sysctl.saved ]] && return 0
  local k
  for k in "${SYSCTLS[@]}"; do
    echo "$k $(<"/proc/sys/$k")"
  done >"$STATE/sysctl.saved.tmp"
  mv "$STATE/sysctl.saved.tmp" "$STATE/sysctl.saved"
}

restore_sysctls() {
  [[ -s $STATE/sysctl.saved ]] || return 0
  local k v
  while read -r k v; do
    if [[ $(<"/proc/sys/$k") != "$v" ]]; then
      log "restoring $k=$v"
      echo "$v" >"/proc/sys/$k" || log "warning: could not restore $k"
    fi
  done <"$STATE/sysctl.saved"
  rm -f "$STATE/sysctl.saved"
}

ensure_forward_guard() {
  iptables -w -N "$FWD_CHAIN" 2>/dev/null || iptables -w -F "$FWD_CHAIN"
  iptables -w -A "$FWD_CHAIN" -i "$NODE_BRIDGE" ! -o "$NODE_BRIDGE" -j DROP
  iptables -w -A "$FWD_CHAIN" ! -i "$NODE_BRIDGE" -o "$NODE_BRIDGE" -j DROP
  iptables -w -C FORWARD -j "$FWD_CHAIN" 2>/dev/null || iptables -w -I FORWARD 1 -j "$FWD_CHAIN"
}

remove_forward_guard() {
  while iptables -w -D FORWARD -j "$FWD_CHAIN" 2>/dev/null; do :; done
  iptables -w -F "$FWD_CHAIN" 2>/dev/null || true
  iptables -w -X "$FWD_CHAIN" 2>/dev/null || true
}

# ---------------------------------------------------------------------------------------------------
# Health
# ---------------------------------------------------------------------------------------------------

registry_ready() { curl -fsS --max-time 2 -o /dev/null "http://$(node_ip):$REGISTRY_PORT/v2/" 2>/dev/null; }
containerd_ready() { [[ -S $SOCK ]] && crictl_ info >/dev/null 2>&1; }
kubelet_healthy() { [[ $(curl -fsS --max-time 2 "http://127.0.0.1:$KUBELET_HEALTHZ_PORT/healthz" 2>/dev/null) == ok ]]; }
kube_proxy_healthy() { curl -fsS --max-time 2 -o /dev/null "http://127.0.0.1:$KUBE_PROXY_HEALTHZ_PORT/healthz" 2>/dev/null; }
scheduler_healthy() { [[ $(curl -fsSk --max-time 2 "https://127.0.0.1:$SCHEDULER_PORT/healthz" 2>/dev/null) == ok ]]; }
node_ready() {
  [[ $(kubectl_admin get node "$NODE_NAME" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null) == True ]]
}
healthy() {
  case $1 in
  registry) registry_ready ;;
  containerd) containerd_ready ;;
  kubelet) kubelet_healthy ;;
  kube-proxy) kube_proxy_healthy ;;
  kube-scheduler) scheduler_healthy ;;
  esac
}

fail_component() {
  local name=$1 msg=$2
  log "error: $msg"
  if [[ -f $LOGS/$name.log ]]; then
    log "last lines of $LOGS/$name.log:"
    tail -n 25 "$LOGS/$name.log" | sed 's/^/    /' >&2
  fi
  exit 1
}

wait_for() { # NAME WHAT DEADLINE CHECK...
  local name=$1 what=$2 deadline=$3 c
  shift 3
  while ! "$@"; do
    for c in "${STARTED[@]}"; do
      running "$c" || fail_component "$c" "$c exited while waiting for $what"
    done
    (($(date +%s) < deadline)) || fail_component "$name" "timed out after ${NODE_TIMEOUT}s waiting for $what"
    sleep 0.25
  done
}

# ---------------------------------------------------------------------------------------------------
# Subcommands
# ---------------------------------------------------------------------------------------------------

lock() {
  mkdir -p "$STATE"
  exec 9>"$STATE/.lock"
  flock -w "$NODE_TIMEOUT" 9 || die "another local-node.sh holds $STATE/.lock"
}

on_exit() {
  local rc=$?
  if ((rc != 0 && ${#STARTED[@]} > 0)); then
    log "start failed; cleaning up what this run started (logs stay in $LOGS)"
    teardown
  fi
  exit "$rc"
}

all_running() {
  local c
  for c in "${COMPONENTS[@]}"; do running "$c" || return 1; done
}

import_images() {
  local f
  for f in "$@"; do
    log "importing $f into containerd (k8s.io)"
    ctr_ images import --no-unpack=false --snapshotter overlayfs "$f" >/dev/null
  done
}

cmd_up() {
  local c deadline t0
  ((EUID == 0)) || die "the node needs root (cgroups, network namespaces, iptables, mounts)"
  for c in kubelet kube-proxy kube-scheduler kubectl; do
    [[ -x $KUBE_BIN_DIR/$c ]] || die "$KUBE_BIN_DIR/$c not found; build it with hack/build-node.sh"
  done
  for c in "$CONTAINERD_BIN_DIR/containerd" "$CONTAINERD_BIN_DIR/containerd-shim-runc-v2" \
    "$CONTAINERD_BIN_DIR/ctr" "$CNI_BIN_DIR/bridge" "$CNI_BIN_DIR/host-local" "$CRICTL"; do
    [[ -x $c ]] || die "$c not found; build it with hack/build-node.sh"
  done
  for c in "$RUNC" iptables conntrack; do
    command -v "$c" >/dev/null || die "$c not found; install it with hack/node-deps.sh"
  done
  [[ -f $CLUSTER/kubeconfig && -f $PKI/ca.key ]] || die "no control plane in $CLUSTER; run hack/local-cluster.sh up first"
  SERVER_URL=$(cluster_server)
  NODE_IP=${SERVER_URL#https://}
  NODE_IP=${NODE_IP%:*}
  [[ $NODE_IP != 127.0.0.1 ]] ||
    die "the API server listens on 127.0.0.1, which Pods cannot reach; start the control plane with APISERVER_ADDRESS=<first address of POD_CIDR> APISERVER_BRIDGE=$NODE_BRIDGE"
  ip -o -4 addr show dev "$NODE_BRIDGE" 2>/dev/null | grep -q " $NODE_IP/" ||
    die "bridge $NODE_BRIDGE does not hold the API server's address $NODE_IP (APISERVER_BRIDGE of hack/local-cluster.sh)"
  [[ $PAUSE_IMAGE_TAR == "" || -f $PAUSE_IMAGE_TAR ]] || die "PAUSE_IMAGE_TAR=$PAUSE_IMAGE_TAR not found"
  lock
  t0=$(date +%s%3N)
  if all_running && node_ready; then
    log "node $NODE_NAME of $CLUSTER is already running and Ready"
    return 0
  fi
  for c in "${COMPONENTS[@]}"; do
    if running "$c"; then
      log "node of $CLUSTER is only partly running; cleaning up and starting it again"
      teardown
      break
    fi
  done
  rm -f "$PIDS"/*.pid 2>/dev/null || true
  mkdir -p "$LOGS" "$PIDS" "$STATE/bin"
  CGO_ENABLED=0 go -C "$REPO_ROOT/hack/tools/imagebuild" build -o "$REGISTRY_BIN" ./registry ||
    die "could not build the registry (hack/tools/imagebuild/registry)"
  trap on_exit EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
  STARTED=(setup)
  save_sysctls
  write_configs
  ensure_cgroups
  ensure_forward_guard
  deadline=$(($(date +%s) + NODE_TIMEOUT))

  STARTED=()
  start registry "$REGISTRY_BIN" serve -addr "$NODE_IP:$REGISTRY_PORT" -dir "$STATE/registry" \
    -tls-cert "$NPKI/registry.crt" -tls-key "$NPKI/registry.key"
  wait_for registry "the registry on $NODE_IP:$REGISTRY_PORT" "$deadline" registry_ready
  start containerd "$CONTAINERD_BIN_DIR/containerd" --config "$STATE/containerd.toml" --log-level warn
  wait_for containerd "containerd's CRI on $SOCK" "$deadline" containerd_ready
  if [[ -n $PAUSE_IMAGE_TAR ]]; then import_images "$PAUSE_IMAGE_TAR"; fi
  # The check's output is read whole, never piped into `grep -q` (under pipefail, grep leaving early
  # can fail ctr with SIGPIPE), and read again for a few seconds: once, on a cold run, the image just
  # imported was not listed at the first look.
  local listed="" _
  for _ in {1..25}; do
    listed=$(ctr_ images check "name==$PAUSE_IMAGE" 2>/dev/null || true)
    [[ $listed == *"$PAUSE_IMAGE"* ]] && break
    sleep 0.2
  done
  [[ $listed == *"$PAUSE_IMAGE"* ]] ||
    die "containerd has no sandbox image $PAUSE_IMAGE (PAUSE_IMAGE_TAR: hack/images.sh builds it)"

  start kube-scheduler "$KUBE_BIN_DIR/kube-scheduler" \
    --kubeconfig="$STATE/kube-scheduler.kubeconfig" \
    --authentication-kubeconfig="$STATE/kube-scheduler.kubeconfig" \
    --authorization-kubeconfig="$STATE/kube-scheduler.kubeconfig" \
    --authorization-always-allow-paths=/healthz,/readyz,/livez \
    --bind-address=127.0.0.1 --secure-port="$SCHEDULER_PORT" \
    --cert-dir="$STATE/scheduler-certs" --leader-elect=false --profiling=false
  start kube-proxy "$KUBE_BIN_DIR/kube-proxy" --config="$STATE/kube-proxy.yaml"
  start kubelet "$KUBE_BIN_DIR/kubelet" \
    --config="$STATE/kubelet.yaml" \
    --kubeconfig="$STATE/kubelet.kubeconfig" \
    --root-dir="$STATE/kubelet" \
    --cert-dir="$STATE/kubelet/pki" \
    --hostname-override="$NODE_NAME" \
    --node-ip="$NODE_IP"
  wait_for kube-scheduler "kube-scheduler /healthz" "$deadline" scheduler_healthy
  wait_for kube-proxy "kube-proxy /healthz" "$deadline" kube_proxy_healthy
  wait_for kubelet "kubelet /healthz" "$deadline" kubelet_healthy
  wait_for kubelet "node $NODE_NAME Ready" "$deadline" node_ready
  STARTED=()
  trap - EXIT INT TERM
  t0=$(($(date +%s%3N) - t0))
  log "node $NODE_NAME Ready in $((t0 / 1000)).$((t0 % 1000 / 100))s (API server $SERVER_URL, Pods on $NODE_BRIDGE $POD_CIDR)"
}

# shims: PIDs of containerd-shim-runc-v2 processes serving this node's containerd.
shims() {
  local p args
  for p in /proc/[0-9]*; do
    [[ -r $p/cmdline ]] || continue
    args=$(tr '\0' ' ' <"$p/cmdline" 2>/dev/null) || continue
    [[ $args == *containerd-shim-runc-v2* && $args == *"$SOCK"* ]] && echo "${p#/proc/}"
  done
}

# teardown: everything down does, in an order that leaves nothing behind.
teardown() {
  local pid ns m
  # 1. kubelet first, so that nothing is restarted; then every Pod sandbox through CRI, which runs
  #    CNI DEL (veth, IPAM) and removes the sandbox's network namespace.
  stop kubelet
  if running containerd && containerd_ready; then
    for pid in $(crictl_ pods -q 2>/dev/null); do
      crictl_ inspectp "$pid" 2>/dev/null |
        jq -r '.info.runtimeSpec.linux.namespaces[]? | select(.type=="network") | .path // empty' |
        sed -n 's|^/var/run/netns/||p; s|^/run/netns/||p' >>"$STATE/netns" || true
      crictl_ stopp "$pid" >/dev/null 2>&1 || log "warning: could not stop sandbox $pid"
      crictl_ rmp -f "$pid" >/dev/null 2>&1 || log "warning: could not remove sandbox $pid"
    done
  fi
  stop kube-proxy
  stop kube-scheduler
  stop containerd
  stop registry
  # 2. Shims (and their containers) outlive containerd by design.
  for pid in $(shims); do kill_pid "$pid" "containerd-shim-runc-v2"; done
  remove_cgroups
  # 3. Mounts under the state directory (rootfs overlays, volumes, shm), deepest first, and network
  #    namespaces of this node's sandboxes that CRI could not remove.
  while read -r m; do
    umount -l "$m" 2>/dev/null || log "warning: could not unmount $m"
  done < <(awk -v s="$STATE/" 'index($5, s)==1{print $5}' /proc/self/mountinfo | sort -r)
  if [[ -s $STATE/netns ]]; then
    while read -r ns; do
      [[ -e /run/netns/$ns ]] && ip netns delete "$ns" 2>/dev/null && log "deleted network namespace $ns"
    done <"$STATE/netns"
    rm -f "$STATE/netns"
  fi
  # 4. iptables: kube-proxy's chains, the FORWARD guard; sysctls back.
  if [[ -x $KUBE_BIN_DIR/kube-proxy ]]; then
    "$KUBE_BIN_DIR/kube-proxy" --cleanup >"$LOGS/kube-proxy-cleanup.log" 2>&1 ||
      log "warning: kube-proxy --cleanup failed (see $LOGS/kube-proxy-cleanup.log)"
  fi
  remove_kubelet_chains
  remove_forward_guard
  restore_sysctls
  # 5. What kubelet, containerd and libcni create outside the state directory whatever their
  #    configuration says: kubelet's device plugin socket, the shims' socket directory, libcni's
  #    result cache. Only this node's entries go; directories only if empty.
  rm -f /var/lib/kubelet/device-plugins/kubelet.sock /var/lib/cni/results/nsclaim-*
  rmdir /var/lib/kubelet/device-plugins /var/lib/kubelet /var/lib/cni/results /var/lib/cni \
    /run/containerd/s /run/containerd 2>/dev/null || true
  rm -f "$PIDS"/*.pid
}

# remove_kubelet_chains: kubelet's own iptables chains (KUBE-FIREWALL, which drops packets from
# outside to 127.0.0.0/8, and the KUBE-KUBELET-CANARY and KUBE-IPTABLES-HINT markers) in IPv4 and
# IPv6, which kube-proxy --cleanup leaves. One node per machine: no other kubelet owns them.
remove_kubelet_chains() {
  local cmd table chain
  for cmd in iptables ip6tables; do
    command -v "$cmd" >/dev/null || continue
    for table in filter nat mangle; do
      while "$cmd" -w -t "$table" -D INPUT -j KUBE-FIREWALL 2>/dev/null; do :; done
      while "$cmd" -w -t "$table" -D OUTPUT -j KUBE-FIREWALL 2>/dev/null; do :; done
      for chain in KUBE-FIREWALL KUBE-KUBELET-CANARY KUBE-IPTABLES-HINT; do
        "$cmd" -w -t "$table" -F "$chain" 2>/dev/null && "$cmd" -w -t "$table" -X "$chain" 2>/dev/null || true
      done
    done
  done
}

cmd_down() {
  ((EUID == 0)) || die "down needs root"
  if [[ ! -d $STATE ]]; then
    log "nothing to stop (no $STATE)"
    return 0
  fi
  lock
  teardown
  log "node $NODE_NAME stopped"
}

cmd_status() {
  local c pid ok=true st
  for c in "${COMPONENTS[@]}"; do
    pid=$(pid_of "$c")
    if [[ -z $pid ]]; then
      st=stopped
      ok=false
    elif ! running "$c"; then
      st="not running (stale pid $pid)"
      ok=false
    elif healthy "$c"; then
      st="running, healthy (pid $pid)"
    else
      st="running, NOT healthy (pid $pid)"
      ok=false
    fi
    printf '%-16s %s\n' "$c" "$st"
  done
  if node_ready; then printf '%-16s %s\n' "node $NODE_NAME" Ready; else
    printf '%-16s %s\n' "node $NODE_NAME" "not Ready"
    ok=false
  fi
  $ok
}

cmd_env() {
  printf 'export CONTAINER_RUNTIME_ENDPOINT=%q\n' "unix://$SOCK"
  printf 'export IMAGE_SERVICE_ENDPOINT=%q\n' "unix://$SOCK"
  printf 'export CONTAINERD_ADDRESS=%q\n' "$SOCK"
  printf 'export CONTAINERD_NAMESPACE=k8s.io\n'
  printf 'export REGISTRY=%q\n' "$(node_ip):$REGISTRY_PORT"
  # shellcheck disable=SC2016 # $PATH is expanded by the shell that evals this output
  printf 'export PATH=%q:%q:"$PATH"\n' "$(dirname "$CRICTL")" "$CONTAINERD_BIN_DIR"
}


# cmd_dns: CoreDNS as a Pod (Deployment kube-system/coredns, Service kube-dns at CLUSTER_DNS) from the
# image COREDNS_IMAGE_TAR (hack/images.sh coredns), imported here; answers cluster.local only (no
# forward: nothing resolved leaves the machine). Waits until it is Available and answers.
cmd_dns() {
  local tarball=${COREDNS_IMAGE_TAR:?set COREDNS_IMAGE_TAR (hack/images.sh DIR coredns)} image
  running containerd || die "containerd of $STATE is not running"
  image=$(tar -xOf "$tarball" index.json | jq -r '.manifests[0].annotations["io.containerd.image.name"]')
  import_images "$tarball"
  kubectl_admin apply --server-side -f - >/dev/null <<EOF
apiVersion: v1
kind: ServiceAccount
metadata: {name: coredns, namespace: kube-system}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: "system:coredns"}
rules:
- apiGroups: [""]
  resources: [endpoints, services, pods, namespaces]
  verbs: [list, watch]
- apiGroups: [discovery.k8s.io]
  resources: [endpointslices]
  verbs: [list, watch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: "system:coredns"}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: "system:coredns"}
subjects: [{kind: ServiceAccount, name: coredns, namespace: kube-system}]
---
apiVersion: v1
kind: ConfigMap
metadata: {name: coredns, namespace: kube-system}
data:
  Corefile: |
    .:53 {
        errors
        health :8080
        ready :8181
        kubernetes cluster.local in-addr.arpa ip6.arpa {
            fallthrough in-addr.arpa ip6.arpa
        }
        cache 30
        loadbalance
    }
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: coredns, namespace: kube-system, labels: {k8s-app: kube-dns}}
spec:
  replicas: 1
  selector: {matchLabels: {k8s-app: kube-dns}}
  template:
    metadata: {labels: {k8s-app: kube-dns}}
    spec:
      serviceAccountName: coredns
      priorityClassName: system-cluster-critical
      dnsPolicy: Default
      securityContext: {runAsNonRoot: true, runAsUser: 65532, seccompProfile: {type: RuntimeDefault}}
      containers:
      - name: coredns
        image: $image
        imagePullPolicy: Never
        args: [-conf, /etc/coredns/Corefile]
        ports:
        - {name: dns, containerPort: 53, protocol: UDP}
        - {name: dns-tcp, containerPort: 53, protocol: TCP}
        resources: {requests: {cpu: 10m, memory: 32Mi}, limits: {memory: 128Mi}}
        securityContext: {allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: {drop: [ALL]}}
        livenessProbe: {httpGet: {path: /health, port: 8080}, periodSeconds: 10}
        readinessProbe: {httpGet: {path: /ready, port: 8181}, periodSeconds: 2}
        volumeMounts: [{name: config, mountPath: /etc/coredns, readOnly: true}]
      volumes: [{name: config, configMap: {name: coredns}}]
---
apiVersion: v1
kind: Service
metadata: {name: kube-dns, namespace: kube-system, labels: {k8s-app: kube-dns}}
spec:
  clusterIP: $CLUSTER_DNS
  selector: {k8s-app: kube-dns}
  ports:
  - {name: dns, port: 53, protocol: UDP}
  - {name: dns-tcp, port: 53, protocol: TCP}
EOF
  kubectl_admin -n kube-system wait --for=condition=Available deployment/coredns --timeout="${NODE_TIMEOUT}s" >/dev/null ||
    die "CoreDNS did not become Available"
  log "CoreDNS Available at $CLUSTER_DNS (image $image)"
}

# cmd_rss: resident memory of the node's processes (MiB): containerd, kubelet, kube-proxy,
# kube-scheduler, the runc shims together, and CoreDNS's process if it runs.
cmd_rss() {
  local c pid sum=0 n=0
  rss_of() { awk '$1=="VmRSS:"{printf "%d", $2/1024}' "/proc/$1/status" 2>/dev/null; }
  for c in "${COMPONENTS[@]}"; do
    if running "$c"; then echo "$c=$(rss_of "$(pid_of "$c")")MiB"; fi
  done
  local r
  for pid in $(shims); do
    r=$(rss_of "$pid")
    [[ -n $r ]] || continue
    sum=$((sum + r)) n=$((n + 1))
  done
  echo "shims($n)=${sum}MiB"
  if running containerd; then
    for c in $(crictl_ ps -q --name coredns 2>/dev/null); do
      pid=$(crictl_ inspect "$c" 2>/dev/null | jq -r '.info.pid // empty')
      [[ -n $pid ]] && echo "coredns=$(rss_of "$pid")MiB"
    done
  fi
}

# node_ip: the node's IP, the host part of the API server's URL (the bridge address).
node_ip() {
  local ip
  ip=$(cluster_server)
  ip=${ip#https://}
  echo "${ip%:*}"
}

# cmd_push TARBALL NAME: push into the node's registry; prints the reference Pods pull.
cmd_push() {
  local tarball=$1 name=$2 ref
  running registry || die "the registry of $STATE is not running"
  ref=$(node_ip):$REGISTRY_PORT/$name
  "$REGISTRY_BIN" push "$tarball" "$ref" >&2
  echo "$ref"
}

PAUSE_IMAGE_TAR=${PAUSE_IMAGE_TAR:-}

main() {
  (($# >= 1)) || usage
  local cmd=$1
  shift
  case $cmd in
  up) (($# == 0)) || usage; cmd_up ;;
  down) (($# == 0)) || usage; cmd_down ;;
  status) (($# == 0)) || usage; cmd_status ;;
  import) (($# >= 1)) || usage; running containerd || die "containerd of $STATE is not running"; import_images "$@" ;;
  push) (($# == 2)) || usage; cmd_push "$@" ;;
  env) (($# == 0)) || usage; cmd_env ;;
  dns) (($# == 0)) || usage; cmd_dns ;;
  rss) (($# == 0)) || usage; cmd_rss ;;
  *) usage ;;
  esac
}

main "$@"
