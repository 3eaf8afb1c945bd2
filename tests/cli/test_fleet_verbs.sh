#!/usr/bin/env bash
# export, import, merge and diff (issue 21, "Moving caches"): the selection of export, the round
# trip export -> import, conflicts under each policy, inputs that must change nothing (byte for
# byte, no stray files), merge's order independence and idempotence, diff's exit statuses.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
mkdir -p "$SCRATCH/cache" "$SCRATCH/files"
CACHE="$SCRATCH/cache/kernel_tuning.cache"
F="$SCRATCH/files"
t() { "$TOOL" --cache "$CACHE" "$@"; }

# json FILE EXPR: evaluates the Python expression EXPR with r = the JSON in FILE; fails unless true.
json() {
  $PY -c "import json, sys; r = json.load(open(sys.argv[1])); assert $2, r" "$1" || fail "$1: $2"
}
# Bytes and names of a directory, to prove that nothing was written there.
snapshot() { (cd "$1" && sha256sum -- * 2>/dev/null; ls -A); }

# --- a cache of this machine (Abs at 1 and 2 threads, Relu at 2) plus a foreign profile ----------
expect_exit 0 t set Abs parallel.minimum_elements=4096 --threads 2 --no-load
expect_exit 0 t set Abs parallel.minimum_elements=1024 --threads 1 --no-load
expect_exit 0 t set Relu parallel.minimum_elements=8192 --threads 2 --no-load
expect_exit 0 "$TOOL" host --json --threads 2
cp "$SCRATCH/out" "$F/host.json"
$PY - "$F/host.json" "$F/other.json" <<'EOF'
import json, sys
h = json.load(open(sys.argv[1]))
json.dump(dict(h, stepping=h["stepping"] + 50, hostname="build-99"), open(sys.argv[2], "w"))
EOF
OTHER_STEPPING=$($PY -c "import json,sys; print(json.load(open(sys.argv[1]))['stepping'])" "$F/other.json")
# A foreign profile: this machine's Abs profile moved to another stepping (what another host wrote).
expect_exit 0 t export --kernel Abs --threads 2 -o "$F/abs2.cache"
sed -e "s/^stepping = .*/stepping = $OTHER_STEPPING/" -e 's/"parallel.minimum_elements" = 4096/"parallel.minimum_elements" = 65536/' \
  "$F/abs2.cache" >"$F/foreign.cache"
expect_exit 0 t import "$F/foreign.cache"
expect_grep "$SCRATCH/out" "^imported .*: 1 added, 0 replaced, 0 kept, 0 conflicts"
expect_exit 0 t inspect --json
json "$SCRATCH/out" "len(r['profiles']) == 4"

