# Shared helpers for tests/cli/test_*.sh. Source it after `set -euo pipefail`.
# $1 is the onnx-light-tune binary, $2 a scratch directory (emptied here).
TOOL="$1"
SCRATCH="$2"
rm -rf "$SCRATCH" && mkdir -p "$SCRATCH"
export HOME="$SCRATCH/home" XDG_CACHE_HOME="$SCRATCH/xdg-cache"
unset ONNX_LIGHT_TUNING_CACHE
export ONNX_LIGHT_SYSTEM_TUNING_CACHE="$SCRATCH/no-system.cache"
mkdir -p "$HOME"
PY=/usr/bin/python3

fail() { echo "FAIL: $*" >&2; exit 1; }

# expect_exit CODE CMD...: runs CMD, captures stdout/stderr into $SCRATCH/out and $SCRATCH/err.
expect_exit() {
  local want="$1"; shift
  set +e
  "$@" >"$SCRATCH/out" 2>"$SCRATCH/err"
  local got=$?
  set -e
  if [[ "$got" != "$want" ]]; then
    echo "--- stdout" >&2; cat "$SCRATCH/out" >&2; echo "--- stderr" >&2; cat "$SCRATCH/err" >&2
    fail "expected exit $want, got $got: $*"
  fi
}

# run_status CMD...: runs CMD like expect_exit, whatever its exit status, which lands in $STATUS.
run_status() {
  set +e
  "$@" >"$SCRATCH/out" 2>"$SCRATCH/err"
  STATUS=$?
  set -e
}

# expect_grep FILE PATTERN: fails unless the extended regex PATTERN occurs in FILE.
expect_grep() {
  grep -Eq -- "$2" "$1" || { echo "--- $1" >&2; cat "$1" >&2; fail "pattern '$2' not in $1"; }
}

# The implementation this host's float32 elementwise kernels (Abs, Add, Relu, ...) dispatch to,
# decided from /proc/cpuinfo independently of the tool: "avx2" on x86-64 with AVX2 and FMA.
host_elementwise_implementation() {
  if [ "$(uname -m)" = x86_64 ] && grep -qw avx2 /proc/cpuinfo && grep -qw fma /proc/cpuinfo; then
    echo avx2
  else
    echo portable
  fi
}
