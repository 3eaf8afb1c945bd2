#!/usr/bin/env bash
# Quick start, step 1: install dependencies, build, and run the main job on the default cache.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$ROOT/scripts/install-deps.sh"
"$ROOT/scripts/build.sh" "$ROOT/build-release" -DONNX_LIGHT_BUILD_TESTS=OFF
TOOL="$ROOT/build-release/apps/onnx-light-tune/onnx-light-tune"
# The main job: calibrate Abs and save it to the default cache, then show what the cache holds.
echo "== onnx-light-tune calibrate Abs --save" >&2
"$TOOL" calibrate Abs --save
echo "== onnx-light-tune inspect" >&2
# A low-confidence calibration (a noisy machine) is not saved, so the cache may not exist yet.
"$TOOL" inspect || echo "nothing saved: see the calibrate diagnostics above (--force saves a low-confidence result)" >&2