# --- export: this machine by default, --as-host, --all-hosts, filters ----------------------------
expect_exit 0 t export -o "$F/mine.cache"
expect_grep "$SCRATCH/out" "^exported 3 profiles of this machine from $CACHE to $F/mine.cache"
[ ! -e "$F/mine.cache.lock" ] || fail "export left a lock file next to its output"
expect_exit 0 "$TOOL" --cache "$F/mine.cache" inspect --json
json "$SCRATCH/out" "r['status'] == 'loaded' and len(r['profiles']) == 3 and all(p['classification'] == 'loaded' for p in r['profiles'])"
expect_exit 0 t export -o "$F/other-host.cache" --as-host "$F/other.json" --json
json "$SCRATCH/out" "r['status'] == 'exported' and r['exported_count'] == 1 and r['host']['stepping'] == $OTHER_STEPPING and r['profiles'][0]['values']['parallel.minimum_elements'] == 65536 and not r['all_hosts']"
expect_exit 0 t export -o "$F/all.cache" --all-hosts --json
json "$SCRATCH/out" "r['exported_count'] == 4 and r['all_hosts'] and r['host'] is None and r['skipped_count'] == 0"
# Exporting everything reproduces the cache byte for byte (same writer, same order).
cmp -s "$F/all.cache" "$CACHE" || fail "export --all-hosts differs from the cache it read"
expect_exit 0 t export -o - --kernel Abs --threads 1
$PY - "$SCRATCH/out" <<'EOF' || fail "export -o - is not a one-profile cache file"
import sys, tomllib
doc = tomllib.load(open(sys.argv[1], "rb"))
assert doc["format"] == "onnx-light-kernel-tuning" and doc["format_version"] == 1, doc
(p,) = doc["profile"]
assert p["kernel"] == "Abs" and p["host"]["effective_threads"] == 1 and p["values"]["parallel.minimum_elements"] == 1024, p
assert p["provenance"]["source"] == "set", p
EOF
[ ! -s "$SCRATCH/err" ] || fail "export -o - wrote to stderr: $(cat "$SCRATCH/err")"
expect_exit 0 t export -o "$F/none.cache" --threads 16
expect_grep "$SCRATCH/out" "no profile of .* matches the selection"
expect_exit 0 "$TOOL" --cache "$F/none.cache" inspect --json
json "$SCRATCH/out" "r['status'] == 'loaded' and r['profiles'] == []"
# Usage errors: an unknown class, --json with -o -, both host selections, no -o.
expect_exit 2 t export -o "$F/x.cache" --host-class stepping
expect_grep "$SCRATCH/err" "--host-class: unknown host match 'stepping' \\(use exact, model, microarchitecture or isa\\)"
[ ! -e "$F/x.cache" ] || fail "export --host-class stepping wrote a file"
expect_exit 0 t export -o "$F/exact.cache" --host-class exact
expect_exit 2 t export -o - --json
expect_exit 2 t export -o "$F/x.cache" --all-hosts --as-host "$F/other.json"
expect_exit 2 t export
expect_exit 2 t export -o "$F/x.cache" --kernel NoSuchKernel
[ ! -e "$F/x.cache" ] || fail "a refused export wrote its output"
# A missing source cache is exit 2; an output that is not a cache is never overwritten (exit 1).
expect_exit 2 "$TOOL" --cache "$SCRATCH/absent.cache" export -o "$F/x.cache"
expect_grep "$SCRATCH/err" "absent.cache: no such cache file"
printf 'not a cache\n' >"$F/notes.txt"
expect_exit 1 t export -o "$F/notes.txt"
expect_grep "$SCRATCH/out" "^malformed: $F/notes.txt was not written"
[ "$(cat "$F/notes.txt")" = "not a cache" ] || fail "export overwrote a file that is not a cache"
[ ! -e "$F/notes.txt.lock" ] || fail "a failed export left a lock file"

# --- import: round trip into an empty cache -------------------------------------------------------
FRESH="$SCRATCH/fresh/kernel_tuning.cache"
expect_exit 0 "$TOOL" --cache "$FRESH" import "$F/mine.cache" --json
json "$SCRATCH/out" "r['status'] == 'imported' and r['added_count'] == 3 and r['replaced_count'] == 0 and r['kept_count'] == 0 and r['conflicts'] == [] and r['files'] == [{'path': '$F/mine.cache', 'profiles': 3}]"
expect_exit 0 t inspect --json
cp "$SCRATCH/out" "$F/before.json"
expect_exit 0 "$TOOL" --cache "$FRESH" inspect --json
$PY - "$F/before.json" "$SCRATCH/out" <<'EOF' || fail "export -> import changed a profile"
import json, sys
def mine(path):
    drop = {"index", "layer", "local", "classification", "shadowed"}
    return sorted((json.dumps({k: v for k, v in p.items() if k not in drop}, sort_keys=True)
                   for p in json.load(open(path))["profiles"] if p["classification"] == "loaded"))
assert mine(sys.argv[1]) == mine(sys.argv[2]), (mine(sys.argv[1]), mine(sys.argv[2]))
assert len(mine(sys.argv[2])) == 3
EOF
# Again: nothing to change, and the file keeps its bytes.
cp "$FRESH" "$F/fresh.before"
expect_exit 0 "$TOOL" --cache "$FRESH" import "$F/mine.cache"
expect_grep "$SCRATCH/out" "^unchanged .*: 0 added, 0 replaced, 3 kept, 0 conflicts"
cmp -s "$FRESH" "$F/fresh.before" || fail "an import that changes nothing rewrote the cache"

