#!/usr/bin/env bash
# Mutation check: applies each mutation of scripts/mutants.txt, one at a time, to a scratch copy
# of the project, rebuilds it and runs ctest; a mutant is caught when a test fails. Run
# `scripts/mutants.sh --help` for the options.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

usage() {
  cat <<'EOF'
Usage: scripts/mutants.sh [OPTIONS]

Applies each mutation listed in scripts/mutants.txt (one small source edit that removes a guard:
the fsync before the rename, the flock, a host field in matching, a kernel registration, ...) to
a scratch copy of the project, builds it and runs ctest. A mutant is "caught" when a test fails,
"survived" when every test passes: then the guard it removes is not tested. Prints a table and
exits 1 if any mutant survived, 2 on an error (a pattern that no longer matches, a mutant that
does not compile, a baseline whose tests already fail).

Tests, per mutant: first the ctest regex its "tests:" line names (the tests meant to catch it);
if those pass, the whole suite (minus --exclude) is run, so "survived" means no test at all
noticed. The scratch copy is first built and tested unmutated (the baseline) with the same
selection, so a failure is the mutant's.

The copy is of the working tree's tracked and untracked-but-not-ignored files (uncommitted edits
included), or of a commit with --rev. It lives in --scratch (default /tmp/onnx-light-mutants)
and is reused: only files that changed are copied, so ninja and ccache rebuild only what a
mutation touches. Each mutated file is restored after its mutant. Slow (a build and a test run
per mutant): not part of .ci/run; run it before resolving an issue that touches a guarded file.

Options:
  --only ID[,ID...]   run only these mutants (e.g. --only M1,M4b)
  --tests REGEX       run exactly this ctest -R regex for every mutant (and the baseline)
  --relevant-only     run only each mutant's "tests:" regex, never the whole suite
  --exclude REGEX     ctest -E for whole-suite runs (default: none; e.g. 'cli/install|e2e/')
  --rev REV           copy this commit (git archive) instead of the working tree
  --list FILE         the mutation list (default: scripts/mutants.txt)
  --scratch DIR       scratch directory (default: /tmp/onnx-light-mutants)
  --jobs N            parallel build and ctest jobs (default: nproc)
  --no-baseline       skip the unmutated build and test run
  --show              print the mutants and exit
  -h, --help          this text

Example: scripts/mutants.sh --only M1,M6 --relevant-only
EOF
}

ONLY=""
TESTS=""
RELEVANT_ONLY=0
EXCLUDE=""
REV=""
LIST="$ROOT/scripts/mutants.txt"
SCRATCH="/tmp/onnx-light-mutants"
JOBS="$(nproc)"
BASELINE=1
SHOW=0
while (($#)); do
  case "$1" in
    --only) ONLY="$2"; shift 2 ;;
    --tests) TESTS="$2"; shift 2 ;;
    --relevant-only) RELEVANT_ONLY=1; shift ;;
    --exclude) EXCLUDE="$2"; shift 2 ;;
    --rev) REV="$2"; shift 2 ;;
    --list) LIST="$2"; shift 2 ;;
    --scratch) SCRATCH="$2"; shift 2 ;;
    --jobs) JOBS="$2"; shift 2 ;;
    --no-baseline) BASELINE=0; shift ;;
    --show) SHOW=1; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "mutants.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
done
die() { echo "mutants.sh: $*" >&2; exit 2; }
[[ -f "$LIST" ]] || die "no mutation list at $LIST"

# --- the list: parallel arrays indexed by mutant number
IDS=(); WHATS=(); RELEVANT=(); EDITS=()   # EDITS[i]: "file<US>perl" lines joined by newlines
US=$'\x1f'
current_file=""
while IFS= read -r line || [[ -n "$line" ]]; do
  [[ "$line" =~ ^[[:space:]]*(#|$) ]] && continue
  key="${line%%:*}"
  value="${line#*: }"
  case "$key" in
    id) IDS+=("$value"); WHATS+=(""); RELEVANT+=(""); EDITS+=(""); current_file="" ;;
    what|file|edit|tests) ((${#IDS[@]})) || die "$LIST: '$key:' before the first 'id:'" ;;&
    what) WHATS[-1]="$value" ;;
    file) current_file="$value" ;;
    edit) [[ -n "$current_file" ]] || die "$LIST: mutant ${IDS[-1]}: 'edit:' before 'file:'"
          EDITS[-1]+="$current_file$US$value"$'\n' ;;
    tests) RELEVANT[-1]="$value" ;;
    *) die "$LIST: unknown line '$line'" ;;
  esac
done <"$LIST"
for i in "${!IDS[@]}"; do
  [[ -n "${EDITS[$i]}" ]] || die "$LIST: mutant ${IDS[$i]} has no edit"
