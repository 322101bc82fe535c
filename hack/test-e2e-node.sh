#!/usr/bin/env bash
# make test-e2e, on kind (needs Docker; it cannot run on the machine the local node runs on): what make
# test-node proves on the local node, against the operator make test-e2e deployed on the kind cluster:
#   - test/node's cases. The pipeline and workload images are the ones hack/images.sh assembles for the
#     local node, loaded into kind (`kind load image-archive`); the manager is make test-e2e's image.
#     Clients outside the cluster and the pipeline Pod both use the handed kubeconfig, so its server
#     must be reachable from both: the kind control-plane container's address on Docker's network (Linux
#     hosts route to it), set as NSCLAIM_KUBECONFIG_SERVER. kubeadm puts that address in the API
#     server's certificate.
#   - TestMetricsThroughService scrapes the metrics Service's ClusterIP, which only the node's own
#     network reaches (its kube-proxy rules): the same test binary runs in the node container's network
#     namespace (nsenter --net), with a kubeconfig naming the API server at the node's address. The
#     bearer token, TLS and the Service's endpoints are what it checks, as on the local node.
#   - operator-sdk scorecard, its tests as Pods (hack/lib/scorecard.sh), the images loaded as above.
#   - the node container's memory (docker stats), in place of test-node's RSS line.
#
# Environment: KIND, KIND_CLUSTER, KUBECTL, KUBECONFIG (kind's), OPERATOR_SDK, NSCLAIM_OPERATOR_NAMESPACE
# (nsclaim-operator-system).
set -euo pipefail
REPO_ROOT=$(cd "$(dirname "$0")/.." && pwd)
: "${KIND:?}" "${KIND_CLUSTER:?}" "${KUBECTL:?}" "${KUBECONFIG:?}" "${OPERATOR_SDK:?}"
# shellcheck source=hack/lib/scorecard.sh
source "$REPO_ROOT/hack/lib/scorecard.sh"
NS=${NSCLAIM_OPERATOR_NAMESPACE:-nsclaim-operator-system}
NODE=$KIND_CLUSTER-control-plane
work=$REPO_ROOT/tmp/kind-node-test
images=$REPO_ROOT/tmp/kind-node-images
t0=$SECONDS
say() { echo "test-e2e-node: [$((SECONDS - t0))s] $*" >&2; }
mkdir -p "$work"
"$REPO_ROOT/hack/images.sh" "$images" httpd pipeline manager untar scorecard-test
for i in httpd pipeline untar scorecard-test; do "$KIND" load image-archive "$images/$i.tar" --name "$KIND_CLUSTER"; done
ip=$(docker inspect -f '{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}' "$NODE")
server=https://$ip:6443
"$KUBECTL" -n "$NS" set env deploy/nsclaim-operator-controller-manager NSCLAIM_KUBECONFIG_SERVER="$server"
"$KUBECTL" -n "$NS" rollout status deploy/nsclaim-operator-controller-manager --timeout=3m
(cd "$REPO_ROOT" && go test -c -o "$work/node.test" ./test/node/)
export NODE_APISERVER_URL=$server NODE_OPERATOR_NAMESPACE=$NS NODE_PIPELINE_IMAGE=localhost/nsclaim/pipeline:dev \
  NODE_WORKLOAD_IMAGE=localhost/nsclaim/httpd:dev NODE_MANAGER_IMAGE_TAR=$images/manager.tar NSCLAIM_REQUIRE_NODE=1
status=0
# go test runs a test binary in its package's directory.
(cd "$REPO_ROOT/test/node" && "$work/node.test" -test.v -test.count=1 -test.timeout 15m \
  -test.skip '^TestMetricsThroughService$') || status=1
say "TestMetricsThroughService in the node's network namespace"
sed "s|^\(\s*server:\).*|\1 $server|" "$KUBECONFIG" >"$work/kubeconfig"
(cd "$REPO_ROOT/test/node" && KUBECONFIG=$work/kubeconfig nsenter --net="/proc/$(docker inspect -f '{{.State.Pid}}' "$NODE")/ns/net" \
  "$work/node.test" -test.v -test.count=1 -test.timeout 5m -test.run '^TestMetricsThroughService$') || status=1
say "operator-sdk scorecard: the bundle's tests as Pods on the kind node"
scorecard_pods "$KUBECONFIG" "$work" || status=1
say "node container memory: $(docker stats --no-stream --format '{{.MemUsage}}' "$NODE")"
exit "$status"