# --- import: conflicts, each policy --------------------------------------------------------------
# The same key, host and threads as the cache's Abs at 2 threads, another value and a later date.
sed -e 's/"parallel.minimum_elements" = 4096/"parallel.minimum_elements" = 32768/' \
    -e 's/^written = .*/written = 2099-01-01T00:00:00Z/' -e 's/^hostname = .*/hostname = "build-07"/' \
  "$F/abs2.cache" >"$F/newer.cache"
sed -e 's/"parallel.minimum_elements" = 4096/"parallel.minimum_elements" = 2048/' \
    -e 's/^written = .*/written = 2000-01-01T00:00:00Z/' "$F/abs2.cache" >"$F/older.cache"
abs2() { # the cache's Abs value at 2 threads on this machine
  t inspect --kernel Abs --threads 2 --json >"$SCRATCH/abs2.json"
  $PY -c "
import json, sys
(p,) = [p for p in json.load(open(sys.argv[1]))['profiles'] if p['classification'] == 'loaded']
print(p['values']['parallel.minimum_elements'])" "$SCRATCH/abs2.json"
}
cp "$CACHE" "$F/cache.orig"
expect_exit 0 t import "$F/newer.cache" --json
json "$SCRATCH/out" "r['status'] == 'unchanged' and r['on_conflict'] == 'keep' and r['conflict_count'] == 1 and r['kept_count'] == 1"
json "$SCRATCH/out" "(lambda c: c['resolution'] == 'kept' and c['existing']['values']['parallel.minimum_elements'] == 4096 and c['incoming']['values']['parallel.minimum_elements'] == 32768 and c['existing']['source'] == '$CACHE' and c['incoming']['source'] == '$F/newer.cache' and c['incoming']['provenance']['hostname'] == 'build-07' and c['incoming']['provenance']['written'] == '2099-01-01T00:00:00Z' and c['existing']['provenance']['source'] == 'set' and c['kernel'] == 'Abs' and c['effective_threads'] == 2)(r['conflicts'][0])"
[ "$(abs2)" = 4096 ] || fail "import --on-conflict keep changed the value"
cmp -s "$CACHE" "$F/cache.orig" || fail "import --on-conflict keep rewrote the cache"
# The human summary shows both sides.
expect_exit 0 t import "$F/newer.cache"
expect_grep "$SCRATCH/out" "^1 conflict:"
expect_grep "$SCRATCH/out" "Abs .* 2 .* kept .*parallel.minimum_elements=4096 .*parallel.minimum_elements=32768 .*newer.cache #0 \(set 2099-01-01T00:00:00Z on build-07\)"
expect_exit 1 t import "$F/newer.cache" --on-conflict fail
expect_grep "$SCRATCH/out" "^conflict: .* was not changed"
expect_grep "$SCRATCH/out" "unresolved"
cmp -s "$CACHE" "$F/cache.orig" || fail "import --on-conflict fail wrote the cache"
expect_exit 0 t import "$F/older.cache" --on-conflict newest --json
json "$SCRATCH/out" "r['conflicts'][0]['resolution'] == 'kept'"
[ "$(abs2)" = 4096 ] || fail "an older profile won with --on-conflict newest"
expect_exit 0 t import "$F/newer.cache" --on-conflict newest --json
json "$SCRATCH/out" "r['status'] == 'imported' and r['replaced_count'] == 1 and r['conflicts'][0]['resolution'] == 'replaced'"
[ "$(abs2)" = 32768 ] || fail "import --on-conflict newest kept the older value"
expect_exit 0 t import "$F/older.cache" --on-conflict replace
[ "$(abs2)" = 2048 ] || fail "import --on-conflict replace kept the cache's value"
expect_exit 0 t import "$F/abs2.cache" --on-conflict replace
[ "$(abs2)" = 4096 ] || fail "restoring the value by import failed"
expect_exit 2 t import "$F/newer.cache" --on-conflict oldest

