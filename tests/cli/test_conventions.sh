#!/usr/bin/env bash
# CLI conventions every verb keeps (issue 8): --help with examples, --json, results on stdout and
# logs on stderr, -v/-q, --color auto|always|never and NO_COLOR, exit codes 0/1/2, --version.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
CACHE="$SCRATCH/conventions.cache"

expect_exit 0 "$TOOL" --help
awk '/^Subcommands:/ { inside = 1; next } /^$/ { inside = 0 } inside { print $1 }' "$SCRATCH/out" >"$SCRATCH/verbs"
[[ $(wc -l <"$SCRATCH/verbs") -ge 8 ]] || fail "expected at least 8 verbs in --help"
expect_grep "$SCRATCH/out" '^Examples:'
expect_grep "$SCRATCH/out" 'Exit status: 0 success, 1 the operation failed, 2 usage error'

json_ok() { "$PY" -c 'import json, sys; json.load(open(sys.argv[1]))' "$1" || fail "stdout of '$2' is not one JSON document"; }

while read -r verb; do
  # --help: exit 0, on stdout, with examples of this verb and a --json option.
  expect_exit 0 "$TOOL" "$verb" --help
  expect_grep "$SCRATCH/out" '^Examples:'
  expect_grep "$SCRATCH/out" "^  onnx-light-tune( --cache [^ ]+)? $verb( |\$)"
  expect_grep "$SCRATCH/out" '^  --json '
  [[ ! -s $SCRATCH/err ]] || fail "$verb --help wrote to stderr"
  # An unknown option is a usage error: exit 2, a message on stderr, nothing on stdout.
  expect_exit 2 "$TOOL" "$verb" --no-such-option
  [[ ! -s $SCRATCH/out ]] || fail "$verb --no-such-option wrote to stdout"
  [[ -s $SCRATCH/err ]] || fail "$verb --no-such-option printed no message on stderr"
done <"$SCRATCH/verbs"

# No verb, an unknown verb, a bad --color: usage errors.
expect_exit 2 "$TOOL"
expect_exit 2 "$TOOL" no-such-verb
expect_exit 2 "$TOOL" --color sometimes list
[[ ! -s $SCRATCH/out ]] || fail "a usage error wrote to stdout"

# --json everywhere, stdout only JSON even with -v logging to stderr.
expect_exit 0 "$TOOL" --cache "$CACHE" -v -v set Abs parallel.minimum_elements=16384 --json
json_ok "$SCRATCH/out" "set --json"
[[ -s $SCRATCH/err ]] || fail "-v -v set logged nothing on stderr"
for args in "list Abs" "propose Abs" "inspect" "load" "calibrate Abs --no-save --max-duration-ms 30" \
  "run $ONNX_LIGHT_SOURCE_DIR/examples/abs.onnxtxt -i x=random:3 --dim N=8" "verify Abs --max-duration-ms 30" \
  "remove --yes"; do
  # shellcheck disable=SC2086
  expect_exit 0 "$TOOL" --cache "$CACHE" -v $args --json
  json_ok "$SCRATCH/out" "$args --json"
done
# -q: nothing on stderr for a successful run.
expect_exit 0 "$TOOL" --cache "$CACHE" -q list Abs
[[ ! -s $SCRATCH/err ]] || fail "-q list wrote to stderr: $(cat "$SCRATCH/err")"
# A failing operation: exit 1, the reason on stderr.
printf 'this is not toml [[[\n' >"$SCRATCH/bad.cache"
expect_exit 1 "$TOOL" inspect "$SCRATCH/bad.cache"
expect_exit 1 "$TOOL" --cache "$SCRATCH/bad.cache" set Abs parallel.minimum_elements=1024
expect_exit 2 "$TOOL" --cache "$CACHE" set NoSuchKernel parallel.minimum_elements=1024
[[ -s $SCRATCH/err ]] || fail "a failed set printed no reason on stderr"

# Colour: never by default off a terminal, always with --color always (even with NO_COLOR), never
# with --color never; never in JSON. Global options also work after the verb.
esc=$'\x1b['
expect_exit 0 "$TOOL" --cache "$CACHE" list Abs
if grep -qF "$esc" "$SCRATCH/out"; then fail "colour on stdout that is not a terminal (--color auto)"; fi
expect_exit 0 "$TOOL" --cache "$CACHE" --color always list Abs
grep -qF "$esc" "$SCRATCH/out" || fail "--color always printed no colour"
expect_exit 0 env NO_COLOR=1 "$TOOL" --cache "$CACHE" list Abs --color always
grep -qF "$esc" "$SCRATCH/out" || fail "--color always (after the verb, with NO_COLOR) printed no colour"
expect_exit 0 "$TOOL" --cache "$CACHE" --color never list Abs
if grep -qF "$esc" "$SCRATCH/out"; then fail "--color never printed colour"; fi
expect_exit 0 "$TOOL" --cache "$CACHE" --color always list Abs --json
if grep -qF "$esc" "$SCRATCH/out"; then fail "colour in JSON output"; fi
# NO_COLOR with auto on a terminal, when util-linux's script(1) can provide one.
if command -v script >/dev/null; then
  script -qec "'$TOOL' --cache '$CACHE' list Abs" /dev/null >"$SCRATCH/tty_out" 2>&1 || true
  grep -qF "$esc" "$SCRATCH/tty_out" || fail "--color auto printed no colour on a terminal"
  NO_COLOR=1 script -qec "'$TOOL' --cache '$CACHE' list Abs" /dev/null >"$SCRATCH/tty_out" 2>&1 || true
  if grep -qF "$esc" "$SCRATCH/tty_out"; then fail "NO_COLOR did not turn colour off on a terminal"; fi
fi

# --version: version, compiler, build type, kernel implementations, kernels, host descriptor.
for args in "--version" "list --version"; do
  # shellcheck disable=SC2086
  expect_exit 0 "$TOOL" $args
  expect_grep "$SCRATCH/out" '^onnx-light-tune [0-9]+\.[0-9]+\.[0-9]+$'
  expect_grep "$SCRATCH/out" '^compiler: .+'
  expect_grep "$SCRATCH/out" '^build type: '
  expect_grep "$SCRATCH/out" '^kernel implementations: .*portable \([0-9]+ kernels?'
  expect_grep "$SCRATCH/out" '^kernels: [0-9]+ op types'
  expect_grep "$SCRATCH/out" '^out of scope: string tensors \(StringNormalizer, TfIdfVectorizer, .*training operators of ai\.onnx\.preview\.training \(Adagrad, Adam, Momentum\)$'
  expect_grep "$SCRATCH/out" "^host: $(uname -m) "
  expect_grep "$SCRATCH/out" '^host features: '
  expect_grep "$SCRATCH/out" '^host caches: L1d '
  expect_grep "$SCRATCH/out" '^host cores: [0-9]+ physical, [0-9]+ logical'
done
echo "conventions: OK"
