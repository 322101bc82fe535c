#!/usr/bin/env bash
# make test-fleet: a fleet hub and three member clusters as local control planes (hack/lib/fleet.sh).
# The test (test/fleet) registers the members, acts as a pipeline identity on the hub and checks
# placement, NotReady and fence-less members, a member away and back, and the invariants on every
# member. Stops everything it started, pass or fail.
# Environment: FLEET_DIR [tmp/fleet], FLEET_PORT_BASE [30000] (cluster i uses FLEET_PORT_BASE+100*i+{43,57,79,80,81,44}),
#   MANAGER_BIN [tmp/fleet/manager, built here], FLEET_SHARE_CLAIMS [30: the shares scenario's claim count; the
#   issue's is 300, and go test's timeout grows by a minute per 15 claims, for their release].
set -euo pipefail
REPO_ROOT=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=hack/lib/fleet.sh
source "$REPO_ROOT/hack/lib/fleet.sh"
trap fleet_down EXIT
# The hub writes a Ready claim's credentials Secret again every --credentials-check-interval (10m by
# default): short here, so the test sees a deleted one written again.
export HUB_ARGS="--credentials-check-interval=20s ${HUB_ARGS:-}"
fleet_up

status=0
start=$(date +%s)
FLEET_DIR="$FLEET_DIR" KUBE_BIN_DIR="$KUBE_BIN_DIR" FLEET_PORT_BASE="$BASE" \
  go test "$REPO_ROOT/test/fleet/" -count=1 -v -timeout "$((15 + ${FLEET_SHARE_CLAIMS:-30} / 15))m" > "$FLEET_DIR/fleet-test.log" 2>&1 || status=$?
grep -E -- '^(--- |PASS|FAIL|ok)|^\s+--- |fleet_test.go' "$FLEET_DIR/fleet-test.log" || true
echo "test/fleet took $(( $(date +%s) - start )) s"
if [ "$status" -ne 0 ]; then
  echo "logs: $FLEET_DIR/{hub,m1,m2,m3}/logs/operator.log" >&2
fi
exit "$status"
