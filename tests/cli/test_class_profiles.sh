#!/usr/bin/env bash
# Class profiles (issue 21) on the command line: set --match, the in-force profile and what it
# shadows (inspect --json, inspect --long, list), the usage error for an unknown class,
# export --host-class, and set --as-host (exact and model class) against inspect [--as-host].
set -euo pipefail
source "$(dirname "$0")/lib.sh"
mkdir -p "$SCRATCH/cache" "$SCRATCH/files"
CACHE="$SCRATCH/cache/kernel_tuning.cache"
F="$SCRATCH/files"
IMPL=$(host_elementwise_implementation)
t() { "$TOOL" --cache "$CACHE" "$@"; }

# json FILE EXPR: evaluates the Python expression EXPR with r = the JSON in FILE; fails unless true.
json() {
  $PY -c "import json, sys; r = json.load(open(sys.argv[1])); assert $2, r" "$1" || fail "$1: $2"
}
# The inspect profile of Abs float at 2 threads with this match ("exact", "model"), as p.
abs_profile() { echo "[p for p in r['profiles'] if p['kernel'] == 'Abs' and p['element_type'] == 1 and p['effective_threads'] == 2 and p['match'] == '$1']"; }

# --- set --match model: a class profile, in force on this machine -------------------------------
expect_exit 0 t set Abs parallel.minimum_elements=32768 --threads 2 --match model --no-load
expect_grep "$SCRATCH/out" "for this host's model class"
grep -q '^format_version = 2$' "$CACHE" || fail "a class profile must make the cache format version 2"
grep -q '^match = "model"$' "$CACHE" || fail "the cache does not record host.match = model"
grep -q '^stepping = ' "$CACHE" && fail "a model class profile must not record the stepping"
expect_exit 0 t inspect --json
json "$SCRATCH/out" "len($(abs_profile model)) == 1"
json "$SCRATCH/out" "[(p['classification'], p['matched_by'], p['in_force'], p['shadowed'], p['shadowed_by']) for p in $(abs_profile model)] == [('loaded', 'model', True, False, None)]"
expect_exit 0 t list Abs --element-type float --threads 2 --json
json "$SCRATCH/out" "[(k['matched_by'], k['shadows'], k['cached_values']['parallel.minimum_elements']) for k in r['kernels']] == [('model', [], 32768)]"

# --- an exact profile of the same key and threads takes over; the model one is shadowed --------
expect_exit 0 t set Abs parallel.minimum_elements=8192 --threads 2 --no-load
expect_exit 0 t inspect --json
json "$SCRATCH/out" "[(p['matched_by'], p['in_force'], p['shadowed'], p['shadowed_by']['matched_by'], p['shadowed_by']['layer']) for p in $(abs_profile model)] == [('model', False, True, 'exact', 'user')]"
json "$SCRATCH/out" "[(p['matched_by'], p['in_force'], p['shadowed']) for p in $(abs_profile exact)] == [('exact', True, False)]"
# shadowed_by names the exact profile by its index.
json "$SCRATCH/out" "$(abs_profile model)[0]['shadowed_by']['index'] == $(abs_profile exact)[0]['index']"
expect_exit 0 t list Abs --element-type float --threads 2 --json
json "$SCRATCH/out" "[(k['matched_by'], [s['matched_by'] for s in k['shadows']], k['cached_values']['parallel.minimum_elements'], k['active_values']['parallel.minimum_elements']) for k in r['kernels']] == [('exact', ['model'], 8192, 8192)]"
# The human forms: the MATCH column, the * with its footnote, --long's reasons.
expect_exit 0 t inspect --kernel Abs --threads 2
expect_grep "$SCRATCH/out" "^LAYER +# +KERNEL .* HOST +MATCH +CLASS "
expect_grep "$SCRATCH/out" "^user\* +[0-9]+ +Abs +float +$IMPL +[0-9]+ +2 +.* model +loaded +yes"
expect_grep "$SCRATCH/out" "^user +[0-9]+ +Abs +float +$IMPL +[0-9]+ +2 +.* exact +loaded +yes"
expect_grep "$SCRATCH/out" "^\* shadowed: not in force; a more specific profile"
expect_exit 0 t inspect --kernel Abs --threads 2 --long
expect_grep "$SCRATCH/out" "matched by: model; shadowed by user [0-9]+ \(exact\)"
expect_grep "$SCRATCH/out" "matched by: exact; in force"
expect_exit 0 t list Abs --element-type float --threads 2
expect_grep "$SCRATCH/out" "^Abs +float +$IMPL .* exact, shadows 1$"

