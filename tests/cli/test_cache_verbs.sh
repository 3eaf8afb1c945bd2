#!/usr/bin/env bash
# The cache verbs (list, propose, set, inspect, load, remove): human and --json output, filters,
# --help with examples, and bad flags (exit 2) versus failed operations (exit 1).
set -euo pipefail
source "$(dirname "$0")/lib.sh"
CACHE="$SCRATCH/nested/dir/kernel_tuning.cache"
T=("$TOOL" --cache "$CACHE" --color never)
IMPL=$(host_elementwise_implementation)

# --help of every verb shows examples.
for verb in list propose set inspect load remove; do
  expect_exit 0 "$TOOL" "$verb" --help
  expect_grep "$SCRATCH/out" "^Examples:"
  expect_grep "$SCRATCH/out" "--json"
  expect_grep "$SCRATCH/out" "--element-type"
done

# Bad flags and bad values for flags are usage errors (2).
expect_exit 2 "${T[@]}" list --no-such-flag
expect_exit 2 "${T[@]}" list --element-type notatype
expect_grep "$SCRATCH/err" "unknown element type 'notatype'"
expect_exit 2 "${T[@]}" list --threads -3
expect_exit 2 "${T[@]}" set Abs
expect_exit 2 "${T[@]}" set
expect_exit 2 "${T[@]}" set Abs parallel.minimum_elements=1 --element-type float --element-type double
expect_exit 2 "${T[@]}" set Abs parallel.minimum_elements=1 --implementation all
expect_exit 2 "${T[@]}" inspect a b
expect_exit 2 "${T[@]}" remove </dev/null
expect_grep "$SCRATCH/err" "pass --yes"

# list before anything is cached: defaults, portable_default, the cache path and its state.
expect_exit 0 "${T[@]}" list Abs --element-type float
expect_grep "$SCRATCH/out" "cache: $CACHE \(not_found\)"
expect_grep "$SCRATCH/out" "^Abs +float +$IMPL +[0-9]+ +parallel.minimum_elements +32768 +- +32768 +portable_default +yes"
expect_exit 0 "${T[@]}" list --json --kernel Abs --element-type 1
$PY - "$SCRATCH/out" <<'PYEOF'
import json, sys
r = json.load(open(sys.argv[1]))
assert set(r) == {"cache_path", "cache_status", "diagnostics", "kernels"}, r.keys()
assert r["cache_status"] == "not_found"
(k,) = r["kernels"]
assert set(k) == {"active_source", "active_values", "cached_values", "calibratable", "defaults", "device",
                  "device_name", "element_type", "implementation", "kernel", "library", "matched_by",
                  "parameter_names", "shadows", "tuning_abi"}, k.keys()
assert k["cached_values"] is None and k["active_source"] == "portable_default", k
assert k["matched_by"] is None and k["shadows"] == [], k
assert k["device"] == -1 and k["device_name"] == "CPU" and k["element_type"] == 1, k
PYEOF

# Unknown kernels and values are failed operations (1) with a message naming them.
expect_exit 2 "${T[@]}" list Abz
expect_grep "$SCRATCH/err" "unknown kernel 'Abz': did you mean Abs"
expect_exit 2 "${T[@]}" set Abs parallel.minimum_elements=0
expect_grep "$SCRATCH/err" "below the minimum"
expect_exit 2 "${T[@]}" set Abs no.such=1
expect_grep "$SCRATCH/err" "no parameter 'no.such'"
expect_exit 2 "${T[@]}" set Abs parallel.minimum_elements=lots
[[ ! -e "$SCRATCH/nested" ]] || fail "a refused set created files"

# propose is read-only and lists Abs float as missing and calibratable.
expect_exit 0 "${T[@]}" propose Abs --element-type float --json
$PY - "$SCRATCH/out" <<'PYEOF'
import json, sys
r = json.load(open(sys.argv[1]))
assert set(r) == {"cache_path", "cache_status", "selected", "covered", "missing", "calibratable", "unsupported",
                  "diagnostics"}, r.keys()
assert len(r["selected"]) == 1 and len(r["missing"]) == 1 and len(r["calibratable"]) == 1 and not r["covered"], r
PYEOF
[[ ! -e "$SCRATCH/nested" ]] || fail "propose wrote something"

# set: human output shows old -> new and where the old value came from; creates the directories.
expect_exit 0 "${T[@]}" set Abs parallel.minimum_elements=16K --threads 2
expect_grep "$SCRATCH/out" "^updated $CACHE"
expect_grep "$SCRATCH/out" "parallel.minimum_elements +32768 +default +-> +16384"
expect_grep "$SCRATCH/out" "published 1 profile"
[[ -f "$CACHE" ]] || fail "cache not written"
expect_exit 0 "${T[@]}" set Abs parallel.minimum_elements=8192 --threads 2
expect_grep "$SCRATCH/out" "parallel.minimum_elements +16384 +user cache +-> +8192"
expect_exit 0 "${T[@]}" set --kernel Relu parallel.minimum_elements=4096 --element-type double --threads 1 --no-load --json
$PY - "$SCRATCH/out" <<'PYEOF'
import json, sys
r = json.load(open(sys.argv[1]))
assert set(r) == {"status", "path", "values", "updated", "preserved", "pruned", "diagnostics", "load"}, r.keys()
assert r["status"] == "updated" and r["load"] is None, r
assert r["values"] == {"parallel.minimum_elements": 4096}, r
(u,) = r["updated"]
assert u["kernel"] == "Relu" and u["element_type"] == 11 and set(u) == {"library", "kernel", "implementation",
       "element_type", "device", "device_name", "tuning_abi"}, u
