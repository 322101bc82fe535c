#!/usr/bin/env bash
# make test-local: the release manifests' install path (hack/test-release.sh), then the e2e suite
# (test/e2e) against a fresh local cluster with the operator running as its own process under the RBAC
# it ships with. Uses its own state directory and ports, so a cluster
# from `make local-up` is not disturbed, and stops everything it started, pass or fail.
# TEST_CLUSTER_DIR and TEST_*_PORT choose the state directory and ports; E2E_RUN, when set, is passed to
# `go test -run` to run only some tests (default: all); MANAGER_BIN picks the manager binary. The
# kubectl-nsclaim plugin is built into the state directory, and the e2e runs that binary (NSCLAIM_PLUGIN).
# E2E_BENCH, when set, is passed to `go test -bench` (E2E_BENCHTIME, default 5x), e.g. with E2E_RUN='^$'
# (make bench-plugin). E2E_TIMEOUT (default 20m) is go test's -timeout, e.g. for NSCLAIM_BUDGET_ROUNDS=20.
set -euo pipefail
REPO_ROOT=$(cd "$(dirname "$0")/.." && pwd)
export LOCAL_CLUSTER_DIR=${TEST_CLUSTER_DIR:-$REPO_ROOT/tmp/test-cluster}
export APISERVER_PORT=${TEST_APISERVER_PORT:-27443} ETCD_CLIENT_PORT=${TEST_ETCD_CLIENT_PORT:-23379}
export ETCD_PEER_PORT=${TEST_ETCD_PEER_PORT:-23380} CONTROLLER_MANAGER_PORT=${TEST_CONTROLLER_MANAGER_PORT:-21257}
export OPERATOR_PROBE_PORT=${TEST_OPERATOR_PROBE_PORT:-19081} OPERATOR_METRICS_PORT=${TEST_OPERATOR_METRICS_PORT:-19443}
export KUBE_BIN_DIR=${KUBE_BIN_DIR:-$REPO_ROOT/bin/k8s/1.37.1-linux-amd64}

cleanup() {
  "$REPO_ROOT/hack/local-operator.sh" stop || true
  "$REPO_ROOT/hack/local-cluster.sh" down || true
}
trap cleanup EXIT
"$REPO_ROOT/hack/local-cluster.sh" reset >/dev/null
mkdir -p "$LOCAL_CLUSTER_DIR/bin"
export NSCLAIM_PLUGIN=$LOCAL_CLUSTER_DIR/bin/kubectl-nsclaim
(cd "$REPO_ROOT" && go build -o "$NSCLAIM_PLUGIN" ./cmd/kubectl-nsclaim)
# An audit log of ConfigMap requests (hack/audit-policy.yaml), where the e2e joins a tenant's requests
# to its claim through the token's credential ID (on kind too: hack/kind-config.yaml).
AUDIT_DIR=$LOCAL_CLUSTER_DIR/audit
mkdir -p "$AUDIT_DIR"
cp "$REPO_ROOT/hack/audit-policy.yaml" "$AUDIT_DIR/policy.yaml"
export APISERVER_EXTRA_ARGS="${APISERVER_EXTRA_ARGS:-} --audit-policy-file=$AUDIT_DIR/policy.yaml --audit-log-path=$AUDIT_DIR/audit.log --audit-log-format=json --audit-log-mode=blocking --audit-log-maxsize=0"
"$REPO_ROOT/hack/local-cluster.sh" up
# First, on the fresh cluster, the release manifests alone: install.yaml, then fence.yaml, and a claim is
# Ready within 30 s of the fence's apply (hack/test-release.sh; it removes what it made, but the fence).
"$REPO_ROOT/hack/test-release.sh" on-cluster
# The ConfigMap protocol is on, as a Deployment or Subscription switches it on. The test cluster shares
# its machine with others: a Lease renewal can take longer than the shipped 10 s deadline there (at load
# 35 the operator lost its Lease and exited), so the operator renews within 40 s (a 60 s Lease) here;
# should it still lose the Lease, hack/local-operator.sh starts it again, as the kubelet would.
export OPERATOR_ARGS="--leader-election-lease-duration=60s --leader-election-renew-deadline=40s ${OPERATOR_ARGS:-} --requests-namespace nsplease-requests --requests-class nsplease"
"$REPO_ROOT/hack/local-operator.sh" start
status=0
E2E_AUDIT_LOG="$AUDIT_DIR/audit.log" KUBECONFIG="$LOCAL_CLUSTER_DIR/kubeconfig" KUBECTL="$KUBE_BIN_DIR/kubectl" KUBECACHEDIR="$LOCAL_CLUSTER_DIR/kubecache" \
  go test ./test/e2e/ -count=1 -v -timeout "${E2E_TIMEOUT:-20m}" ${E2E_RUN:+-run "$E2E_RUN"} \
  ${E2E_BENCH:+-bench "$E2E_BENCH" -benchtime "${E2E_BENCHTIME:-5x}"} > "$LOCAL_CLUSTER_DIR/e2e.log" 2>&1 || status=$?
grep -E -- '^(--- |PASS|FAIL|ok|Benchmark)|^\s+--- |_bench_test.go' "$LOCAL_CLUSTER_DIR/e2e.log" || true
if [ "$status" -ne 0 ]; then
  echo "e2e failed; operator log tail:" >&2; tail -30 "$LOCAL_CLUSTER_DIR/logs/operator.log" >&2
  grep -E -A15 -- '--- FAIL' "$LOCAL_CLUSTER_DIR/e2e.log" >&2 || true
fi
exit "$status"
