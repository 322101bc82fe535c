#!/usr/bin/env bash
# Chaos runs of nsclaim: hack/bench.sh chaos. See hack/bench.sh for the environment and
# `go run ./cmd/bench chaos -h` for the flags (sizes, kill interval, which scenarios).
set -euo pipefail
exec "$(dirname "${BASH_SOURCE[0]}")/bench.sh" chaos "$@"
