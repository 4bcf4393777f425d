#!/usr/bin/env bash
# The whole test command (README command 2, called by .ci/run):
# lint, wheel build + fresh-venv smoke test, then every member's tests.
# Usage: ci/check.sh [NAME ...]  (names restrict the test matrix).
set -euo pipefail
cd "$(dirname "$0")/.."
start=$SECONDS
ci/lint.sh
ci/build.sh
status=0
ci/test.sh "$@" || status=$?
echo "ci/check.sh: finished in $((SECONDS - start)) s"
exit "$status"
