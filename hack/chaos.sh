#!/usr/bin/env bash
# Chaos runs of nsclaim: hack/bench.sh chaos, which starts a cluster of its own and runs the Go test
# TestChaos of test/bench against it (it fails on a broken invariant). See hack/bench.sh for the
# environment and test/bench/chaos.go (chaosFlags) for the flags (sizes, kill interval, scenarios).
set -euo pipefail
exec "$(dirname "${BASH_SOURCE[0]}")/bench.sh" chaos "$@"