done

SELECTED=()
if [[ -n "$ONLY" ]]; then
  IFS=',' read -r -a wanted <<<"$ONLY"
  for w in "${wanted[@]}"; do
    found=0
    for i in "${!IDS[@]}"; do [[ "${IDS[$i]}" == "$w" ]] && { SELECTED+=("$i"); found=1; }; done
    ((found)) || die "no mutant '$w' in $LIST (ids: ${IDS[*]})"
  done
else
  SELECTED=("${!IDS[@]}")
fi

if ((SHOW)); then
  for i in "${SELECTED[@]}"; do
    printf '%-5s %s\n      tests: %s\n' "${IDS[$i]}" "${WHATS[$i]}" "${RELEVANT[$i]:-(whole suite)}"
    while IFS="$US" read -r f e; do [[ -n "$f" ]] && printf '      %s: %s\n' "$f" "$e"; done <<<"${EDITS[$i]}"
  done
  exit 0
fi

# --- the scratch copy: stage/ is the pristine snapshot, src/ the copy that gets mutated
export CMAKE_CXX_COMPILER_LAUNCHER=ccache CMAKE_C_COMPILER_LAUNCHER=ccache
STAGE="$SCRATCH/stage"
SRC="$SCRATCH/src"
BUILD="$SCRATCH/build"
LOGS="$SCRATCH/logs"
mkdir -p "$SCRATCH" "$SRC" "$LOGS"
rm -rf "$STAGE" && mkdir -p "$STAGE"
if [[ -n "$REV" ]]; then
  git -C "$ROOT" archive "$REV" | tar -x -C "$STAGE"
else
  (cd "$ROOT" && git ls-files -z --cached --others --exclude-standard |
     while IFS= read -r -d '' f; do [[ -f "$f" ]] && printf '%s\0' "$f"; done |
     tar --null -T - -cf - | tar -x -C "$STAGE")
fi
# Copy only what differs, with a fresh mtime (so ninja rebuilds it), and drop files gone from
# the snapshot; unchanged files keep their mtime and are not rebuilt.
/usr/bin/python3 - "$STAGE" "$SRC" <<'PYEOF'
import filecmp, os, shutil, sys
stage, src = sys.argv[1], sys.argv[2]
wanted = set()
for base, _, files in os.walk(stage):
    for name in files:
        rel = os.path.relpath(os.path.join(base, name), stage)
        wanted.add(rel)
        target = os.path.join(src, rel)
        if not os.path.isfile(target) or not filecmp.cmp(os.path.join(stage, rel), target, shallow=False):
            os.makedirs(os.path.dirname(target), exist_ok=True)
            shutil.copyfile(os.path.join(stage, rel), target)
            shutil.copymode(os.path.join(stage, rel), target)
for base, _, files in os.walk(src):
    for name in files:
        path = os.path.join(base, name)
        if os.path.relpath(path, src) not in wanted:
            os.remove(path)
PYEOF

restore() {  # restore FILE: the pristine content, with a fresh mtime
  cp "$STAGE/$1" "$SRC/$1"
}

build() {  # build LOG: returns the build's status
  {
    # Warnings are not errors here: a mutant that compiles with a warning is still a mutant.
    if [[ ! -f "$BUILD/build.ninja" ]] || ! grep -q '^ONNX_LIGHT_WERROR:BOOL=OFF$' "$BUILD/CMakeCache.txt"; then
      cmake -S "$SRC" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DONNX_LIGHT_WERROR=OFF \
        -DONNX_LIGHT_BUILD_TESTS=ON -DONNX_LIGHT_BUILD_PYTHON=ON -DPython3_EXECUTABLE=/usr/bin/python3
    fi
    cmake --build "$BUILD" -j "$JOBS"
  } >"$1" 2>&1
}

# run_ctest LOG REGEX EXCLUDE: 0 when every selected test passed; failing tests in $FAILED.
FAILED=""
run_ctest() {
  local args=(--test-dir "$BUILD" -j "$JOBS" --output-on-failure --no-tests=error)
  [[ -n "$2" ]] && args+=(-R "$2")
  [[ -n "$3" ]] && args+=(-E "$3")
  local status=0
  ctest "${args[@]}" >"$1" 2>&1 || status=$?
  FAILED="$(sed -n '/The following tests FAILED:/,$p' "$1" | sed -n 's/^[[:space:]]*[0-9]* - \([^ ]*\) .*/\1/p' | paste -sd ' ')"
  [[ $status == 0 && -z "$FAILED" ]]
}

