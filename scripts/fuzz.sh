#!/usr/bin/env bash
# Builds the libFuzzer targets (one per parser we own: .npy, TensorProto, the tuning cache) with
# clang under ASan+UBSan, then runs each for a bounded, seeded smoke run.
# Usage: scripts/fuzz.sh [RUNS]   (default 20000 inputs per target; FUZZ_SECONDS=N runs N s instead)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
RUNS="${1:-20000}"
DIR="$ROOT/build-fuzz"
ONNX_LIGHT_EXTRA_PACKAGES="clang-14 libclang-rt-14-dev" "$ROOT/scripts/install-deps.sh"
cmake -S "$ROOT" -B "$DIR" -G Ninja -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DONNX_LIGHT_BUILD_FUZZ=ON -DONNX_LIGHT_BUILD_TESTS=OFF >/dev/null
TARGETS=(fuzz_npy fuzz_tensor_proto fuzz_cache_file)
cmake --build "$DIR" -j "${ONNX_LIGHT_JOBS:-$(nproc)}" --target "${TARGETS[@]}"
for t in "${TARGETS[@]}"; do
  corpus="$ROOT/fuzz/corpus/${t#fuzz_}"
  args=(-seed=1)
  if [[ -n "${FUZZ_SECONDS:-}" ]]; then args+=(-max_total_time="$FUZZ_SECONDS"); else args+=(-runs="$RUNS"); fi
  echo "fuzz.sh: $t ${args[*]}" >&2
  if [[ -d "$corpus" ]]; then
    scratch="$(mktemp -d)"
    "$DIR/fuzz/$t" "${args[@]}" "$scratch" "$corpus"
    rm -rf "$scratch"
  else
    "$DIR/fuzz/$t" "${args[@]}"
  fi
done
