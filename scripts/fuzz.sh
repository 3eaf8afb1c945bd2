#!/usr/bin/env bash
# Builds the libFuzzer targets (one per parser we own: .npy, TensorProto, the tuning cache, the model
# loader through session creation, the ONNX text syntax) and the unit tests on the same libraries with
# clang under ASan+UBSan, runs the unit tests, then runs each target for a bounded, seeded run starting
# from fuzz/corpus/<parser>/
# (valid files the mutations grow from; new finds go to a scratch directory, never into the repo).
# Usage: scripts/fuzz.sh [SECONDS]   (default 30 s per target; FUZZ_RUNS=N stops after N inputs instead)
# CI runs `scripts/fuzz.sh 20`; for a longer hunt run `scripts/fuzz.sh 600` (10 minutes per target).
# A crash leaves crash-<sha1> in the working directory: add it to fuzz/corpus/<parser>/ (the
# fuzz-replay ctest then replays it in every build) once fixed.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SECONDS_PER_TARGET="${1:-30}"
DIR="$ROOT/build-fuzz"
ONNX_LIGHT_EXTRA_PACKAGES="clang-14 libclang-rt-14-dev" "$ROOT/scripts/install-deps.sh"
# Debug (-O0): compiling the instrumented libruntime at -O2 costs minutes of CI's 40 on 2 cores, and a
# bounded run's value is in the sanitizers' checks more than in executions per second.
# FUZZ_BUILD_TYPE overrides.
cmake -S "$ROOT" -B "$DIR" -G Ninja -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 \
  -DCMAKE_BUILD_TYPE="${FUZZ_BUILD_TYPE:-Debug}" -DONNX_LIGHT_BUILD_FUZZ=ON -DONNX_LIGHT_BUILD_TESTS=OFF \
  -DONNX_LIGHT_UNITY_LIBRARIES=ON >/dev/null
TARGETS=(fuzz_npy fuzz_tensor_proto fuzz_cache_file fuzz_model fuzz_model_text fuzz_host_json)
cmake --build "$DIR" -j "${ONNX_LIGHT_JOBS:-$(nproc)}" --target "${TARGETS[@]}" onnx_light_unit_tests_asan
# The unit tests on the same ASan + UBSan instrumented libraries first (FUZZ_UNIT_TESTS=0 skips them).
if [[ "${FUZZ_UNIT_TESTS:-1}" != 0 ]]; then
  (cd "$DIR" && ASAN_OPTIONS="detect_leaks=1:abort_on_error=0" UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1" \
    ctest --output-on-failure -j "${ONNX_LIGHT_JOBS:-$(nproc)}" -R '^asan/')
fi
for t in "${TARGETS[@]}"; do
  corpus="$ROOT/fuzz/corpus/${t#fuzz_}"
  args=(-seed=1)
  if [[ -n "${FUZZ_RUNS:-}" ]]; then args+=(-runs="$FUZZ_RUNS"); else args+=(-max_total_time="$SECONDS_PER_TARGET"); fi
  echo "fuzz.sh: $t ${args[*]}" >&2
  if [[ -d "$corpus" ]]; then
    scratch="$(mktemp -d)"
    "$DIR/fuzz/$t" "${args[@]}" "$scratch" "$corpus"
    rm -rf "$scratch"
  else
    "$DIR/fuzz/$t" "${args[@]}"
  fi
done
