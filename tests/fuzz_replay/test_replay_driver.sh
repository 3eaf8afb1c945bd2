#!/usr/bin/env bash
# fuzz/replay_main.cc fails on every kind of bad replay and names the input at fault.
# Usage: test_replay_driver.sh REPLAY_SELFTEST_BINARY SCRATCH_DIR
set -uo pipefail
REPLAY="$1"
SCRATCH="$2"
rm -rf "$SCRATCH" && mkdir -p "$SCRATCH"
fail() { echo "FAIL: $*" >&2; exit 1; }

# corpus NAME CONTENT...: a directory with one file per CONTENT (named 0, 1, ...).
corpus() {
  local dir="$SCRATCH/$1"; shift
  mkdir -p "$dir"
  local i=0
  for content in "$@"; do printf '%s' "$content" >"$dir/$i"; i=$((i + 1)); done
  echo "$dir"
}

# replay DIR: runs the driver, sets $rc and $err.
replay() {
  "$REPLAY" "$1" >"$SCRATCH/out" 2>"$SCRATCH/err"
  rc=$?
  err="$(cat "$SCRATCH/err")"
}

replay "$(corpus clean ok also-ok reject)"
[[ $rc == 0 ]] || fail "clean corpus: exit $rc: $err"
grep -q "3 input(s)" "$SCRATCH/out" || fail "clean corpus: $(cat "$SCRATCH/out")"

replay "$(corpus trap ok trap)"
[[ $rc -gt 128 ]] || fail "trapping input: expected death by a signal, got exit $rc"
[[ "$err" == *"trap/1"* ]] || fail "trapping input not named: $err"

replay "$(corpus throw ok throw)"
[[ $rc == 1 && "$err" == *"throw/1: uncaught exception: thrown by the self-test target"* ]] ||
  fail "throwing input: exit $rc: $err"

replay "$(corpus bad bad)"
[[ $rc == 1 && "$err" == *"bad/0: the target returned 7"* ]] || fail "bad return value: exit $rc: $err"

mkdir -p "$SCRATCH/empty" "$SCRATCH/only-subdir/sub"
for dir in empty only-subdir; do
  replay "$SCRATCH/$dir"
  [[ $rc == 1 && "$err" == *"holds no input file"* ]] || fail "$dir corpus: exit $rc: $err"
done

replay "$SCRATCH/no-such-corpus"
[[ $rc == 1 && "$err" == *"is not a directory"* ]] || fail "missing corpus: exit $rc: $err"
echo "replay driver: all cases behave"