# --- an unknown class is a usage error naming the classes; nothing is written ------------------
cp "$CACHE" "$F/before.cache"
expect_exit 2 t set Abs parallel.minimum_elements=4096 --match bogus
expect_grep "$SCRATCH/err" "--match: unknown host match 'bogus' \(use exact, model, microarchitecture or isa\)"
cmp -s "$CACHE" "$F/before.cache" || fail "set --match bogus changed the cache"
expect_exit 2 t calibrate Abs --match stepping --no-save
expect_grep "$SCRATCH/err" "--match: unknown host match 'stepping'"
expect_exit 2 t calibrate Abs --match model --no-save
expect_grep "$SCRATCH/err" "--match model is the class of the saved profiles; --no-save saves none"
expect_exit 2 t export -o "$F/x.cache" --host-class bogus
expect_grep "$SCRATCH/err" "--host-class: unknown host match 'bogus' \(use exact, model, microarchitecture or isa\)"

# --- export --host-class model: this machine's exact profiles as model class profiles ----------
E="$SCRATCH/export"
mkdir -p "$E"
EC="$E/kernel_tuning.cache"
expect_exit 0 "$TOOL" --cache "$EC" set Abs parallel.minimum_elements=4096 --threads 1 --no-load
expect_exit 0 "$TOOL" --cache "$EC" set Relu parallel.minimum_elements=16384 --threads 2 --no-load
grep -q '^format_version = 1$' "$EC" || fail "a cache of exact profiles is still written as format version 1"
expect_exit 0 "$TOOL" --cache "$EC" export --host-class model -o "$F/model.cache" --json
json "$SCRATCH/out" "r['host_class'] == 'model' and r['exported_count'] == 2 and {p['match'] for p in r['profiles']} == {'model'}"
grep -q '^format_version = 2$' "$F/model.cache" || fail "export --host-class model must write format version 2"
[[ $(grep -c '^match = "model"$' "$F/model.cache") == 2 ]] || fail "export --host-class model: expected two match = \"model\" lines"
grep -q '^stepping = ' "$F/model.cache" && fail "export --host-class model wrote a stepping line"
# The exported class profiles apply here when loaded from a cache of their own.
expect_exit 0 "$TOOL" --cache "$F/model.cache" inspect --json
json "$SCRATCH/out" "sorted((p['kernel'], p['matched_by'], p['in_force']) for p in r['profiles']) == [('Abs', 'model', True), ('Relu', 'model', True)]"
# --host-class exact leaves them as written.
expect_exit 0 "$TOOL" --cache "$EC" export --host-class exact -o "$F/exact.cache"
grep -q '^format_version = 1$' "$F/exact.cache" || fail "export --host-class exact changed the format version"
cmp -s <(grep -c '^stepping = ' "$F/exact.cache") <(echo 2) || fail "export --host-class exact dropped the steppings"

