#!/usr/bin/env bash
# Runs a real local Kubernetes control plane (etcd + kube-apiserver + kube-controller-manager) as
# plain processes on 127.0.0.1, for development and for tests that need more than envtest offers
# (garbage collection, namespace finalisation, token controller). There is no scheduler and no
# kubelet: Pods stay Pending.
#
# Usage: hack/local-cluster.sh SUBCOMMAND
#   up                       start the cluster (idempotent; reuses PKI and etcd data of a previous run)
#   down                     stop the processes recorded under $STATE/pids (exit 0 if none run)
#   status                   print each component's state; exit 0 only if all three are healthy
#   reset                    down, then delete the state directory
#   env                      print export lines for eval: eval "$(hack/local-cluster.sh env)"
#   sa-kubeconfig NS SA [DURATION]
#                            print a kubeconfig for ServiceAccount NS/SA (TokenRequest, default 24h)
#
# Configuration (environment variables, with defaults):
#   LOCAL_CLUSTER_DIR        <repo>/tmp/local-cluster   state: pki, etcd data, logs, pids, kubeconfigs
#   KUBE_BIN_DIR             <repo>/bin/k8s/1.37.1-linux-amd64 (built by hack/build-control-plane.sh)
#   ETCD_CLIENT_PORT         22379
#   ETCD_PEER_PORT           22380
#   APISERVER_PORT           26443
#   CONTROLLER_MANAGER_PORT  20257
#   SERVICE_CIDR             10.96.0.0/16 (IPv4 only)
#   APISERVER_ADDRESS        127.0.0.1   the address kube-apiserver binds to and advertises (the
#                            kubernetes Service's endpoint), written into every kubeconfig and into the
#                            serving certificate. Pods of a local node (hack/local-node.sh) cannot reach
#                            127.0.0.1 of the host: give them an address of the node's bridge, e.g.
#                            APISERVER_ADDRESS=10.244.0.1 APISERVER_BRIDGE=nsclaim0.
#   APISERVER_BRIDGE         (empty)     with APISERVER_ADDRESS: a Linux bridge that `up` creates, with
#                            APISERVER_ADDRESS/APISERVER_BRIDGE_PREFIX (default 24), if it does not
#                            exist yet, and that `down` deletes again (only if `up` created it). The
#                            node's CNI attaches Pods to it; no uplink is ever added, so nothing sent on
#                            it leaves the machine.
#   LOCAL_CLUSTER_TIMEOUT    120 (seconds to wait for readiness in `up`)
#   Every fixed port of the project's suites is below 32768: a port in Linux's ephemeral range
#   (32768-60999) can be held by the local end of any outgoing connection on the machine (another
#   cluster's kube-apiserver -> etcd, say), and a listener there then fails "address already in use".
#   ETCD_EXTRA_ARGS, APISERVER_EXTRA_ARGS, CONTROLLER_MANAGER_EXTRA_ARGS
#                            extra flags appended to each command line (split on whitespace)
#
# Layout of the state directory:
#   pki/        CA, apiserver serving cert, admin and controller-manager client certs, SA key pair
#   etcd/       etcd data directory
#   logs/       <component>.log (the previous run's log is kept as <component>.log.prev)
#   pids/       <component>.pid
#   kubeconfig  admin kubeconfig (CN=nsclaim-admin, O=system:masters)
#   controller-manager.kubeconfig
#   kubecache/  KUBECACHEDIR for kubectl
set -euo pipefail

REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

