#!/usr/bin/env bash
# Copyright 2026 The nsclaim Authors.
#
# Licensed under the Apache License, Version 2.0 (the "License");
# you may not use this file except in compliance with the License.
# You may obtain a copy of the License at
#
#     http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS,
# WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
# See the License for the specific language governing permissions and
# limitations under the License.

# Runs the scorecard's basic and OLM tests against ./bundle without a cluster.
#
# Usage: hack/scorecard-local.sh SCORECARD_TEST_BINARY [BUNDLE_DIR]
#
# `operator-sdk scorecard` runs each test as a Pod of the scorecard-test image, which reads the
# bundle from the fixed path /bundle. The basic and olm tests are static checks of the bundle files,
# so this script runs the same scorecard-test program directly: in a private mount namespace
# (unshare -m) it bind-mounts BUNDLE_DIR on /bundle, runs the program once per test listed in the
# bundle's scorecard configuration (bundle/tests/scorecard/config.yaml, rendered from
# config/scorecard by `make bundle`), reads `.results[].state` from each JSON answer, prints a table
# and exits non-zero unless every result is `pass`. The program itself exits 0 whatever the result.
#
# Needs root (for unshare -m and mount), util-linux and python3. Nothing is mounted outside the
# private mount namespace; /bundle is created if missing and removed again afterwards.

set -euo pipefail

if [[ $# -lt 1 || $# -gt 2 ]]; then
  echo "Usage: $0 SCORECARD_TEST_BINARY [BUNDLE_DIR]" >&2
  exit 2
fi

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SCORECARD_TEST="$(realpath -- "$1")"
BUNDLE_DIR="$(realpath -- "${2:-$REPO_ROOT/bundle}")"
CONFIG="$BUNDLE_DIR/tests/scorecard/config.yaml"
MOUNT_POINT=/bundle

if [[ ! -x "$SCORECARD_TEST" ]]; then
  echo "scorecard-test binary $SCORECARD_TEST is missing or not executable (make scorecard-test)" >&2
  exit 2
fi
if [[ ! -f "$CONFIG" ]]; then
  echo "$CONFIG is missing (make bundle)" >&2
  exit 2
fi
if [[ "$(id -u)" -ne 0 ]]; then
  echo "$0 needs root for unshare -m and mount --bind; run it with sudo" >&2
  exit 2
fi

WORK_DIR="$(mktemp -d)"
CREATED_MOUNT_POINT=false
cleanup() {
  rm -rf -- "$WORK_DIR"
  if [[ "$CREATED_MOUNT_POINT" == true ]]; then
    rmdir -- "$MOUNT_POINT" 2>/dev/null || true
  fi
}
trap cleanup EXIT

# The tests: the second entrypoint word of every test whose program is scorecard-test. Any other
# program is a custom test that needs its own image and a cluster: refuse rather than skip it.
python3 - "$CONFIG" >"$WORK_DIR/tests" <<'EOF'
import sys

path = sys.argv[1]
try:
    import yaml
except ImportError:
    yaml = None

if yaml is not None:
    with open(path) as f:
        config = yaml.safe_load(f)
    entrypoints = [t.get("entrypoint") or [] for s in config.get("stages") or [] for t in s.get("tests") or []]
else:
    # operator-sdk writes the configuration in one fixed layout:
    #   - entrypoint:
    #     - scorecard-test
    #     - <test>
    entrypoints, current = [], None
    for line in open(path):
        stripped = line.strip()
        if stripped.startswith("- entrypoint:") or stripped == "entrypoint:":
            current = []
            entrypoints.append(current)
        elif current is not None and stripped.startswith("- ") and not stripped.endswith(":"):
            current.append(stripped[2:].strip().strip("'\""))
        else:
            current = None

for ep in entrypoints:
    if len(ep) != 2 or ep[0] != "scorecard-test":
        sys.exit("unsupported scorecard test entrypoint %r: only scorecard-test's built-in tests run without a cluster" % (ep,))
    print(ep[1])
EOF

if [[ ! -s "$WORK_DIR/tests" ]]; then
  echo "no tests listed in $CONFIG" >&2
  exit 1
fi

if [[ ! -d "$MOUNT_POINT" ]]; then
  mkdir -- "$MOUNT_POINT"
  CREATED_MOUNT_POINT=true
fi

# One private mount namespace for all tests; the bind mount disappears with it. The script's
# variables expand inside the inner shell, from its positional parameters.
# shellcheck disable=SC2016
unshare --mount --propagation private -- bash -euo pipefail -c '
  mount --bind "$1" "$2"
  cd /
  while read -r test; do
    rc=0
    "$3" "$test" >"$4/$test.json" 2>"$4/$test.stderr" || rc=$?
    echo "$rc" >"$4/$test.rc"
  done <"$4/tests"
' scorecard-local "$BUNDLE_DIR" "$MOUNT_POINT" "$SCORECARD_TEST" "$WORK_DIR"

python3 - "$WORK_DIR" <<'EOF'
import json
import os
import sys

work = sys.argv[1]
tests = [t for t in open(os.path.join(work, "tests")).read().split() if t]
rows, details, failed = [], [], False
for test in tests:
    rc = open(os.path.join(work, test + ".rc")).read().strip()
    stderr = open(os.path.join(work, test + ".stderr")).read().strip()
    try:
        with open(os.path.join(work, test + ".json")) as f:
            results = json.load(f).get("results") or []
    except (OSError, ValueError) as err:
        results = []
        stderr = (stderr + "\n" if stderr else "") + "no JSON answer: %s" % err
    if rc != "0" or not results:
        failed = True
        rows.append((test, "error"))
        details.append((test, "error", ["exit code %s" % rc] + stderr.splitlines(), []))
        continue
    for result in results:
        state = result.get("state") or "unknown"
        rows.append((result.get("name") or test, state))
        if state != "pass":
            failed = True
        # Suggestions of passing tests are hints only (for example that the examples carry no
        # status); show them for tests that did not pass.
        if state != "pass" or result.get("errors"):
            details.append((result.get("name") or test, state, result.get("errors") or [], result.get("suggestions") or []))

width = max(len("TEST"), *(len(name) for name, _ in rows))
print("%-*s  %s" % (width, "TEST", "STATE"))
for name, state in rows:
    print("%-*s  %s" % (width, name, state))
for name, state, errors, suggestions in details:
    print("\n%s (%s):" % (name, state))
    for e in errors:
        print("  error: %s" % e)
    for s in suggestions:
        print("  suggestion: %s" % s)
if failed:
    print("\nscorecard: some tests did not pass", file=sys.stderr)
    sys.exit(1)
print("\nscorecard: all %d tests passed" % len(rows))
EOF
