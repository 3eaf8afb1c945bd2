#!/usr/bin/env bash
# Soak (issue 18): 100,000 runs of a small model and 1,000 of a CNN (10,000 when each 100 runs
# build a new session) in one process each, in the
# three ways bench/soak_bench.cc runs them; RSS must stay flat (growth = end - after the first
# tenth of the runs). Usage: bench/soak.sh BUILD_DIR [OUT.tsv]
# BUILD_DIR was configured with -DONNX_LIGHT_BUILD_BENCH=ON (the soak_bench target is built here).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="$1"
OUT="${2:-/dev/stdout}"
cmake --build "$BUILD" --target soak_bench >/dev/null
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
# Small: the seed's Abs over 1,000 floats. CNN: the MobileNetV3-style model of the optimizer
# bench at 224x224 (Conv/BN/HardSwish, depthwise, squeeze-excite, Gemm head).
printf '<ir_version: 10, opset_import: ["" : 18]>\nagraph (float[1000] x) => (float[1000] y) { y = Abs(x) }\n' >"$WORK/abs.onnxtxt"
/usr/bin/python3 "$ROOT/bench/mobilenet_like.py" "$WORK/cnn.onnx" 224 224 >/dev/null
{
  "$BUILD/bench/soak_bench" "$WORK/abs.onnxtxt" 100000 --threads 1
  "$BUILD/bench/soak_bench" "$WORK/cnn.onnx" 1000 --threads 2 --forms context,alloc | tail -n +2
  # A new session every 100 runs: the first ~20 sessions raise malloc's high-water mark (arenas
  # of the pool threads), so this form runs 10,000 (100 sessions) and is read after its tenth.
  "$BUILD/bench/soak_bench" "$WORK/cnn.onnx" 10000 --threads 2 --forms sessions | tail -n +2
} >"$OUT"
