#!/usr/bin/env bash
# Lint: the lock matches every pyproject, ruff check and ruff format are clean.
set -euo pipefail
cd "$(dirname "$0")/.."
echo "=== uv lock --check"
uv lock --check
echo "=== ruff check"
uv run --locked --only-group dev ruff check .
echo "=== ruff format --check"
uv run --locked --only-group dev ruff format --check .