# What each phase runs: --tests for everything, else the mutant's regex then the whole suite.
phases_for() {  # phases_for INDEX: prints "REGEX<US>EXCLUDE" lines
  if [[ -n "$TESTS" ]]; then
    printf '%s%s\n' "$TESTS" "$US"
  else
    [[ -n "${RELEVANT[$1]}" ]] && printf '%s%s\n' "${RELEVANT[$1]}" "$US"
    # A mutant without a "tests:" line always gets the whole suite.
    if ((!RELEVANT_ONLY)) || [[ -z "${RELEVANT[$1]}" ]]; then printf '%s%s\n' "" "$US$EXCLUDE"; fi
  fi
}

if ((BASELINE)); then
  echo "baseline: building $SRC in $BUILD (log: $LOGS/baseline-build.log)"
  build "$LOGS/baseline-build.log" || { tail -30 "$LOGS/baseline-build.log" >&2; die "the unmutated copy does not build"; }
  # The union of what the mutants will run: every relevant regex, and the suite if any runs it.
  regexes=(); suite=0
  for i in "${SELECTED[@]}"; do
    while IFS="$US" read -r regex exclude; do
      if [[ -z "$regex" ]]; then suite=1
      elif [[ " ${regexes[*]} " != *" $regex "* ]]; then regexes+=("$regex"); fi
    done < <(phases_for "$i")
  done
  if ((suite)); then baseline_regex=""; baseline_exclude="$EXCLUDE"
  else baseline_regex="$(IFS='|'; echo "${regexes[*]}")"; baseline_exclude=""; fi
  echo "baseline: ctest ${baseline_regex:+-R '$baseline_regex' }${baseline_exclude:+-E '$baseline_exclude'}"
  run_ctest "$LOGS/baseline-ctest.log" "$baseline_regex" "$baseline_exclude" ||
    die "the unmutated copy fails tests ($FAILED): fix them first (log: $LOGS/baseline-ctest.log)"
fi

RESULTS=(); CAUGHT_BY=(); errors=0; survivors=0
for i in "${SELECTED[@]}"; do
  id="${IDS[$i]}"
  echo "$id: ${WHATS[$i]}"
  result=""; by=""; touched=()
  while IFS="$US" read -r file expr; do
    [[ -z "$file" ]] && continue
    [[ -f "$SRC/$file" ]] || { result="ERROR"; by="no file $file"; break; }
    [[ " ${touched[*]} " == *" $file "* ]] || touched+=("$file")
    cp "$SRC/$file" "$SCRATCH/before-edit"
    perl -0777 -i -pe "$expr" "$SRC/$file" 2>"$LOGS/$id-edit.log" || { result="ERROR"; by="perl failed on $file"; break; }
    if cmp -s "$SRC/$file" "$SCRATCH/before-edit"; then
      result="ERROR"; by="pattern no longer matches $file: $expr"; break
    fi
  done <<<"${EDITS[$i]}"
  if [[ -z "$result" ]]; then
    for f in "${touched[@]}"; do diff -u "$STAGE/$f" "$SRC/$f" | sed -n '3,$p' | grep '^[-+]' | sed 's/^/    /' || true; done
    if ! build "$LOGS/$id-build.log"; then
      result="ERROR"; by="does not build (log: $LOGS/$id-build.log)"
    else
      result="survived"
      while IFS="$US" read -r regex exclude; do
        if [[ -n "$regex" ]]; then echo "  ctest -R '$regex'"; else echo "  ctest (whole suite)${exclude:+ -E '$exclude'}"; fi
        if ! run_ctest "$LOGS/$id-ctest${regex:+-relevant}.log" "$regex" "$exclude"; then
          result="caught"; by="${FAILED:-ctest failed (log: $LOGS/$id-ctest${regex:+-relevant}.log)}"; break
        fi
      done < <(phases_for "$i")
    fi
  fi
  for f in "${touched[@]}"; do restore "$f"; done
  case "$result" in
    ERROR) errors=$((errors + 1)); echo "  ERROR: $by" ;;
    survived) survivors=$((survivors + 1)); echo "  SURVIVED" ;;
    caught) echo "  caught by: $by" ;;
  esac
  RESULTS+=("$result"); CAUGHT_BY+=("$by")
done
# Leave the build matching the pristine sources, so the next run starts from a clean state.
build "$LOGS/restore-build.log" || true

echo
printf '%-6s %-9s %-58s %s\n' "mutant" "result" "what" "caught by"
for k in "${!SELECTED[@]}"; do
  i="${SELECTED[$k]}"
  printf '%-6s %-9s %-58s %s\n' "${IDS[$i]}" "${RESULTS[$k]}" "${WHATS[$i]:0:58}" "${CAUGHT_BY[$k]}"
done
echo
echo "${#SELECTED[@]} mutants: $(( ${#SELECTED[@]} - survivors - errors )) caught, $survivors survived, $errors errors (logs: $LOGS)"
((errors)) && exit 2
((survivors)) && exit 1
exit 0
