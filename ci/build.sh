#!/usr/bin/env bash
# Build every workspace member's wheel as users get it (--no-sources), then install
# the icml26-shared wheel plus one package wheel into a fresh venv and check that
# their commands answer. Usage: ci/build.sh [PACKAGE]  (default: the first package).
set -euo pipefail
cd "$(dirname "$0")/.."
dist=$(mktemp -d)
venv=$(mktemp -d)
trap 'rm -rf "$dist" "$venv"' EXIT

for name in $(uv workspace list); do
  echo "=== uv build --package $name --no-sources"
  uv build --quiet --package "$name" --no-sources --wheel --out-dir "$dist"
done
ls -1 "$dist"

pkg=${1:-$(uv workspace list | grep -vx icml26-shared | head -n 1 || true)}
uv venv --quiet --python 3.11 "$venv/env"
wheels=("$dist"/icml26_shared-*.whl)
if [ -n "$pkg" ]; then
  wheels+=("$dist"/"${pkg//-/_}"-*.whl)
fi
echo "=== fresh venv: install ${wheels[*]##*/}"
# Only the wheels built above for our own distributions; everything else from PyPI.
uv pip install --quiet --python "$venv/env/bin/python" "${wheels[@]}"
"$venv/env/bin/icml26" list
if [ -n "$pkg" ]; then
  "$venv/env/bin/$pkg" --help >/dev/null
  echo "$pkg --help: ok"
fi
echo "build smoke test: ok"
