#!/usr/bin/env bash
# Configures and builds one build tree. Usage: scripts/build.sh BUILD_DIR [extra cmake args...]
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="$1"; shift
JOBS="${ONNX_LIGHT_JOBS:-$(nproc)}"
cmake -S "$ROOT" -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE="${BUILD_TYPE:-Release}" \
  -DONNX_LIGHT_WERROR=ON -DPython3_EXECUTABLE=/usr/bin/python3 "$@" >/dev/null
cmake --build "$BUILD_DIR" -j "$JOBS" ${BUILD_TARGET:+--target "$BUILD_TARGET"}