STATE=$(realpath -m "${LOCAL_CLUSTER_DIR:-$REPO_ROOT/tmp/local-cluster}")
KUBE_BIN_DIR=$(realpath -m "${KUBE_BIN_DIR:-$REPO_ROOT/bin/k8s/1.37.1-linux-amd64}")
ETCD_CLIENT_PORT=${ETCD_CLIENT_PORT:-22379}
ETCD_PEER_PORT=${ETCD_PEER_PORT:-22380}
APISERVER_PORT=${APISERVER_PORT:-26443}
CONTROLLER_MANAGER_PORT=${CONTROLLER_MANAGER_PORT:-20257}
SERVICE_CIDR=${SERVICE_CIDR:-10.96.0.0/16}
APISERVER_ADDRESS=${APISERVER_ADDRESS:-127.0.0.1}
APISERVER_BRIDGE=${APISERVER_BRIDGE:-}
APISERVER_BRIDGE_PREFIX=${APISERVER_BRIDGE_PREFIX:-24}
LOCAL_CLUSTER_TIMEOUT=${LOCAL_CLUSTER_TIMEOUT:-120}

PKI=$STATE/pki
LOGS=$STATE/logs
PIDS=$STATE/pids
KUBECONFIG_ADMIN=$STATE/kubeconfig
KUBECONFIG_CM=$STATE/controller-manager.kubeconfig
KUBECTL=$KUBE_BIN_DIR/kubectl
SERVER_URL=https://$APISERVER_ADDRESS:$APISERVER_PORT
ETCD_URL=http://127.0.0.1:$ETCD_CLIENT_PORT
ETCD_PEER_URL=http://127.0.0.1:$ETCD_PEER_PORT
CM_URL=https://127.0.0.1:$CONTROLLER_MANAGER_PORT

# Components in start order; `down` stops them in reverse order.
COMPONENTS=(etcd kube-apiserver kube-controller-manager)

# Names of the components started by this invocation of `up`; the EXIT trap stops them if `up` fails.
STARTED=()

log() { echo "local-cluster: $*" >&2; }
die() { log "error: $*"; exit 1; }

