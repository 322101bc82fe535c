#!/usr/bin/env bash
# Runs a kind suite of the Makefile (make test-kind; default test-e2e) on this machine, where nothing
# can be pulled: the project's own dockerd (hack/docker.sh up), kind's node image built offline
# (hack/kind-node-image.sh, cached in ./bin), then `make SUITE KIND_NODE_IMAGE=...`. Whatever the
# result, the cluster is deleted (`kind delete cluster`) and dockerd stopped (`hack/docker.sh down`),
# and the run fails if either left something: a kind container or network, a process of dockerd, a
# mount, network namespace, bridge, veth or iptables chain (docker.sh down checks those), or an
# iptables rule or chain that was not there before.
#
#   hack/test-kind.sh [SUITE]     (KIND, KIND_CLUSTER, KUBE_VERSION, KIND_VERSION from the Makefile)
#
# It prints the wall time of each step. Root only (dockerd, debootstrap). One run per machine at a
# time (flock on /tmp/nsclaim-docker.lock): the daemon's names and addresses are fixed.
set -euo pipefail
REPO_ROOT=$(cd "$(dirname "$0")/.." && pwd)
suite=${1:-test-e2e}
: "${KIND:?}" "${KIND_CLUSTER:?}"
exec 9>/tmp/nsclaim-docker.lock
flock 9
t0=$(date +%s)
step() { echo "test-kind: $* ($(($(date +%s) - t0)) s)" >&2; }
# Rules as iptables -S prints them, without the counters; compared after down.
rules() { for t in filter nat mangle raw; do iptables -t "$t" -S 2>/dev/null | sed "s/^/$t /"; done | sort; }
mkdir -p "$REPO_ROOT/tmp"
rules >"$REPO_ROOT/tmp/kind-iptables.before"

status=0
teardown() {
  step "teardown"
  "$KIND" delete cluster --name "$KIND_CLUSTER" || status=1
  if [[ -n $(docker ps -aq --filter "label=io.x-k8s.kind.cluster=$KIND_CLUSTER") ]]; then
    echo "test-kind: kind delete cluster left containers" >&2; status=1
  fi
  "$REPO_ROOT/hack/docker.sh" down || status=1
  # Rules of other suites running now may come and go (their local nodes): only DOCKER or KIND
  # rules, or FORWARD's policy, count as ours.
  if diff <(grep -E 'DOCKER|KIND|^filter -P FORWARD' "$REPO_ROOT/tmp/kind-iptables.before") <(rules | grep -E 'DOCKER|KIND|^filter -P FORWARD'); then :; else
    echo "test-kind: iptables differ from before the run (above)" >&2; status=1
  fi
  step "done: make $suite on kind exit $status"
  exit "$status"
}
trap teardown EXIT

eval "$("$REPO_ROOT/hack/docker.sh" up)"
step "dockerd up"
image=$(KUBE_VERSION=${KUBE_VERSION:-1.37.1} KIND_VERSION=${KIND_VERSION:-v0.33.0} "$REPO_ROOT/hack/kind-node-image.sh")
step "node image $image"
# The node container weighs as the eight or so host processes of a local cluster and node it stands in
# for (KIND_NODE_CPU_SHARES, the Makefile).
make -C "$REPO_ROOT" --no-print-directory "$suite" KIND_NODE_IMAGE="$image" KIND_REGISTRY=local \
  KIND_NODE_CPU_SHARES="${KIND_NODE_CPU_SHARES:-8192}" || status=$?
step "make $suite: exit $status"