assert [p["kernel"] for p in r["preserved"]] == ["Abs"], r["preserved"]
PYEOF
grep -q '^# onnx-light kernel tuning cache' "$CACHE" || fail "no header comment"
grep -q '^format = "onnx-light-kernel-tuning"$' "$CACHE" || fail "no format line"
grep -q '^written = [0-9-]*T[0-9:]*Z$' "$CACHE" || fail "provenance.written is not a TOML date-time"

# inspect: table, --long, filters, JSON with host fields, classification and provenance.
expect_exit 0 "${T[@]}" inspect
expect_grep "$SCRATCH/out" "2 profiles"
expect_grep "$SCRATCH/out" "^user +0 +Abs +float +$IMPL +[0-9]+ +2 +.* loaded +yes +parallel.minimum_elements=8192( store.streaming_minimum_elements=[0-9]+)? +set"
expect_exit 0 "${T[@]}" inspect --long --kernel Relu
expect_grep "$SCRATCH/out" "features: "
expect_exit 0 "$TOOL" inspect "$CACHE" --json --threads 2
$PY - "$SCRATCH/out" "$CACHE" <<'PYEOF'
import json, sys
r = json.load(open(sys.argv[1]))
assert set(r) == {"status", "path", "diagnostics", "profiles", "system_cache"} and r["status"] == "loaded", r
assert r["path"] == sys.argv[2]
(p,) = r["profiles"]  # --threads 2 filters the 1-thread Relu profile out
for key in ["architecture", "device", "device_name", "effective_threads", "element_type", "implementation", "kernel",
            "library", "local", "microarchitecture", "tuning_abi", "values", "vendor", "family", "model", "stepping",
            "features", "l1d_cache_bytes", "l2_cache_bytes", "l3_cache_bytes", "physical_cores", "logical_cores",
            "classification", "layer", "provenance"]:
    assert key in p, key
assert p["local"] is True and p["classification"] == "loaded" and p["layer"] == "user", p
# set fills the names it was not given from the defaults (the SIMD kernels' streaming threshold).
assert p["values"]["parallel.minimum_elements"] == 8192 and p["effective_threads"] == 2, p
assert set(p["values"]) <= {"parallel.minimum_elements", "store.streaming_minimum_elements"}, p
assert p["provenance"]["source"] == "set" and p["provenance"]["tool_version"], p
PYEOF
expect_exit 1 "$TOOL" inspect "$SCRATCH/does-not-exist.cache"

# list shows the cached value and, after loading, the active one.
expect_exit 0 "${T[@]}" list Abs --element-type float --threads 2
expect_grep "$SCRATCH/out" "8192 \(user\) +8192 +published_profile"
expect_exit 0 "${T[@]}" list Abs --element-type float --threads 3
expect_grep "$SCRATCH/out" "32768 +- +32768 +portable_default"

# load: classification lists and missing keys of a selection.
expect_exit 0 "${T[@]}" load --json --kernel Abs --element-type float,double --threads 2
$PY - "$SCRATCH/out" <<'PYEOF'
import json, sys
r = json.load(open(sys.argv[1]))
assert set(r) == {"status", "path", "published_generation", "loaded", "stale", "incompatible", "invalid",
                  "missing", "diagnostics"}, r.keys()
assert [k["element_type"] for k in r["loaded"]] == [1], r
assert [k["element_type"] for k in r["missing"]] == [11], r
assert r["published_generation"] >= 1
PYEOF
expect_exit 0 "${T[@]}" load
expect_grep "$SCRATCH/out" "would publish 2 profiles"

# remove: filtered, then whole file and lock.
expect_exit 0 "${T[@]}" remove --kernel Relu --yes
expect_grep "$SCRATCH/out" "removed 1 profile \\(1 key\\)"
expect_exit 0 "${T[@]}" inspect --json
$PY -c "import json,sys; r=json.load(open('$SCRATCH/out')); assert [p['kernel'] for p in r['profiles']] == ['Abs'], r"
expect_exit 0 "${T[@]}" remove --yes
[[ ! -e "$CACHE" && ! -e "$CACHE.lock" ]] || fail "remove left the cache or its lock"
expect_exit 0 "${T[@]}" remove --yes --json
$PY -c "import json; r=json.load(open('$SCRATCH/out')); assert r['status'] == 'not_found', r"
echo "ok"