# --- import: an invalid or malformed file changes nothing -----------------------------------------
sed -e 's/"parallel.minimum_elements" = 1024/"parallel.minimum_elements" = -5/' "$F/mine.cache" >"$F/invalid.cache"
printf '[[profile\n' >"$F/malformed.cache"
snapshot "$SCRATCH/cache" >"$F/snap.before"
expect_exit 1 t import "$F/older.cache" "$F/invalid.cache" --on-conflict replace
expect_grep "$SCRATCH/err" "import: nothing was written: 1 problem in the inputs: profile 0 \(onnx_light/Abs/.*\) in $F/invalid.cache: .*parallel.minimum_elements"
expect_exit 1 t import "$F/malformed.cache" --json
json "$SCRATCH/out" "r['error']['kind'] == 'invalid_value' and '$F/malformed.cache is malformed' in r['error']['message'] and r['error']['exit_status'] == 1"
expect_exit 2 t import "$F/mine.cache" "$F/absent.cache"
expect_grep "$SCRATCH/err" "absent.cache"
expect_exit 2 t import
snapshot "$SCRATCH/cache" >"$F/snap.after"
diff "$F/snap.before" "$F/snap.after" >&2 || fail "a refused import changed the cache directory"
# A malformed cache is never overwritten.
printf '[[[ broken\n' >"$SCRATCH/broken.cache"
expect_exit 1 "$TOOL" --cache "$SCRATCH/broken.cache" import "$F/mine.cache" --json
json "$SCRATCH/out" "r['status'] == 'malformed' and r['added'] == []"
[ "$(cat "$SCRATCH/broken.cache")" = "[[[ broken" ] || fail "import overwrote a malformed cache"

# --- merge: order independence, idempotence, conflicts ---------------------------------------------
expect_exit 0 t export -o "$F/this.cache"
expect_exit 0 t export -o "$F/that.cache" --as-host "$F/other.json"
expect_exit 0 "$TOOL" merge "$F/this.cache" "$F/that.cache" "$F/mine.cache" -o "$F/m1.cache"
expect_grep "$SCRATCH/out" "^merged .* into $F/m1.cache: 4 profiles, 0 conflicts \(fail\)"
expect_exit 0 "$TOOL" merge "$F/mine.cache" "$F/that.cache" "$F/this.cache" -o "$F/m2.cache" --json
json "$SCRATCH/out" "r['status'] == 'merged' and r['profile_count'] == 4 and r['conflict_count'] == 0 and [i['profiles'] for i in r['inputs']] == [3, 1, 3]"
cmp -s "$F/m1.cache" "$F/m2.cache" || fail "merge depends on the order of its inputs"
cmp -s "$F/m1.cache" "$CACHE" || fail "merging the exports of every host differs from the cache"
expect_exit 0 "$TOOL" merge "$F/m1.cache" "$F/m1.cache" -o -
cmp -s "$SCRATCH/out" "$F/m1.cache" || fail "merge(X, X) is not X"
[ ! -e "$F/m1.cache.lock" ] || fail "merge left a lock file next to its output"
# The cache and the system cache are not touched.
snapshot "$SCRATCH/cache" >"$F/snap.before"
expect_exit 1 "$TOOL" merge "$F/abs2.cache" "$F/newer.cache" -o "$F/m3.cache"
expect_grep "$SCRATCH/out" "^conflict: $F/m3.cache was not written"
expect_grep "$SCRATCH/out" "unresolved .*parallel.minimum_elements=4096 .*abs2.cache #0 .*parallel.minimum_elements=32768 .*newer.cache #0"
[ ! -e "$F/m3.cache" ] || fail "a merge with a conflict wrote its output"
expect_exit 1 "$TOOL" merge "$F/abs2.cache" "$F/newer.cache" -o -
[ ! -s "$SCRATCH/out" ] || fail "merge -o - printed a file despite a conflict"
expect_grep "$SCRATCH/err" "unresolved"
for policy in keep replace newest; do
  expect_exit 0 "$TOOL" merge "$F/abs2.cache" "$F/newer.cache" -o "$F/m-$policy.cache" --on-conflict $policy --json
  json "$SCRATCH/out" "r['conflict_count'] == 1 and r['on_conflict'] == '$policy'"
