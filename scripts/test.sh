#!/usr/bin/env bash
# Quick start, step 2: install dependencies, build everything with tests, and run them all.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$ROOT/scripts/install-deps.sh"
"$ROOT/scripts/build.sh" "$ROOT/build-test" -DONNX_LIGHT_BUILD_TESTS=ON -DONNX_LIGHT_BUILD_PYTHON=ON
cd "$ROOT/build-test"
ctest --output-on-failure -j "${ONNX_LIGHT_JOBS:-$(nproc)}" "$@"
