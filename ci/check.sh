#!/usr/bin/env bash
# The whole test command (README command 2, called by .ci/run):
# lint, the release dry run of every member (build, twine check, install the wheels into a
# fresh venv, run a shipped config from an empty folder), then every member's tests.
# Usage: ci/check.sh [NAME ...]  (names restrict the test matrix).
set -euo pipefail
cd "$(dirname "$0")/.."
start=$SECONDS
ci/lint.sh
python3 ci/release_check.py --one-venv
status=0
ci/test.sh "$@" || status=$?
echo "ci/check.sh: finished in $((SECONDS - start)) s"
exit "$status"