done
grep -q '"parallel.minimum_elements" = 4096' "$F/m-keep.cache" || fail "merge --on-conflict keep did not keep the first"
grep -q '"parallel.minimum_elements" = 32768' "$F/m-replace.cache" || fail "merge --on-conflict replace did not take the last"
grep -q '"parallel.minimum_elements" = 32768' "$F/m-newest.cache" || fail "merge --on-conflict newest did not take the newest"
expect_exit 1 "$TOOL" merge "$F/mine.cache" "$F/invalid.cache" -o "$F/m4.cache"
expect_grep "$SCRATCH/err" "merge: nothing was written: .*invalid.cache"
[ ! -e "$F/m4.cache" ] || fail "a merge of an invalid file wrote its output"
expect_exit 2 "$TOOL" merge "$F/mine.cache"
expect_exit 2 "$TOOL" merge "$F/mine.cache" -o - --json
snapshot "$SCRATCH/cache" >"$F/snap.after"
diff "$F/snap.before" "$F/snap.after" >&2 || fail "merge touched the cache"

# --- diff ----------------------------------------------------------------------------------------
expect_exit 0 "$TOOL" diff "$F/mine.cache" "$F/m-replace.cache"
expect_grep "$SCRATCH/out" "^--- $F/mine.cache \(3 profiles\)"
expect_grep "$SCRATCH/out" "^- Abs float .* 1 thread .*parallel.minimum_elements=1024"
expect_grep "$SCRATCH/out" "^~ Abs float .* 2 threads .*written on build-07"
expect_grep "$SCRATCH/out" "^    parallel.minimum_elements: 4096 -> 32768"
expect_grep "$SCRATCH/out" "^0 added, 2 removed, 1 changed, 0 unchanged$"
expect_exit 1 "$TOOL" diff "$F/mine.cache" "$F/m-replace.cache" --exit-code
expect_exit 0 "$TOOL" diff "$F/m1.cache" "$CACHE" --exit-code
expect_grep "$SCRATCH/out" "^0 added, 0 removed, 0 changed, 4 unchanged"
expect_exit 0 "$TOOL" diff "$F/this.cache" "$F/all.cache" --json
json "$SCRATCH/out" "r['identical'] is False and r['added_count'] == 1 and r['removed_count'] == 0 and r['changed_count'] == 0 and r['unchanged_count'] == 3 and r['added'][0]['stepping'] == $OTHER_STEPPING and r['a'] == {'path': '$F/this.cache', 'profiles': 3}"
expect_exit 0 "$TOOL" diff "$F/abs2.cache" "$F/newer.cache" --json
json "$SCRATCH/out" "r['changed'][0]['changed_values'] == ['parallel.minimum_elements'] and r['changed'][0]['a']['values']['parallel.minimum_elements'] == 4096 and r['changed'][0]['b']['values']['parallel.minimum_elements'] == 32768"
# Provenance alone is no difference.
sed -e 's/^written = .*/written = 2030-01-01T00:00:00Z/' "$F/abs2.cache" >"$F/restamped.cache"
expect_exit 0 "$TOOL" diff "$F/abs2.cache" "$F/restamped.cache" --exit-code
# Errors are 2, with or without --exit-code.
expect_exit 2 "$TOOL" diff "$F/mine.cache" "$F/absent.cache" --exit-code
expect_exit 2 "$TOOL" diff "$F/mine.cache" "$F/malformed.cache" --exit-code
expect_grep "$SCRATCH/err" "malformed.cache is malformed"
expect_exit 2 "$TOOL" diff "$F/mine.cache" "$F/malformed.cache" --json
json "$SCRATCH/out" "r['error']['exit_status'] == 2 and r['error']['kind'] == 'invalid_value'"
expect_exit 2 "$TOOL" diff "$F/mine.cache"
echo "fleet verbs: ok"
