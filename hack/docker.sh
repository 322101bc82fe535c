#!/usr/bin/env bash
# A Docker daemon of the project's own, for the kind suites only (make test-e2e, make test-e2e-olm):
# Debian's docker.io (installed with apt-get when dockerd is missing), started with its own data root,
# exec root, pidfile, socket, bridge and address pool, so that it shares nothing with a system Docker
# or with the local clusters and nodes other suites run on the same machine.
#
#   hack/docker.sh up      start dockerd (a no-op when ours is running); prints `export DOCKER_HOST=...`
#   hack/docker.sh down    remove every container and network of ours, stop dockerd and its containerd,
#                          delete the bridge, then check that nothing is left (process, mount, network
#                          namespace, bridge, veth, iptables chain) and fail loudly if something is
#   hack/docker.sh env     print `export DOCKER_HOST=...`
#
# The daemon never touches iptables or sysctls: `--iptables=false --ip-masq=false --ip-forward=false`
# (kind publishes the API server on 127.0.0.1 through docker-proxy, which needs no NAT rule; Pods
# and nodes need no egress, nothing is pulled), so it adds no chain and never flips FORWARD's policy.
# Its default bridge (DOCKER_BRIDGE) and the pool of user-defined networks (kind's `kind` network) are
# addresses of their own. dockerd's own oom_score_adj stays 0: root here cannot lower it; for the same
# reason (no CAP_SYS_RESOURCE) its runtime is hack/docker-runc.sh, Debian's runc after dropping the
# capabilities this machine cannot grant from --privileged containers (kind's nodes).
#
# Settings: DOCKER_DATA_ROOT [/var/lib/nsclaim-docker] (images: kept by down, so the kind node image
# is imported once), DOCKER_EXEC_ROOT [/run/nsclaim-docker] (sockets, PID file, log),
# DOCKER_BRIDGE [nsclaimdk0], DOCKER_BRIDGE_CIDR [10.250.0.1/24], DOCKER_POOL [10.251.0.0/16].
set -euo pipefail
DOCKER_DATA_ROOT=${DOCKER_DATA_ROOT:-/var/lib/nsclaim-docker}
DOCKER_EXEC_ROOT=${DOCKER_EXEC_ROOT:-/run/nsclaim-docker}
DOCKER_BRIDGE=${DOCKER_BRIDGE:-nsclaimdk0}
DOCKER_BRIDGE_CIDR=${DOCKER_BRIDGE_CIDR:-10.250.0.1/24}
DOCKER_POOL=${DOCKER_POOL:-10.251.0.0/16}
here=$(cd "$(dirname "$0")" && pwd)
sock=$DOCKER_EXEC_ROOT/docker.sock
pidfile=$DOCKER_EXEC_ROOT/dockerd.pid
log=$DOCKER_EXEC_ROOT/dockerd.log
nets=$DOCKER_EXEC_ROOT/bridges # bridges of the user-defined networks, for down's check
export DOCKER_HOST=unix://$sock

die() { echo "docker.sh: $*" >&2; exit 1; }
running() { [[ -f $pidfile ]] && kill -0 "$(cat "$pidfile")" 2>/dev/null; }

install() {
  command -v dockerd >/dev/null 2>&1 && command -v docker >/dev/null 2>&1 && return 0
  ((EUID == 0)) || die "need root to install docker.io (apt-get)"
  echo "docker.sh: installing docker.io from Debian" >&2
  apt-get update -qq
  # --no-install-recommends: no cgroupfs-mount, no system services to start.
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends docker.io >/dev/null
}

