#!/usr/bin/env bash
# The workspace members as a JSON list, for the GitHub Actions test matrix.
set -euo pipefail
cd "$(dirname "$0")/.."
uv workspace list | python3 -c 'import json, sys; print(json.dumps(sys.stdin.read().split()))'
