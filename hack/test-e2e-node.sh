#!/usr/bin/env bash
# make test-e2e, on kind (needs Docker; it cannot run on the machine the local node runs on): test/node,
# the cases make test-node runs on the local node, against the operator make test-e2e deployed on the
# kind cluster. The pipeline and workload images are the ones hack/images.sh assembles for the local
# node, loaded into kind (`kind load image-archive`); the manager is make test-e2e's docker-build.
#
# Clients outside the cluster and the pipeline Pod both use the handed kubeconfig, so its server must
# be reachable from both: the kind control-plane container's address on Docker's network (Linux hosts
# route to it), set as NSCLAIM_KUBECONFIG_SERVER. kubeadm puts that address in the API server's
# certificate.
#
# Not run on kind: TestMetricsThroughService scrapes the metrics Service's ClusterIP from the test
# process, which only a host running the node's kube-proxy can reach (on kind the host cannot).
#
# Environment: KIND, KIND_CLUSTER, KUBECTL, KUBECONFIG (kind's), NSCLAIM_OPERATOR_NAMESPACE
# (nsclaim-operator-system).
set -euo pipefail
REPO_ROOT=$(cd "$(dirname "$0")/.." && pwd)
: "${KIND:?}" "${KIND_CLUSTER:?}" "${KUBECTL:?}" "${KUBECONFIG:?}"
NS=${NSCLAIM_OPERATOR_NAMESPACE:-nsclaim-operator-system}
images=$REPO_ROOT/tmp/kind-node-images
"$REPO_ROOT/hack/images.sh" "$images" httpd pipeline manager
for i in httpd pipeline; do "$KIND" load image-archive "$images/$i.tar" --name "$KIND_CLUSTER"; done
ip=$(docker inspect -f '{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}' "$KIND_CLUSTER-control-plane")
server=https://$ip:6443
"$KUBECTL" -n "$NS" set env deploy/nsclaim-operator-controller-manager NSCLAIM_KUBECONFIG_SERVER="$server"
"$KUBECTL" -n "$NS" rollout status deploy/nsclaim-operator-controller-manager --timeout=3m
NODE_APISERVER_URL=$server NODE_OPERATOR_NAMESPACE=$NS NODE_PIPELINE_IMAGE=localhost/nsclaim/pipeline:dev \
  NODE_WORKLOAD_IMAGE=localhost/nsclaim/httpd:dev NODE_MANAGER_IMAGE_TAR=$images/manager.tar NSCLAIM_REQUIRE_NODE=1 \
  go test "$REPO_ROOT/test/node/" -count=1 -v -timeout 15m -skip '^TestMetricsThroughService$'
