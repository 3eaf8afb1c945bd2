#!/usr/bin/env bash
# Builds the unit tests (only) under sanitizers in a separate tree and runs them.
# Usage: scripts/sanitize.sh address   (ASan + UBSan)   |   scripts/sanitize.sh thread   (TSan)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
KIND="${1:-address}"
case "$KIND" in
  address) SAN="address;undefined"; DIR="$ROOT/build-asan" ;;
  thread) SAN="thread"; DIR="$ROOT/build-tsan" ;;
  *) echo "usage: $0 address|thread" >&2; exit 2 ;;
esac
"$ROOT/scripts/install-deps.sh"
BUILD_TARGET=onnx_light_unit_tests BUILD_TYPE=Debug "$ROOT/scripts/build.sh" "$DIR" -DONNX_LIGHT_SANITIZE="$SAN" -DONNX_LIGHT_BUILD_TESTS=ON \
  -DONNX_LIGHT_UNITY_LIBRARIES=ON
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=0" UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1"
cd "$DIR"
ctest --output-on-failure -j "${ONNX_LIGHT_JOBS:-$(nproc)}" -R "${2:-^unit/}"
