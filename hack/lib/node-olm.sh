# shellcheck shell=bash
# OLM on a local node, shared by hack/test-node-olm.sh and hack/test-release-rehearsal.sh. The caller
# defines kc (kubectl of the cluster) and say, and sets REPO_ROOT and STATE (its state directory).

# wait_established FILE: kubectl wait fails ("accessor error") on a CRD that has no conditions yet.
wait_established() {
  for _ in $(seq 1 60); do
    kc wait --for condition=established --timeout=60s -f "$1" >/dev/null 2>&1 && return 0
    sleep 0.5
  done
  kc wait --for condition=established --timeout=1s -f "$1" >/dev/null
}

# olm_up OLM_IMAGE OLM_TOOLS: OLM's CRDs, then its olm and catalog operators as Pods: OLM's quickstart
# manifest (deploy/upstream/quickstart/olm.yaml, as `operator-sdk olm install` applies it, of the OLM
# module pinned in hack/tools/olm) with OLM_IMAGE (the image assembled by hack/images.sh olm, in the
# node's registry) for OLM's; the bundle unpack Job's opm image is OLM_TOOLS (opm alpha bundle
# extract), its util image OLM's own (cp, cpb). Left out: the packageserver CSV (the packages API;
# nothing here reads it) and the operatorhub.io CatalogSource. Copied CSVs are disabled.
olm_up() {
  local olm_image=$1 olm_tools=$2 olm_dir
  olm_dir=$(go -C "$REPO_ROOT/hack/tools/olm" list -m -f '{{.Dir}}' github.com/operator-framework/operator-lifecycle-manager)
  kc apply --server-side -f "$olm_dir/deploy/chart/crds/" >/dev/null
  wait_established "$olm_dir/deploy/chart/crds/"
  printf 'apiVersion: operators.coreos.com/v1\nkind: OLMConfig\nmetadata: {name: cluster}\nspec: {features: {disableCopiedCSVs: true}}\n' |
    kc apply --server-side -f - >/dev/null
  # The catalog operator of v0.46.0 takes only --flags (cobra); the quickstart still writes -namespace.
  awk 'BEGIN { RS = "\n---\n" } !/kind: ClusterServiceVersion/ && !/kind: CatalogSource/ { print "---"; print }' \
    "$olm_dir/deploy/upstream/quickstart/olm.yaml" |
    sed -e "s|quay.io/operator-framework/olm@sha256:[0-9a-f]*|$olm_image|" \
      -e "s|^\( *\)- '-\([a-zA-Z][a-zA-Z-]*\)'\$|\1- --\2|" -e "s|^\( *\)- -\([a-zA-Z]\)|\1- --\2|" \
      -e "s|^\( *\)- --configmapServerImage=.*|&\n\1- --opmImage=$olm_tools|" >"$STATE/olm.yaml"
  kc apply --server-side -f "$STATE/olm.yaml" >/dev/null
  kc -n olm rollout status deployment/olm-operator --timeout=180s >/dev/null
  kc -n olm rollout status deployment/catalog-operator --timeout=180s >/dev/null
  say "OLM's operators run as Pods: $(kc -n olm get pods -o jsonpath='{range .items[*]}{.metadata.name} {.status.phase}, {end}')"
}

# serve_catalog IMAGE: a catalog Pod (opm serve: the catalog image's own entrypoint) behind the Service
# olm/nsclaim-catalog, running IMAGE; returns once it is ready.
serve_catalog() {
  kc apply --server-side -f - >/dev/null <<YAML
apiVersion: apps/v1
kind: Deployment
metadata: {name: nsclaim-catalog, namespace: olm}
spec:
  selector: {matchLabels: {app: nsclaim-catalog}}
  strategy: {type: Recreate}
  template:
    metadata: {labels: {app: nsclaim-catalog}}
    spec:
      automountServiceAccountToken: false
      securityContext: {runAsNonRoot: true, seccompProfile: {type: RuntimeDefault}}
      containers:
      - name: opm
        image: $1
        ports: [{containerPort: 50051, name: grpc}]
        readinessProbe: {tcpSocket: {port: 50051}, periodSeconds: 1}
        securityContext: {allowPrivilegeEscalation: false, capabilities: {drop: [ALL]}}
---
apiVersion: v1
kind: Service
metadata: {name: nsclaim-catalog, namespace: olm}
spec:
  selector: {app: nsclaim-catalog}
  ports: [{name: grpc, port: 50051, targetPort: 50051}]
YAML
  kc -n olm rollout status deployment/nsclaim-catalog --timeout=120s >/dev/null
  say "catalog Pod serves $1 ($(kc -n olm get pods -l app=nsclaim-catalog -o jsonpath='{.items[0].metadata.name} on {.items[0].spec.nodeName}'))"
}
