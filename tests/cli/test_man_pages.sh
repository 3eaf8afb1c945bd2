#!/usr/bin/env bash
# Man pages (man/*.1, hand-written roff): onnx-light-tune(1) and one page per verb.
# - every verb `onnx-light-tune --help` lists has a page, and the main page lists it under VERBS;
# - every option a verb's --help shows is documented under OPTIONS of its page, and every option
#   documented there exists (so a removed option does not linger in the page);
# - the top-level keys of each verb's --json report are exactly the keys under JSON OUTPUT;
# - `man --warnings -l` renders each page without a single warning (also with every groff
#   warning enabled).
set -euo pipefail
source "$(dirname "$0")/lib.sh"
MAN_DIR="$ONNX_LIGHT_SOURCE_DIR/man"
command -v man >/dev/null || fail "man is not installed (Debian: man-db)"
command -v col >/dev/null || fail "col is not installed (Debian: bsdextrautils)"

# The page as plain text, 80 columns.
render() { MANWIDTH=80 LC_ALL=C.UTF-8 man -l "$1" 2>/dev/null | col -bx; }

# Lines of section $2 (a heading such as OPTIONS) of rendered text file $1.
section() { awk -v want="$2" '/^[A-Z][A-Z ]*$/ { inside = ($0 == want); next } inside' "$1"; }

# Option names (-x, --name) on the tag lines of a rendered section: tags start at column 8.
tagged_options() {
  grep -E '^ {7}-' | sed -E 's/^ {7}//' | tr ',' '\n' |
    grep -oE '^ ?-{1,2}[A-Za-z0-9][-A-Za-z0-9]*' | tr -d ' ' | sort -u
}

# Names of the keys on the tag lines of a rendered JSON OUTPUT section.
tagged_keys() { grep -E '^ {7}[a-z_][a-z0-9_]*( |$)' | sed -E 's/^ {7}([a-z_][a-z0-9_]*).*/\1/' | sort -u; }

# Option names in `--help` output: the first column of the option lines.
help_options() {
  awk '/^Options:/ { inside = 1; next } /^$/ { inside = 0 } inside' |
    grep -E '^  -' | sed -E 's/^  ([^ ]+).*/\1/; s/\{[^}]*\}//g' | tr ',' '\n' | sort -u
}

# Verbs in `--help` output.
help_verbs() { awk '/^Subcommands:/ { inside = 1; next } /^$/ { inside = 0 } inside' | awk '{ print $1 }' | sort -u; }

problems=0
problem() { echo "FAIL: $*" >&2; problems=$((problems + 1)); }

version=$("$TOOL" --version | head -1 | awk '{ print $2 }')
check_page_renders() {
  local page="$1" out
  grep -qE "^\.TH .* \"onnx-light-tune $version\"" "$page" || problem "$(basename "$page"): .TH does not name onnx-light-tune $version"
  out=$(MANWIDTH=80 man --warnings -l "$page" 2>&1 >/dev/null) || problem "$page: man failed"
  [[ -z $out ]] || problem "$page: man --warnings printed: $out"
  out=$(MANWIDTH=80 man --warnings=w -l "$page" 2>&1 >/dev/null) || problem "$page: man failed"
  [[ -z $out ]] || problem "$page: man --warnings=w (every groff warning) printed: $out"
  # The typesetter device also checks fonts and escapes the terminal device lets pass.
  if command -v groff >/dev/null; then
    out=$(groff -man -ww -z "$page" 2>&1) || problem "$page: groff failed"
    [[ -z $out ]] || problem "$page: groff -man -ww printed: $out"
  fi
}

# check_options PAGE HELP_TEXT_FILE
check_options() {
  local page="$1" help="$2" text="$SCRATCH/page.txt"
  render "$page" >"$text"
  section "$text" OPTIONS | tagged_options >"$SCRATCH/documented"
  help_options <"$help" >"$SCRATCH/shown"
  [[ -s $SCRATCH/shown ]] || problem "no options found in the --help for $page"
  while read -r option; do
    grep -qxF -- "$option" "$SCRATCH/documented" || problem "$(basename "$page"): option $option (shown by --help) is not documented under OPTIONS"
  done <"$SCRATCH/shown"
  while read -r option; do
    grep -qxF -- "$option" "$SCRATCH/shown" || problem "$(basename "$page"): OPTIONS documents $option, which --help does not show"
  done <"$SCRATCH/documented"
}

# check_json_keys PAGE JSON_FILE [HEADING]: the top-level keys of the report equal the keys under
# JSON OUTPUT (or HEADING, e.g. MODEL JSON OUTPUT for calibrate --model).
check_json_keys() {
  local page="$1" json="$2" text="$SCRATCH/page.txt" heading="${3:-JSON OUTPUT}"
  render "$page" >"$text"
  section "$text" "$heading" | tagged_keys >"$SCRATCH/documented_keys"
  "$PY" -c 'import json, sys; print("\n".join(sorted(json.load(open(sys.argv[1])))))' "$json" >"$SCRATCH/keys"
  while read -r key; do
    grep -qxF -- "$key" "$SCRATCH/documented_keys" || problem "$(basename "$page"): JSON key '$key' is not documented under JSON OUTPUT"
  done <"$SCRATCH/keys"
  while read -r key; do
    grep -qxF -- "$key" "$SCRATCH/keys" || problem "$(basename "$page"): JSON OUTPUT documents '$key', which the report does not have"
  done <"$SCRATCH/documented_keys"
}

