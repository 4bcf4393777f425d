#!/usr/bin/env bash
# Per-member test matrix: ci/test.sh [NAME ...]. See ci/test_matrix.py.
set -euo pipefail
cd "$(dirname "$0")/.."
exec python3 ci/test_matrix.py "$@"
