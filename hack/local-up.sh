#!/usr/bin/env bash
# make local-up: a local cluster with the operator running under its own identity, the sample class
# and claim applied, and the claim Ready.
set -euo pipefail
REPO_ROOT=$(cd "$(dirname "$0")/.." && pwd)
STATE=$(realpath -m "${LOCAL_CLUSTER_DIR:-$REPO_ROOT/tmp/local-cluster}")
KUBECTL="${KUBE_BIN_DIR:-$REPO_ROOT/bin/k8s/1.37.1-linux-amd64}/kubectl"
export KUBECACHEDIR="$STATE/kubecache"
"$REPO_ROOT/hack/local-cluster.sh" up
"$REPO_ROOT/hack/local-operator.sh" start
k() { "$KUBECTL" --kubeconfig "$STATE/kubeconfig" "$@"; }
k apply -k "$REPO_ROOT/config/samples" -n default
k wait --for=condition=Ready namespaceclaim/sample -n default --timeout=120s
k get namespaceclaims -n default
cat <<TXT

The operator runs under its own ServiceAccount (log: $STATE/logs/operator.log).
  export KUBECONFIG=$STATE/kubeconfig
  kubectl get namespaceclaims -A
  kubectl get secret sample-kubeconfig -n default -o jsonpath='{.data.kubeconfig}' | base64 -d > /tmp/sample.kubeconfig
Stop everything with: make local-down
TXT