up() {
  ((EUID == 0)) || die "dockerd needs root"
  install
  if running; then echo "export DOCKER_HOST=$DOCKER_HOST"; return 0; fi
  mkdir -p "$DOCKER_DATA_ROOT" "$DOCKER_EXEC_ROOT"
  # kind bind-mounts /lib/modules read-only; this kernel has none, and `docker run -v` would create it.
  if [[ ! -e /lib/modules ]]; then mkdir /lib/modules && touch "$DOCKER_EXEC_ROOT/created-lib-modules"; fi
  if ! ip link show "$DOCKER_BRIDGE" >/dev/null 2>&1; then
    ip link add "$DOCKER_BRIDGE" type bridge
    ip addr add "$DOCKER_BRIDGE_CIDR" dev "$DOCKER_BRIDGE"
    ip link set "$DOCKER_BRIDGE" up
  fi
  local policy
  policy=$(iptables -S FORWARD 2>/dev/null | awk '$1=="-P"{print $3}')
  setsid dockerd --data-root "$DOCKER_DATA_ROOT" --exec-root "$DOCKER_EXEC_ROOT" --pidfile "$pidfile" \
    --host "$DOCKER_HOST" --bridge "$DOCKER_BRIDGE" --default-address-pool "base=$DOCKER_POOL,size=24" \
    --iptables=false --ip-masq=false --ip-forward=false --userland-proxy=true \
    --add-runtime "nsclaim-runc=$here/docker-runc.sh" --default-runtime nsclaim-runc \
    --oom-score-adjust=0 --storage-driver overlay2 --log-driver json-file \
    --no-new-privileges=false --live-restore=false </dev/null >"$log" 2>&1 &
  for _ in $(seq 1 60); do
    if docker version >/dev/null 2>&1; then break; fi
    sleep 1
  done
  docker version >/dev/null 2>&1 || { tail -30 "$log" >&2; die "dockerd did not answer on $sock (log above)"; }
  [[ "$(iptables -S FORWARD 2>/dev/null | awk '$1=="-P"{print $3}')" == "$policy" ]] ||
    die "dockerd changed the FORWARD policy from $policy"
  echo "export DOCKER_HOST=$DOCKER_HOST"
}

down() {
  ((EUID == 0)) || die "need root"
  if running; then
    local ids n
    ids=$(docker ps -aq)
    if [[ -n $ids ]]; then docker rm -f -v $ids >/dev/null; fi
    for n in $(docker network ls -q --filter type=custom); do
      echo "br-$n" >>"$nets"
      docker network rm "$n" >/dev/null
    done
    kill -TERM "$(cat "$pidfile")"
    for _ in $(seq 1 60); do running || break; sleep 0.5; done
    ! running || die "dockerd (pid $(cat "$pidfile")) did not stop"
  fi
  if ip link show "$DOCKER_BRIDGE" >/dev/null 2>&1; then ip link del "$DOCKER_BRIDGE"; fi
  if [[ -f $DOCKER_EXEC_ROOT/created-lib-modules ]]; then rmdir /lib/modules; fi
  check
  rm -rf "$DOCKER_EXEC_ROOT"
}

# check fails if anything of the daemon is left: a process naming our roots or socket (dockerd, its
# containerd, shims, docker-proxy) or run in a kind node by a suite (hack/test-e2e-olm.sh's registry,
# /nsclaim-registry/), a mount under our roots, a network namespace file, a bridge of
# ours or a veth attached to one, an iptables chain named DOCKER*.
check() {
  local left=() p
  for p in $(pgrep -f -- "$DOCKER_EXEC_ROOT|$DOCKER_DATA_ROOT|docker-proxy|/nsclaim-registry/" || true); do
    [[ $p == "$$" ]] || left+=("process $p: $(tr '\0' ' ' </proc/"$p"/cmdline 2>/dev/null)")
  done
  while read -r m; do left+=("mount $m"); done < <(awk -v a="$DOCKER_EXEC_ROOT" -v b="$DOCKER_DATA_ROOT" \
    'index($5, a)==1 || index($5, b)==1 {print $5}' /proc/self/mountinfo)
  if [[ -d $DOCKER_EXEC_ROOT/netns ]]; then
    while read -r f; do left+=("netns $f"); done < <(find "$DOCKER_EXEC_ROOT/netns" -type f)
  fi
  local links
  links=$(ip -o link show)
  if grep -q ": $DOCKER_BRIDGE[:@]" <<<"$links"; then left+=("bridge $DOCKER_BRIDGE"); fi
  if [[ -f $nets ]]; then
    while read -r b; do
      if grep -q ": ${b:0:15}[:@]" <<<"$links"; then left+=("bridge ${b:0:15}"); fi
      if grep -q "master ${b:0:15} " <<<"$links"; then left+=("veth on ${b:0:15}"); fi
    done <"$nets"
  fi
  if grep -q "master $DOCKER_BRIDGE " <<<"$links"; then left+=("veth on $DOCKER_BRIDGE"); fi
  local t
  for t in filter nat mangle raw; do
    while read -r c; do left+=("iptables -t $t chain $c"); done < <(iptables -t "$t" -S 2>/dev/null | awk '$1=="-N" && $2 ~ /^DOCKER/ {print $2}')
  done
  if ((${#left[@]} > 0)); then
    printf 'docker.sh: left behind: %s\n' "${left[@]}" >&2
    exit 1
  fi
  echo "docker.sh: down: no process, mount, netns, bridge, veth or iptables chain of dockerd left" >&2
}

case ${1:-} in
up) up ;;
down) down ;;
check) check ;;
env) echo "export DOCKER_HOST=$DOCKER_HOST" ;;
*) die "usage: docker.sh up|down|check|env" ;;
esac
