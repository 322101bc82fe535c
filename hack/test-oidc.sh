#!/usr/bin/env bash
# make test-oidc: keyless credentials end to end (test/oidc, docs/keyless.md). Starts the test OIDC
# issuer of test/oidc/issuer on loopback (TLS, discovery, JWKS, tokens shaped like GitHub Actions'),
# then a fresh local cluster whose kube-apiserver trusts it through an AuthenticationConfiguration
# (username "github:" + sub, group "github:repo:" + repository, only repositories of org/), then the
# operator under its own RBAC with config/fence (the fence and the creator-stamping policy), and runs
# test/oidc: a pipeline with nothing but its ID token claims a namespace, works there and nowhere else.
# The API server fetches the issuer's discovery document and keys at start-up, so the issuer starts
# first. Uses its own state directory and ports, and stops everything it started, pass or fail.
#
# Environment (defaults): OIDC_CLUSTER_DIR (<repo>/tmp/oidc-cluster), OIDC_APISERVER_PORT (17443),
#   OIDC_ETCD_CLIENT_PORT (29379), OIDC_ETCD_PEER_PORT (29380), OIDC_CONTROLLER_MANAGER_PORT (27257),
#   OIDC_OPERATOR_PROBE_PORT (21081), OIDC_OPERATOR_METRICS_PORT (21443), OIDC_ISSUER_PORT (17450),
#   OIDC_RUN (passed to `go test -run`), MANAGER_BIN (<repo>/bin/manager), KUBE_BIN_DIR, OPERATOR_ARGS.
set -euo pipefail
REPO_ROOT=$(cd "$(dirname "$0")/.." && pwd)
export LOCAL_CLUSTER_DIR=${OIDC_CLUSTER_DIR:-$REPO_ROOT/tmp/oidc-cluster}
export APISERVER_PORT=${OIDC_APISERVER_PORT:-17443} ETCD_CLIENT_PORT=${OIDC_ETCD_CLIENT_PORT:-29379}
export ETCD_PEER_PORT=${OIDC_ETCD_PEER_PORT:-29380} CONTROLLER_MANAGER_PORT=${OIDC_CONTROLLER_MANAGER_PORT:-27257}
export OPERATOR_PROBE_PORT=${OIDC_OPERATOR_PROBE_PORT:-21081} OPERATOR_METRICS_PORT=${OIDC_OPERATOR_METRICS_PORT:-21443}
export KUBE_BIN_DIR=${KUBE_BIN_DIR:-$REPO_ROOT/bin/k8s/1.37.1-linux-amd64}
ISSUER_ADDR=127.0.0.1:${OIDC_ISSUER_PORT:-17450}
AUDIENCE=nsclaim-test
# The issuer's files live next to the cluster's state: `reset` below clears both.
ISSUER_DIR="$LOCAL_CLUSTER_DIR/oidc"
ISSUER_PID=

cleanup() {
  "$REPO_ROOT/hack/local-operator.sh" stop || true
  "$REPO_ROOT/hack/local-cluster.sh" down || true
  if [ -n "$ISSUER_PID" ] && kill -0 "$ISSUER_PID" 2>/dev/null; then
    kill -TERM "$ISSUER_PID" 2>/dev/null || true
    wait "$ISSUER_PID" 2>/dev/null || true
  fi
}
trap cleanup EXIT

"$REPO_ROOT/hack/local-cluster.sh" reset >/dev/null
mkdir -p "$ISSUER_DIR"
go build -o "$ISSUER_DIR/issuer" ./test/oidc/issuer
"$ISSUER_DIR/issuer" --listen "$ISSUER_ADDR" --dir "$ISSUER_DIR" >"$ISSUER_DIR/issuer.log" 2>&1 &
ISSUER_PID=$!
for _ in $(seq 1 50); do
  [ -s "$ISSUER_DIR/ca.crt" ] && curl -fsS --cacert "$ISSUER_DIR/ca.crt" "https://$ISSUER_ADDR/.well-known/openid-configuration" >/dev/null 2>&1 && break
  kill -0 "$ISSUER_PID" 2>/dev/null || { echo "the OIDC issuer exited:" >&2; cat "$ISSUER_DIR/issuer.log" >&2; exit 1; }
  sleep 0.2
done
curl -fsS --cacert "$ISSUER_DIR/ca.crt" "https://$ISSUER_ADDR/.well-known/openid-configuration" >/dev/null

# What an admin adds for GitHub Actions (docs/keyless.md), with the test issuer in place of
# https://token.actions.githubusercontent.com.
{
  cat <<YAML
apiVersion: apiserver.config.k8s.io/v1
kind: AuthenticationConfiguration
jwt:
- issuer:
    url: https://$ISSUER_ADDR
    audiences: [$AUDIENCE]
    certificateAuthority: |
YAML
  sed 's/^/      /' "$ISSUER_DIR/ca.crt"
  cat <<'YAML'
  claimValidationRules:
  - expression: 'claims.repository.startsWith("org/")'
    message: only repositories of org may sign in
  claimMappings:
    username:
      expression: '"github:" + claims.sub'
    groups:
      expression: '["github:repo:" + claims.repository]'
YAML
} > "$ISSUER_DIR/authentication-config.yaml"

APISERVER_EXTRA_ARGS="${APISERVER_EXTRA_ARGS:-} --authentication-config=$ISSUER_DIR/authentication-config.yaml" \
  "$REPO_ROOT/hack/local-cluster.sh" up
"$REPO_ROOT/hack/local-operator.sh" start
status=0
KUBECONFIG="$LOCAL_CLUSTER_DIR/kubeconfig" NSCLAIM_OIDC_TOKEN_URL="https://$ISSUER_ADDR/token" \
  NSCLAIM_OIDC_REQUEST_TOKEN_FILE="$ISSUER_DIR/request-token" NSCLAIM_OIDC_CA_FILE="$ISSUER_DIR/ca.crt" \
  NSCLAIM_OIDC_AUDIENCE="$AUDIENCE" \
  go test ./test/oidc/ -count=1 -v -timeout 10m ${OIDC_RUN:+-run "$OIDC_RUN"} > "$LOCAL_CLUSTER_DIR/oidc.log" 2>&1 || status=$?
grep -E -- '^(--- |PASS|FAIL|ok)|^\s+--- ' "$LOCAL_CLUSTER_DIR/oidc.log" || true
if [ "$status" -ne 0 ]; then
  grep -E -A15 -- '--- FAIL' "$LOCAL_CLUSTER_DIR/oidc.log" >&2 || true
  echo "operator log tail:" >&2; tail -30 "$LOCAL_CLUSTER_DIR/logs/operator.log" >&2
  echo "issuer log tail:" >&2; tail -10 "$ISSUER_DIR/issuer.log" >&2
fi
exit "$status"
