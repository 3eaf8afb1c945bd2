#!/usr/bin/env bash
# Quick start, step 1: install dependencies, build, and run the main job on the default cache.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$ROOT/scripts/install-deps.sh"
"$ROOT/scripts/build.sh" "$ROOT/build-release" -DONNX_LIGHT_BUILD_TESTS=OFF
TOOL="$ROOT/build-release/apps/onnx-light-tune/onnx-light-tune"
echo "== $TOOL run examples/abs.onnxtxt --input x=random --dim N=65536 --repeat 50 --profile" >&2
"$TOOL" run "$ROOT/examples/abs.onnxtxt" --input x=random --dim N=65536 --repeat 50 --warmup 5 --profile
