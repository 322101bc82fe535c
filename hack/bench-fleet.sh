#!/usr/bin/env bash
# make bench-fleet: the fleet bench (test/bench --fleet, docs/benchmarks.md "Fleet"). Starts a hub and
# three members as local control planes exactly as make test-fleet does (hack/lib/fleet.sh), then runs
# the bench program, which registers the members one by one and measures the hub's RSS per member
# cluster (--fleet-claims claims placed on each), then a burst of --fleet-burst claims across the three
# against a raw client making the same namespaces on the same three members at once (the usable
# ceiling). Figures are printed, never asserted. Stops everything it started.
# Usage: hack/bench-fleet.sh [test/bench flags, e.g. --fleet-claims=100 --fleet-burst=500]
# Environment: FLEET_DIR [tmp/fleet-bench], FLEET_PORT_BASE [12000: below the ephemeral ports, 32768 and up, that a client connection may hold], MANAGER_BIN [$FLEET_DIR/manager].
set -euo pipefail
REPO_ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$REPO_ROOT"
export FLEET_DIR=${FLEET_DIR:-$REPO_ROOT/tmp/fleet-bench}
export FLEET_PORT_BASE=${FLEET_PORT_BASE:-12000}
# The hub's metrics over plain HTTP on this machine, so the bench can read its work queue.
export HUB_ARGS="--metrics-secure=false ${HUB_ARGS:-}"
# shellcheck source=hack/lib/fleet.sh
source "$REPO_ROOT/hack/lib/fleet.sh"
trap fleet_down EXIT
fleet_up
go build -o "$FLEET_DIR/bench" ./test/bench
"$FLEET_DIR/bench" --fleet --fleet-dir "$FLEET_DIR" "$@"
