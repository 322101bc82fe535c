#!/usr/bin/env bash
# make test-security: attacks a fresh local cluster as a compromised nsclaim would (test/security),
# with the operator's own ServiceAccount token. The operator runs as its own process under the RBAC it
# ships with (hack/local-operator.sh), which requires the fence (--require-fence, the default). Two runs:
#   1. with the admission fence of config/fence applied (the fence and the label guard): every attack
#      must be denied and change nothing, and a NamespaceClaim must still become Ready and be cleaned up;
#   2. with the fence deleted: the operator must refuse to provision (Ready=False, FenceNotIntact, no
#      namespace), and the run records which attacks RBAC alone allows (only the attacks RBAC is meant
#      to stop are asserted).
#   3. with only the previous release's fence (internal/fence/previous) applied next to this release's
#      RBAC, as after an upgrade whose fence.yaml was not applied: the operator reports it as not
#      intact and provisions (within its grace), sleep's writes (which this release's fence.yaml grants,
#      not install.yaml) are denied by RBAC everywhere, and the attacks of PREVIOUS_TESTS are denied
#      and change nothing.
# Prints the table of docs/security.md (also left in $LOCAL_CLUSTER_DIR/security-results/table.md).
# Uses its own state directory and ports, and stops everything it started, pass or fail.
#
# Environment (defaults): SECURITY_CLUSTER_DIR (<repo>/tmp/fence-cluster), SECURITY_APISERVER_PORT
#   (28443), SECURITY_ETCD_CLIENT_PORT (24379), SECURITY_ETCD_PEER_PORT (24380),
#   SECURITY_CONTROLLER_MANAGER_PORT (22257), SECURITY_OPERATOR_PROBE_PORT (20081),
#   SECURITY_OPERATOR_METRICS_PORT (20443), MANAGER_BIN (<repo>/bin/manager), KUBE_BIN_DIR,
#   OPERATOR_ARGS (extra manager flags; the ConfigMap protocol flags and --fence-check-interval 2s are
#   appended), FENCE_DIR (the kustomize directory of the fence; config/fence).
set -euo pipefail
REPO_ROOT=$(cd "$(dirname "$0")/.." && pwd)
export LOCAL_CLUSTER_DIR=${SECURITY_CLUSTER_DIR:-$REPO_ROOT/tmp/fence-cluster}
export APISERVER_PORT=${SECURITY_APISERVER_PORT:-28443} ETCD_CLIENT_PORT=${SECURITY_ETCD_CLIENT_PORT:-24379}
export ETCD_PEER_PORT=${SECURITY_ETCD_PEER_PORT:-24380} CONTROLLER_MANAGER_PORT=${SECURITY_CONTROLLER_MANAGER_PORT:-22257}
export OPERATOR_PROBE_PORT=${SECURITY_OPERATOR_PROBE_PORT:-20081} OPERATOR_METRICS_PORT=${SECURITY_OPERATOR_METRICS_PORT:-20443}
export KUBE_BIN_DIR=${KUBE_BIN_DIR:-$REPO_ROOT/bin/k8s/1.37.1-linux-amd64}
export MANAGER_BIN=${MANAGER_BIN:-$REPO_ROOT/bin/manager}
# The ConfigMap protocol on, with test/security's class, so its writes go through the fence too; the
# fence checked every 2s, so the operator notices its removal within moments.
export OPERATOR_ARGS="${OPERATOR_ARGS:-} --requests-namespace nsplease-requests --requests-class security --fence-check-interval 2s"
export FENCE_DIR=${FENCE_DIR:-$REPO_ROOT/config/fence}
KUBECTL=("$KUBE_BIN_DIR/kubectl" --kubeconfig "$LOCAL_CLUSTER_DIR/kubeconfig")
export KUBECACHEDIR="$LOCAL_CLUSTER_DIR/kubecache"
RESULTS="$LOCAL_CLUSTER_DIR/security-results"
# The attacker's kubeconfig: a token of the operator's own ServiceAccount.
ATTACKER="$LOCAL_CLUSTER_DIR/attacker.kubeconfig"

cleanup() {
  "$REPO_ROOT/hack/local-operator.sh" stop || true
  "$REPO_ROOT/hack/local-cluster.sh" down || true
}
trap cleanup EXIT

# run_suite FENCE [go test flags] runs test/security with NSCLAIM_FENCE=FENCE and prints its summary.
run_suite() {
  local status=0
  KUBECONFIG="$LOCAL_CLUSTER_DIR/kubeconfig" NSCLAIM_OPERATOR_KUBECONFIG="$ATTACKER" \
    NSCLAIM_FENCE="$1" NSCLAIM_SECURITY_RESULTS="$RESULTS" \
    go test ./test/security/ -count=1 -v -timeout 10m "${@:2}" > "$LOCAL_CLUSTER_DIR/security-$1.log" 2>&1 || status=$?
  echo "== fence $1"
  grep -E -- '^(--- |PASS|FAIL|ok)|^\s+--- ' "$LOCAL_CLUSTER_DIR/security-$1.log" || true
  if [ "$status" -ne 0 ]; then
    grep -E -A12 -- '--- FAIL' "$LOCAL_CLUSTER_DIR/security-$1.log" >&2 || true
    echo "operator log tail:" >&2; tail -20 "$LOCAL_CLUSTER_DIR/logs/operator.log" >&2
  fi
  return "$status"
}