# --- the main page ------------------------------------------------------------------------------
main_page="$MAN_DIR/onnx-light-tune.1"
[[ -f $main_page ]] || fail "missing $main_page"
check_page_renders "$main_page"
"$TOOL" --help >"$SCRATCH/help"
check_options "$main_page" "$SCRATCH/help"
help_verbs <"$SCRATCH/help" >"$SCRATCH/verbs"
[[ $(wc -l <"$SCRATCH/verbs") -ge 8 ]] || fail "expected at least 8 verbs in --help"
render "$main_page" >"$SCRATCH/main.txt"
section "$SCRATCH/main.txt" VERBS | grep -E '^ {7}[a-z]' | awk '{ print $1 }' | sort -u >"$SCRATCH/documented_verbs"
section "$SCRATCH/main.txt" "SEE ALSO" >"$SCRATCH/see_also"
while read -r verb; do
  grep -qxF "$verb" "$SCRATCH/documented_verbs" || problem "onnx-light-tune.1: verb $verb is not under VERBS"
  grep -qF "onnx-light-tune-$verb(1)" "$SCRATCH/see_also" || problem "onnx-light-tune.1: SEE ALSO lacks onnx-light-tune-$verb(1)"
done <"$SCRATCH/verbs"
for section_name in SYNOPSIS OPTIONS ENVIRONMENT FILES "EXIT STATUS" EXAMPLES; do
  grep -qx "$section_name" "$SCRATCH/main.txt" || problem "onnx-light-tune.1: no $section_name section"
done
for word in ONNX_LIGHT_TUNING_CACHE ONNX_LIGHT_SYSTEM_TUNING_CACHE XDG_CACHE_HOME HOME NO_COLOR; do
  section "$SCRATCH/main.txt" ENVIRONMENT | grep -qE "^ {7}$word( |$)" || problem "onnx-light-tune.1: ENVIRONMENT lacks $word"
done
section "$SCRATCH/main.txt" FILES | grep -q '/etc/onnx-light/kernel_tuning.cache' || problem "onnx-light-tune.1: FILES lacks the system cache"
section "$SCRATCH/main.txt" FILES | grep -q 'cache\.lock' || problem "onnx-light-tune.1: FILES lacks the lock file"

# --- one page per verb --------------------------------------------------------------------------
while read -r verb; do
  page="$MAN_DIR/onnx-light-tune-$verb.1"
  if [[ ! -f $page ]]; then
    problem "verb $verb has no man page ($page)"
    continue
  fi
  check_page_renders "$page"
  "$TOOL" "$verb" --help >"$SCRATCH/help"
  check_options "$page" "$SCRATCH/help"
  render "$page" >"$SCRATCH/verb.txt"
  for section_name in SYNOPSIS OPTIONS "JSON OUTPUT" "EXIT STATUS" ENVIRONMENT FILES EXAMPLES; do
    grep -qx "$section_name" "$SCRATCH/verb.txt" || problem "onnx-light-tune-$verb.1: no $section_name section"
  done
  section "$SCRATCH/verb.txt" ENVIRONMENT | grep -q ONNX_LIGHT_TUNING_CACHE || problem "onnx-light-tune-$verb.1: ENVIRONMENT lacks ONNX_LIGHT_TUNING_CACHE"
done <"$SCRATCH/verbs"
# No page for a verb that no longer exists.
for page in "$MAN_DIR"/onnx-light-tune-*.1; do
  verb=$(basename "$page" .1)
  verb=${verb#onnx-light-tune-}
  grep -qxF "$verb" "$SCRATCH/verbs" || problem "$(basename "$page") documents verb '$verb', which --help does not list"
done

# --- JSON keys, from real reports ---------------------------------------------------------------
cache="$SCRATCH/keys.cache"
json() { # NAME ARGS...: runs the tool with --json into $SCRATCH/NAME.json (exit 0 expected)
  local name="$1"; shift
  expect_exit 0 "$TOOL" --cache "$cache" "$@" --json
  cp "$SCRATCH/out" "$SCRATCH/$name.json"
}
json set set Abs parallel.minimum_elements=16384
json list list Abs
json propose propose Abs
json inspect inspect
json load load
json calibrate calibrate Abs --no-save --max-duration-ms 50
json run run "$ONNX_LIGHT_SOURCE_DIR/examples/abs.onnxtxt" -i x=random:1 --dim N=64 --profile
json verify verify Abs --max-duration-ms 50
json export export -o "$SCRATCH/exported.cache"
json import import "$SCRATCH/exported.cache"
json merge merge "$SCRATCH/exported.cache" "$SCRATCH/exported.cache" -o "$SCRATCH/merged.cache"
json diff diff "$SCRATCH/exported.cache" "$SCRATCH/merged.cache"
json remove remove --kernel Abs --yes
json host host
json calibrate_model calibrate --model "$ONNX_LIGHT_SOURCE_DIR/examples/abs.onnxtxt" --dim N=64 --no-save --max-duration-ms 100
for verb in set list propose inspect load calibrate run verify remove host export import merge diff; do
  check_json_keys "$MAN_DIR/onnx-light-tune-$verb.1" "$SCRATCH/$verb.json"
done
check_json_keys "$MAN_DIR/onnx-light-tune-calibrate.1" "$SCRATCH/calibrate_model.json" "MODEL JSON OUTPUT"

((problems == 0)) || fail "$problems problem(s) in the man pages"
echo "man pages: OK"