usage() {
  sed -n '7,37p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

# kubectl from KUBE_BIN_DIR (the machine's /usr/bin/kubectl is too old), with the admin kubeconfig and a
# cache directory inside the state dir.
kubectl_admin() {
  KUBECACHEDIR=$STATE/kubecache "$KUBECTL" --kubeconfig "$KUBECONFIG_ADMIN" "$@"
}

# ---------------------------------------------------------------------------------------------------
# Processes
# ---------------------------------------------------------------------------------------------------

# pid_of, alive, ours, running: hack/lib/procs.sh
# shellcheck source=lib/procs.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/procs.sh"

# stop NAME: SIGTERM the recorded process, wait up to 15 s, then SIGKILL; remove the pid file.
stop() {
  local name=$1 pid i
  pid=$(pid_of "$name")
  if [[ -z $pid ]]; then
    rm -f "$PIDS/$name.pid"
    return 0
  fi
  if ! alive "$pid"; then
    log "$name (pid $pid) is not running"
  elif ! ours "$name" "$pid"; then
    log "warning: pid $pid no longer belongs to $name of $STATE; not killing it"
  else
    log "stopping $name (pid $pid)"
    kill -TERM "$pid" 2>/dev/null || true
    for ((i = 0; i < 150; i++)); do
      alive "$pid" || break
      sleep 0.1
    done
    if alive "$pid"; then
      log "$name (pid $pid) did not exit within 15s; sending SIGKILL"
      kill -KILL "$pid" 2>/dev/null || true
      for ((i = 0; i < 50; i++)); do
        alive "$pid" || break
        sleep 0.1
      done
    fi
    # Reap it if it is a child of this shell (a failed `up`), so it does not linger as a zombie.
    wait "$pid" 2>/dev/null || true
  fi
  rm -f "$PIDS/$name.pid"
}

stop_all() {
  local i
  for ((i = ${#COMPONENTS[@]} - 1; i >= 0; i--)); do
    stop "${COMPONENTS[i]}"
  done
}

# start NAME ARGS...: start $KUBE_BIN_DIR/NAME in its own session, output to logs/NAME.log, PID to
# pids/NAME.pid. In a non-interactive shell the background child is not a process-group leader, so
# setsid does not fork again and $! is the PID of the binary itself. fd 9 (the state lock) is closed
# for the child so a running cluster does not hold the lock.
start() {
  local name=$1
  shift
  if [[ -f $LOGS/$name.log ]]; then mv -f "$LOGS/$name.log" "$LOGS/$name.log.prev"; fi
  echo "# $(date -u +%Y-%m-%dT%H:%M:%SZ) $KUBE_BIN_DIR/$name $*" >"$LOGS/$name.log"
  setsid "$KUBE_BIN_DIR/$name" "$@" </dev/null >>"$LOGS/$name.log" 2>&1 9>&- &
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

# port_in_use PORT [ADDRESS]: something accepts connections on ADDRESS (default 127.0.0.1):PORT.
port_in_use() {
  (exec 3<>"/dev/tcp/${2:-127.0.0.1}/$1") 2>/dev/null
}

check_port_free() {
  local port=$1 what=$2 addr=${3:-127.0.0.1}
  if port_in_use "$port" "$addr"; then
    log "error: port $port ($what) on $addr is already in use by a process not belonging to this cluster:"
    if command -v ss >/dev/null 2>&1; then ss -Hltnp "( sport = :$port )" >&2 || true; fi
    die "free the port or choose another one (see the *_PORT variables at the top of $0)"
  fi
}

# ---------------------------------------------------------------------------------------------------
# The API server's address (APISERVER_ADDRESS, APISERVER_BRIDGE)
# ---------------------------------------------------------------------------------------------------

address_present() {
  ip -o -4 addr show 2>/dev/null | awk '{print $4}' | grep -q "^$APISERVER_ADDRESS/"
}

# ensure_address: APISERVER_ADDRESS is configured on this host; with APISERVER_BRIDGE, create that
# bridge with the address (recorded in $STATE/bridge, so that `down` deletes only what `up` made).
ensure_address() {
  [[ $APISERVER_ADDRESS =~ ^[0-9]+\.[0-9]+\.[0-9]+\.[0-9]+$ ]] ||
    die "APISERVER_ADDRESS=$APISERVER_ADDRESS is not an IPv4 address"
  if [[ $APISERVER_ADDRESS == 127.0.0.1 ]] || address_present; then return 0; fi
  [[ -n $APISERVER_BRIDGE ]] ||
    die "APISERVER_ADDRESS=$APISERVER_ADDRESS is not an address of this host; set APISERVER_BRIDGE to create a bridge with it"
  ((EUID == 0)) || die "creating bridge $APISERVER_BRIDGE needs root"
  if ! ip link show "$APISERVER_BRIDGE" >/dev/null 2>&1; then
    log "creating bridge $APISERVER_BRIDGE with $APISERVER_ADDRESS/$APISERVER_BRIDGE_PREFIX"
    ip link add "$APISERVER_BRIDGE" type bridge
    echo "$APISERVER_BRIDGE" >"$STATE/bridge"
  fi
  ip addr add "$APISERVER_ADDRESS/$APISERVER_BRIDGE_PREFIX" dev "$APISERVER_BRIDGE"
  ip link set "$APISERVER_BRIDGE" up
}

# delete_bridge: delete the bridge `up` created (after the processes that use it have stopped).
delete_bridge() {
  local br
  [[ -s $STATE/bridge ]] || return 0
  br=$(<"$STATE/bridge")
  if ip link show "$br" >/dev/null 2>&1; then
    log "deleting bridge $br"
    ip link delete "$br" type bridge || log "warning: could not delete bridge $br"
  fi
  rm -f "$STATE/bridge"
}

# ---------------------------------------------------------------------------------------------------
# PKI
# ---------------------------------------------------------------------------------------------------

# first_service_ip CIDR: the first usable address of an IPv4 CIDR (10.96.0.0/16 -> 10.96.0.1).
first_service_ip() {
  local cidr=$1 ip bits a b c d n
  [[ $cidr =~ ^([0-9]+)\.([0-9]+)\.([0-9]+)\.([0-9]+)/([0-9]+)$ ]] ||
    die "SERVICE_CIDR=$cidr is not an IPv4 CIDR"
  a=${BASH_REMATCH[1]} b=${BASH_REMATCH[2]} c=${BASH_REMATCH[3]} d=${BASH_REMATCH[4]}
  bits=${BASH_REMATCH[5]}
  ((bits >= 1 && bits <= 30)) || die "SERVICE_CIDR=$cidr: prefix length must be 1..30"
  n=$(((a << 24 | b << 16 | c << 8 | d) & ((0xffffffff << (32 - bits)) & 0xffffffff)))
  n=$((n + 1))
  ip="$((n >> 24 & 255)).$((n >> 16 & 255)).$((n >> 8 & 255)).$((n & 255))"
  echo "$ip"
}

# sign DIR NAME SUBJECT EXTENSIONS: create DIR/NAME.key and DIR/NAME.crt signed by DIR/ca.
sign() {
  local dir=$1 name=$2 subj=$3 ext=$4
  openssl genrsa -out "$dir/$name.key" 2048 2>/dev/null
  openssl req -new -key "$dir/$name.key" -subj "$subj" -out "$dir/$name.csr" 2>/dev/null
  printf '%s\n' "$ext" >"$dir/$name.ext"
  openssl x509 -req -in "$dir/$name.csr" -CA "$dir/ca.crt" -CAkey "$dir/ca.key" \
    -set_serial "0x$(openssl rand -hex 16)" -days 3650 -sha256 \
    -extfile "$dir/$name.ext" -out "$dir/$name.crt" 2>/dev/null
  rm -f "$dir/$name.csr" "$dir/$name.ext"
}

sign_apiserver() {
  local dir=$1 ip=$2 extra=""
  if [[ $APISERVER_ADDRESS != 127.0.0.1 ]]; then extra=",IP:$APISERVER_ADDRESS"; fi
  sign "$dir" apiserver "/CN=kube-apiserver" "basicConstraints=critical,CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=serverAuth
subjectAltName=DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local,IP:127.0.0.1,IP:$ip$extra"
}

# ensure_pki: create the PKI once (in a temporary directory, renamed when complete, so an interrupted
# run never leaves half a PKI behind); later runs reuse it. The serving cert is re-issued if
# SERVICE_CIDR changed and its first IP is missing from the SANs.
ensure_pki() {
  local ip tmp client_ext
  ip=$(first_service_ip "$SERVICE_CIDR")
  if [[ -f $PKI/ca.crt && -f $PKI/sa.key ]]; then
    local sans
    sans=$(openssl x509 -in "$PKI/apiserver.crt" -noout -ext subjectAltName 2>/dev/null || true)
    if ! grep -q "IP Address:$ip\b" <<<"$sans" || ! grep -q "IP Address:$APISERVER_ADDRESS\b" <<<"$sans"; then
      log "re-issuing the apiserver serving certificate for service IP $ip and address $APISERVER_ADDRESS"
      sign_apiserver "$PKI" "$ip"
    fi
    return 0
  fi
  log "creating PKI in $PKI"
  tmp=$STATE/pki.tmp
  rm -rf "$tmp"
  mkdir -p "$tmp"
  chmod 700 "$tmp"

  # CA (self-signed); a minimal config so openssl's default extensions do not interfere.
  printf '%s\n' '[req]' 'distinguished_name=dn' 'x509_extensions=v3_ca' '[dn]' \
    '[v3_ca]' 'basicConstraints=critical,CA:TRUE' 'keyUsage=critical,keyCertSign,cRLSign,digitalSignature' \
    'subjectKeyIdentifier=hash' >"$tmp/ca.cnf"
  openssl genrsa -out "$tmp/ca.key" 2048 2>/dev/null
  openssl req -x509 -new -key "$tmp/ca.key" -subj "/CN=nsclaim-local-ca" -days 3650 -sha256 \
    -config "$tmp/ca.cnf" -out "$tmp/ca.crt" 2>/dev/null
  rm -f "$tmp/ca.cnf"

  sign_apiserver "$tmp" "$ip"
  client_ext="basicConstraints=critical,CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=clientAuth"
  sign "$tmp" admin "/O=system:masters/CN=nsclaim-admin" "$client_ext"
  sign "$tmp" controller-manager "/CN=system:kube-controller-manager" "$client_ext"

  # Service-account token signing key pair.
  openssl genrsa -out "$tmp/sa.key" 2048 2>/dev/null
  openssl rsa -in "$tmp/sa.key" -pubout -out "$tmp/sa.pub" 2>/dev/null

  mv "$tmp" "$PKI"
}

# write_kubeconfig FILE USER CERT KEY: a kubeconfig with embedded CA and client certificate.
write_kubeconfig() {
  local file=$1 user=$2 cert=$3 key=$4
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
    client-certificate-data: $(base64 -w0 <"$cert")
    client-key-data: $(base64 -w0 <"$key")
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

# ---------------------------------------------------------------------------------------------------
# Health
# ---------------------------------------------------------------------------------------------------

etcd_healthy() {
  curl -fsS --max-time 2 "$ETCD_URL/health" 2>/dev/null | grep -q '"health":"true"'
}

apiserver_ready() {
  [[ $(curl -fsS --max-time 2 --cacert "$PKI/ca.crt" --cert "$PKI/admin.crt" --key "$PKI/admin.key" \
    "$SERVER_URL/readyz" 2>/dev/null) == ok ]]
}

controller_manager_healthy() {
  [[ $(curl -fsSk --max-time 2 "$CM_URL/healthz" 2>/dev/null) == ok ]]
}

default_sa_exists() {
  curl -fsS --max-time 2 -o /dev/null --cacert "$PKI/ca.crt" --cert "$PKI/admin.crt" \
    --key "$PKI/admin.key" "$SERVER_URL/api/v1/namespaces/default/serviceaccounts/default" 2>/dev/null
}

healthy() {
  case $1 in
  etcd) etcd_healthy ;;
  kube-apiserver) apiserver_ready ;;
  kube-controller-manager) controller_manager_healthy ;;
  esac
}

# fail_component NAME MESSAGE: report a failure with the tail of NAME's log, then exit non-zero (the
# EXIT trap stops what this run started).
fail_component() {
  local name=$1 msg=$2
  log "error: $msg"
  if [[ -f $LOGS/$name.log ]]; then
    log "last lines of $LOGS/$name.log:"
    tail -n 25 "$LOGS/$name.log" | sed 's/^/    /' >&2
  fi
  exit 1
}

# wait_for NAME DESCRIPTION DEADLINE CHECK...: poll CHECK until it succeeds (return 0), a component this
# run started dies (return 1, its name in DIED) or the deadline (epoch seconds) passes (exit 1). Every
# started component is watched, not only NAME: etcd dying while kube-apiserver starts is seen at once,
# not when kube-apiserver gives up on it 20 s later.
DIED=
wait_for() {
  local name=$1 what=$2 deadline=$3 c
  shift 3
  local now
  while ! "$@"; do
    for c in "${STARTED[@]}"; do
      if ! running "$c"; then
        log "error: $c exited while waiting for $what"
        DIED=$c
        return 1
      fi
    done
    now=$(date +%s)
    if ((now >= deadline)); then
      fail_component "$name" "timed out after ${LOCAL_CLUSTER_TIMEOUT}s waiting for $what"
    fi
    sleep 0.25
  done
}

# ---------------------------------------------------------------------------------------------------
# Subcommands
# ---------------------------------------------------------------------------------------------------

# lock: serialise up/down/reset on the same state directory.
lock() {
  mkdir -p "$STATE"
  exec 9>"$STATE/.lock"
  flock -w "$LOCAL_CLUSTER_TIMEOUT" 9 || die "another local-cluster.sh holds $STATE/.lock"
}

# on_exit: if `up` fails half-way, stop every process it started (PKI and data stay in place).
on_exit() {
  local rc=$?
  if ((rc != 0 && ${#STARTED[@]} > 0)); then
    log "start failed; stopping the processes this run started: ${STARTED[*]}"
    local i
    for ((i = ${#STARTED[@]} - 1; i >= 0; i--)); do
      stop "${STARTED[i]}"
    done
  fi
  exit "$rc"
}

all_healthy() {
  local c
  for c in "${COMPONENTS[@]}"; do
    if ! running "$c" || ! healthy "$c"; then return 1; fi
  done
  default_sa_exists
}

# start_components DEADLINE: start etcd, kube-apiserver and kube-controller-manager in turn, each once
# the one before is healthy. Returns 1, with the component's name in DIED, if one of them exits before
# the whole cluster is ready. etcd logs at info level so that its log says why it stopped (a signal
# names itself there).
start_components() {
  local deadline=$1
  local extra=()
  read -r -a extra <<<"${ETCD_EXTRA_ARGS:-}"
  start etcd \
    --name=local \
    --data-dir="$STATE/etcd" \
    --listen-client-urls="$ETCD_URL" \
    --advertise-client-urls="$ETCD_URL" \
    --listen-peer-urls="$ETCD_PEER_URL" \
    --initial-advertise-peer-urls="$ETCD_PEER_URL" \
    --initial-cluster="local=$ETCD_PEER_URL" \
    --log-level=info \
    "${extra[@]}"
  wait_for etcd "etcd $ETCD_URL/health" "$deadline" etcd_healthy || return 1

  read -r -a extra <<<"${APISERVER_EXTRA_ARGS:-}"
  # On 127.0.0.1 nothing but host processes reach the API server and the kubernetes Service needs no
  # endpoints; on another address (a node's bridge), Pods reach it through that Service (kube-proxy),
  # so kube-apiserver keeps its EndpointSlice up to date.
  # Such a cluster has a node (hack/local-node.sh): kube-apiserver reaches its kubelet (logs, exec)
  # at the node's InternalIP (its name resolves nowhere) with the admin client certificate.
  local endpoint_reconciler=none
  if [[ $APISERVER_ADDRESS != 127.0.0.1 ]]; then
    endpoint_reconciler=lease
    extra+=(--kubelet-preferred-address-types=InternalIP --kubelet-client-certificate="$PKI/admin.crt"
      --kubelet-client-key="$PKI/admin.key")
  fi
  start kube-apiserver \
    --etcd-servers="$ETCD_URL" \
    --bind-address="$APISERVER_ADDRESS" \
    --secure-port="$APISERVER_PORT" \
    --advertise-address="$APISERVER_ADDRESS" \
    --endpoint-reconciler-type="$endpoint_reconciler" \
    --cert-dir="$STATE/apiserver-certs" \
    --tls-cert-file="$PKI/apiserver.crt" \
    --tls-private-key-file="$PKI/apiserver.key" \
    --client-ca-file="$PKI/ca.crt" \
    --authorization-mode=Node,RBAC \
    --service-cluster-ip-range="$SERVICE_CIDR" \
    --service-account-issuer=https://kubernetes.default.svc.cluster.local \
    --service-account-key-file="$PKI/sa.pub" \
    --service-account-signing-key-file="$PKI/sa.key" \
    --profiling=false \
    "${extra[@]}"
  wait_for kube-apiserver "kube-apiserver $SERVER_URL/readyz" "$deadline" apiserver_ready || return 1

  # No --authentication-kubeconfig/--authorization-kubeconfig: /healthz is always allowed, and with them
  # the controller manager logs "missing content for CA bundle requestheader-client-ca-file" forever
  # because this apiserver has no front-proxy (requestheader) CA. Its /metrics is therefore not served.
  read -r -a extra <<<"${CONTROLLER_MANAGER_EXTRA_ARGS:-}"
  start kube-controller-manager \
    --kubeconfig="$KUBECONFIG_CM" \
    --bind-address=127.0.0.1 \
    --secure-port="$CONTROLLER_MANAGER_PORT" \
    --cert-dir="$STATE/controller-manager-certs" \
    --flex-volume-plugin-dir="$STATE/flexvolume" \
    --leader-elect=false \
    --use-service-account-credentials=true \
    --service-account-private-key-file="$PKI/sa.key" \
    --root-ca-file="$PKI/ca.crt" \
    --service-cluster-ip-range="$SERVICE_CIDR" \
    --profiling=false \
    "${extra[@]}"
  wait_for kube-controller-manager "kube-controller-manager $CM_URL/healthz" "$deadline" \
    controller_manager_healthy || return 1
  wait_for kube-controller-manager "ServiceAccount default/default (created by kube-controller-manager)" \
    "$deadline" default_sa_exists || return 1

}

cmd_up() {
  local c deadline t0 any=false i
  for c in "${COMPONENTS[@]}" kubectl; do
    [[ -x $KUBE_BIN_DIR/$c ]] ||
      die "$KUBE_BIN_DIR/$c not found; build it with hack/build-control-plane.sh $KUBE_BIN_DIR v1.37.1"
  done
  [[ $LOCAL_CLUSTER_TIMEOUT =~ ^[0-9]+$ ]] || die "LOCAL_CLUSTER_TIMEOUT must be a number of seconds"
  lock
  t0=$(date +%s%3N)

  # Already running? All three alive: give them a moment to report healthy (they may still be
  # settling after a restart); if they do not, or only some are alive, restart the whole cluster.
  for c in "${COMPONENTS[@]}"; do
    if running "$c"; then any=true; fi
  done
  if $any; then
    if running etcd && running kube-apiserver && running kube-controller-manager; then
      for ((i = 0; i < 60; i++)); do
        if all_healthy; then
          log "cluster in $STATE is already running and healthy (API server $SERVER_URL)"
          return 0
        fi
        sleep 0.25
      done
      log "cluster in $STATE is running but not healthy; restarting it"
    else
      log "cluster in $STATE is only partly running; restarting it"
    fi
    stop_all
  fi
  rm -f "$PIDS"/*.pid 2>/dev/null || true

  check_port_free "$ETCD_CLIENT_PORT" ETCD_CLIENT_PORT
  check_port_free "$ETCD_PEER_PORT" ETCD_PEER_PORT
  ensure_address
  check_port_free "$APISERVER_PORT" APISERVER_PORT "$APISERVER_ADDRESS"
  check_port_free "$CONTROLLER_MANAGER_PORT" CONTROLLER_MANAGER_PORT

  mkdir -p "$LOGS" "$PIDS" "$STATE/etcd" "$STATE/kubecache" "$STATE/apiserver-certs" \
    "$STATE/controller-manager-certs" "$STATE/flexvolume"
  chmod 700 "$STATE/etcd"
  ensure_pki
  write_kubeconfig "$KUBECONFIG_ADMIN" nsclaim-admin "$PKI/admin.crt" "$PKI/admin.key"
  write_kubeconfig "$KUBECONFIG_CM" system:kube-controller-manager "$PKI/controller-manager.crt" \
    "$PKI/controller-manager.key"

  trap on_exit EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
  deadline=$(($(date +%s) + LOCAL_CLUSTER_TIMEOUT))

  local attempt
  for attempt in 1 2; do
    start_components "$deadline" && break
    # Twice in about forty CI runs, etcd stopped gracefully within a second of its start, before
    # kube-apiserver could reach it; its log said no more than that. One more try costs seconds.
    # (The node's containerd did the same, once: `running` had read the shell's command line before
    # the exec, so this script stopped it itself. start() now waits for the exec.)
    if ((attempt == 2)); then fail_component "$DIED" "$DIED exited during start-up, twice"; fi
    log "last lines of $LOGS/$DIED.log:"
    tail -n 15 "$LOGS/$DIED.log" | sed 's/^/    /' >&2
    log "$DIED exited during start-up; stopping what this run started and starting the cluster again, once"
    local i
    for ((i = ${#STARTED[@]} - 1; i >= 0; i--)); do stop "${STARTED[i]}"; done
    STARTED=()
    deadline=$(($(date +%s) + LOCAL_CLUSTER_TIMEOUT))
  done

  STARTED=()
  trap - EXIT INT TERM
  t0=$(($(date +%s%3N) - t0))
  log "cluster ready in $((t0 / 1000)).$((t0 % 1000 / 100))s: API server $SERVER_URL"
  log "use it with: eval \"\$($0 env)\"   (kubectl: $KUBECTL)"
}

cmd_down() {
  if [[ ! -d $PIDS ]]; then
    log "nothing is running (no $PIDS)"
    delete_bridge
    return 0
  fi
  lock
  stop_all
  delete_bridge
}

cmd_status() {
  local c pid ok=true state
  for c in "${COMPONENTS[@]}"; do
    pid=$(pid_of "$c")
    if [[ -z $pid ]]; then
      state="stopped"
      ok=false
    elif ! running "$c"; then
      state="not running (stale pid $pid)"
      ok=false
    elif healthy "$c"; then
      state="running, healthy (pid $pid)"
    else
      state="running, NOT healthy (pid $pid)"
      ok=false
    fi
    printf '%-24s %s\n' "$c" "$state"
  done
  if $ok; then
    if default_sa_exists; then
      printf '%-24s %s\n' "default ServiceAccount" "present"
    else
      printf '%-24s %s\n' "default ServiceAccount" "missing"
      ok=false
    fi
    printf '%-24s %s\n' "API server" "$SERVER_URL (KUBECONFIG=$KUBECONFIG_ADMIN)"
  fi
  $ok
}

cmd_reset() {
  cmd_down
  if [[ -d $STATE ]]; then
    log "deleting $STATE"
    rm -rf "$STATE"
  fi
}

cmd_env() {
  printf 'export KUBECONFIG=%q\n' "$KUBECONFIG_ADMIN"
  printf 'export KUBECACHEDIR=%q\n' "$STATE/kubecache"
  # shellcheck disable=SC2016 # $PATH is expanded by the shell that evals this output
  printf 'export PATH=%q:"$PATH"\n' "$KUBE_BIN_DIR"
}

cmd_sa_kubeconfig() {
  (($# >= 2 && $# <= 3)) || usage
  local ns=$1 sa=$2 duration=${3:-24h} token
  [[ -f $KUBECONFIG_ADMIN ]] || die "no cluster in $STATE; run: $0 up"
  token=$(kubectl_admin create token "$sa" --namespace "$ns" --duration "$duration") ||
    die "could not create a token for ServiceAccount $ns/$sa (is the cluster up, does the ServiceAccount exist?)"
  cat <<EOF
apiVersion: v1
kind: Config
clusters:
- name: local
  cluster:
    server: $SERVER_URL
    certificate-authority-data: $(base64 -w0 <"$PKI/ca.crt")
users:
- name: system:serviceaccount:$ns:$sa
  user:
    token: $token
contexts:
- name: $sa@$ns
  context:
    cluster: local
    namespace: $ns
    user: system:serviceaccount:$ns:$sa
current-context: $sa@$ns
EOF
}

main() {
  (($# >= 1)) || usage
  local cmd=$1
  shift
  case $cmd in
  up) (($# == 0)) || usage; cmd_up ;;
  down) (($# == 0)) || usage; cmd_down ;;
  status) (($# == 0)) || usage; cmd_status ;;
  reset) (($# == 0)) || usage; cmd_reset ;;
  env) (($# == 0)) || usage; cmd_env ;;
  sa-kubeconfig) cmd_sa_kubeconfig "$@" ;;
  -h | --help | help) usage ;;
  *) usage ;;
  esac
}

main "$@"
