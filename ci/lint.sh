#!/usr/bin/env bash
# Lint: the lock matches every pyproject, ruff check and ruff format are clean, and the
# GitHub workflows validate against their schema.
set -euo pipefail
cd "$(dirname "$0")/.."
echo "=== uv lock --check"
uv lock --check
echo "=== ruff check"
uv run --locked --only-group dev ruff check .
echo "=== ruff format --check"
uv run --locked --only-group dev ruff format --check .
echo "=== GitHub workflows against their schema"
uv run --locked --only-group dev check-jsonschema --builtin-schema vendor.github-workflows .github/workflows/*.yml