"$REPO_ROOT/hack/local-cluster.sh" reset >/dev/null
"$REPO_ROOT/hack/local-cluster.sh" up
# install applies the fence (and waits until it is enforced) before the operator starts, so its
# start-up writes are fenced too.
"$REPO_ROOT/hack/local-operator.sh" install
"$REPO_ROOT/hack/local-cluster.sh" sa-kubeconfig nsclaim-operator-system nsclaim-operator-controller-manager 1h > "$ATTACKER"
mkdir -p "$RESULTS"
"$REPO_ROOT/hack/local-operator.sh" start
fenced=0; run_suite installed || fenced=$?
# The operator's own work must never have been denied by the fence.
if grep -q 'denied request' "$LOCAL_CLUSTER_DIR/logs/operator.log"; then
  echo "the fence denied the operator's own work:" >&2; grep 'denied request' "$LOCAL_CLUSTER_DIR/logs/operator.log" | head -5 >&2
  fenced=1
fi

"$REPO_ROOT/bin/kustomize" build "$FENCE_DIR" | "${KUBECTL[@]}" delete -f - >/dev/null
"$REPO_ROOT/hack/local-operator.sh" wait-fence "fence=no guard=no"
# The operator notices at its next check (every 2s) and stops provisioning.
for _ in $(seq 1 30); do
  grep -q 'provisioning is stopped' "$LOCAL_CLUSTER_DIR/logs/operator.log" && break
  sleep 0.5
done
unfenced=0; run_suite absent || unfenced=$?

# What the fence-deleted run's attacks left behind: with the fence gone, the operator's token put
# nsclaim's marks on foreign namespaces (kube-system among them), and a fence, this release's or the
# previous one, trusts the managed-by label of a namespace. An admin who fences again after such a
# window removes every mark nsclaim's record does not back (the operator reports them: Warning Event
# OwnershipUnverified); so does this script, as the admin, before the previous release's fence is judged.
"${KUBECTL[@]}" get namespaces -l tenancy.nsclaim.dev/managed-by=nsclaim --no-headers \
  -o custom-columns='NAME:.metadata.name,RECORD:.metadata.annotations.tenancy\.nsclaim\.dev/ownership' |
  awk '$2 == "<none>" { print $1 }' | while read -r ns; do
    "${KUBECTL[@]}" label namespace "$ns" tenancy.nsclaim.dev/managed-by- tenancy.nsclaim.dev/claim-uid- tenancy.nsclaim.dev/claim-namespace- >/dev/null
  done

# The previous release's fence, as its fence.yaml made it, with this release's RBAC still in place.
prevdir="$LOCAL_CLUSTER_DIR/previous-fence"
rm -rf "$prevdir" && mkdir -p "$prevdir"
cp "$REPO_ROOT"/internal/fence/previous/*.yaml "$REPO_ROOT/config/fence/base/kustomizeconfig.yaml" "$prevdir/"
printf 'namePrefix: nsclaim-operator-\nresources: [policy.yaml, binding.yaml, label-guard.yaml, label-guard-binding.yaml]\nconfigurations: [kustomizeconfig.yaml]\n' \
  > "$prevdir/kustomization.yaml"
"$REPO_ROOT/bin/kustomize" build "$prevdir" | "${KUBECTL[@]}" apply --server-side -f - >/dev/null
"$REPO_ROOT/hack/local-operator.sh" wait-fence "fence=yes guard=yes"
for _ in $(seq 1 30); do
  grep -q "Only the previous release's admission fence is in force" "$LOCAL_CLUSTER_DIR/logs/operator.log" && break
  sleep 0.5
done
PREVIOUS_TESTS=${PREVIOUS_TESTS:-'TestFenceState|TestPreviousFenceReportedNotIntact|TestProvisioningWorks|TestSleepAttacksAsTheOperator|TestFenceAllowsSleep|TestOperatorCannotCreatePrivilegedNamespace|TestOperatorCannotBindClusterRoleClusterWide|TestOperatorCannotWidenNamespaceWatcherRole|TestAttacksAsTheOperator|TestOperatorCannotAddFinalizerToForeignConfigMap'}
previous=0; run_suite previous -run "$PREVIOUS_TESTS" || previous=$?

[ -f "$RESULTS/table.md" ] && { echo; cat "$RESULTS/table.md"; }
[ "$fenced" -eq 0 ] && [ "$unfenced" -eq 0 ] && [ "$previous" -eq 0 ]