# --- set --as-host: a profile for another machine (here: another stepping and family) ----------
A="$SCRATCH/as-host"
mkdir -p "$A"
AC="$A/kernel_tuning.cache"
expect_exit 0 "$TOOL" host --json --threads 2
cp "$SCRATCH/out" "$F/host.json"
$PY - "$F/host.json" "$F/other.json" "$F/stepping.json" <<'EOF'
import json, sys
h = json.load(open(sys.argv[1]))
# Another CPU (family and stepping changed): neither its exact nor its model profiles apply here.
json.dump(dict(h, family=h["family"] + 1, stepping=h["stepping"] + 7, hostname="sim-other"), open(sys.argv[2], "w"))
# The same CPU model at another stepping: its model class profiles apply here, exact ones not.
json.dump(dict(h, stepping=h["stepping"] + 3, hostname="sim-stepping"), open(sys.argv[3], "w"))
EOF
expect_exit 0 "$TOOL" --cache "$AC" set Abs parallel.minimum_elements=2048 --as-host "$F/other.json" --no-load
expect_grep "$SCRATCH/out" "^as host: .*other.json: "
expect_exit 0 "$TOOL" --cache "$AC" inspect --json
json "$SCRATCH/out" "[(p['kernel'], p['classification'], p['matched_by'], p['in_force'], p['effective_threads']) for p in r['profiles']] == [('Abs', 'incompatible', None, False, 2)]"
json "$SCRATCH/out" "r['profiles'][0]['family'] == $($PY -c 'import json,sys; print(json.load(open(sys.argv[1]))["family"])' "$F/other.json")"
expect_exit 0 "$TOOL" --cache "$AC" inspect --json --as-host "$F/other.json"
json "$SCRATCH/out" "[(p['classification'], p['matched_by'], p['in_force'], p['local']) for p in r['profiles']] == [('loaded', 'exact', True, True)]"
# A model class profile written as a host of the same model at another stepping applies here.
expect_exit 0 "$TOOL" --cache "$AC" set Relu parallel.minimum_elements=4096 --as-host "$F/stepping.json" --match model --no-load
expect_exit 0 "$TOOL" --cache "$AC" inspect --json
json "$SCRATCH/out" "[(p['classification'], p['matched_by'], p['in_force']) for p in r['profiles'] if p['kernel'] == 'Relu'] == [('loaded', 'model', True)]"
expect_exit 0 "$TOOL" --cache "$AC" list Relu --element-type float --threads 2 --json
json "$SCRATCH/out" "[(k['matched_by'], k['cached_values']['parallel.minimum_elements']) for k in r['kernels']] == [('model', 4096)]"
# The same with an exact profile: it stays that host's alone.
expect_exit 0 "$TOOL" --cache "$AC" set Neg parallel.minimum_elements=4096 --as-host "$F/stepping.json" --no-load
expect_exit 0 "$TOOL" --cache "$AC" inspect --json --kernel Neg
json "$SCRATCH/out" "[(p['classification'], p['matched_by']) for p in r['profiles']] == [('incompatible', None)]"
# --- export --host-class: two steppings become one model profile; they must agree -------------
D="$SCRATCH/disagree"
mkdir -p "$D"
DC="$D/kernel_tuning.cache"
expect_exit 0 "$TOOL" --cache "$DC" set Abs parallel.minimum_elements=1024 --threads 2 --no-load
expect_exit 0 "$TOOL" --cache "$DC" set Abs parallel.minimum_elements=2048 --as-host "$F/stepping.json" --no-load
expect_exit 1 "$TOOL" --cache "$DC" export --all-hosts --host-class model -o "$F/disagree.cache"
expect_grep "$SCRATCH/err" "become one model profile .* with different values .*nothing was written"
[ ! -e "$F/disagree.cache" ] || fail "export --host-class model wrote a file though the profiles disagree"
# Once they agree, they merge into one.
expect_exit 0 "$TOOL" --cache "$DC" set Abs parallel.minimum_elements=1024 --as-host "$F/stepping.json" --no-load
expect_exit 0 "$TOOL" --cache "$DC" export --all-hosts --host-class model -o "$F/agree.cache" --json
json "$SCRATCH/out" "r['exported_count'] == 1 and r['profiles'][0]['match'] == 'model' and r['profiles'][0]['values']['parallel.minimum_elements'] == 1024"

# --- isa and microarchitecture classes -------------------------------------------------------
C="$SCRATCH/classes"
mkdir -p "$C"
CC="$C/kernel_tuning.cache"
expect_exit 0 "$TOOL" --cache "$CC" set Abs parallel.minimum_elements=1024 --threads 2 --match isa --no-load
expect_exit 0 "$TOOL" --cache "$CC" inspect --json
json "$SCRATCH/out" "[(p['match'], p['matched_by'], p['in_force'], len(p['features']) > 0) for p in r['profiles']] == [('isa', 'isa', True, True)]"
UARCH=$($PY -c 'import json,sys; print(json.load(open(sys.argv[1]))["microarchitecture"])' "$F/host.json")
if [[ -z $UARCH ]]; then
  # This machine's microarchitecture is unknown: it has no such class, and nothing is written.
  expect_exit 2 "$TOOL" --cache "$CC" set Abs parallel.minimum_elements=2048 --threads 2 --match microarchitecture --no-load
  expect_grep "$SCRATCH/err" "microarchitecture"
else
  expect_exit 0 "$TOOL" --cache "$CC" set Abs parallel.minimum_elements=2048 --threads 2 --match microarchitecture --no-load
  expect_exit 0 "$TOOL" --cache "$CC" list Abs --element-type float --threads 2 --json
  json "$SCRATCH/out" "[(k['matched_by'], [s['matched_by'] for s in k['shadows']]) for k in r['kernels']] == [('microarchitecture', ['isa'])]"
fi

# A missing --as-host file is a usage error, and nothing is written.
cp "$AC" "$F/as-host-before.cache"
expect_exit 2 "$TOOL" --cache "$AC" set Abs parallel.minimum_elements=1024 --as-host "$F/absent.json"
cmp -s "$AC" "$F/as-host-before.cache" || fail "set --as-host with a missing file changed the cache"
echo "class profiles: OK"
