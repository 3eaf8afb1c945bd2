#!/usr/bin/env bash
# `host [--json]` and `--as-host FILE` on inspect, list, propose and load (issue 21, phase 1):
# the descriptor's keys, the round trip host --json -> --as-host, foreign hosts, bad files, and
# that --as-host writes nothing.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
mkdir -p "$SCRATCH/cache"
CACHE="$SCRATCH/cache/kernel_tuning.cache"
IMPL=$(host_elementwise_implementation)

# --- host --json: exactly the descriptor's keys, with the types the cache records.
expect_exit 0 "$TOOL" host --json
cp "$SCRATCH/out" "$SCRATCH/host.json"
$PY - "$SCRATCH/host.json" <<'EOF' || fail "host --json keys"
import json, os, sys
h = json.load(open(sys.argv[1]))
strings = {"architecture", "vendor", "microarchitecture", "hostname"}
integers = {"family", "model", "stepping", "l1d_cache_bytes", "l2_cache_bytes", "l3_cache_bytes",
            "physical_cores", "logical_cores", "effective_threads"}
assert set(h) == strings | integers | {"features", "idle_spin"}, sorted(h)
assert h["idle_spin"] is True, h["idle_spin"]  # host describes sessions of the default spin
for k in strings: assert isinstance(h[k], str), k
for k in integers: assert isinstance(h[k], int) and not isinstance(h[k], bool) and h[k] >= 0, k
assert all(isinstance(f, str) for f in h["features"]) and h["features"] == sorted(set(h["features"]))
assert h["architecture"] == os.uname().machine, h["architecture"]
assert h["effective_threads"] >= 1 and h["logical_cores"] >= h["physical_cores"] >= 1
EOF
# The default thread count is one per physical core; --threads sets it.
$PY -c "import json,sys; h=json.load(open(sys.argv[1])); assert h['effective_threads']==h['physical_cores'], h" \
  "$SCRATCH/host.json" || fail "default effective_threads is not the physical core count"
expect_exit 0 "$TOOL" host --json --threads 3
$PY -c "import json,sys; assert json.load(open(sys.argv[1]))['effective_threads']==3" "$SCRATCH/out" \
  || fail "host --threads 3"
expect_exit 2 "$TOOL" host --threads -1

# The human form names every field under its JSON key.
expect_exit 0 "$TOOL" host
for key in architecture vendor family model stepping microarchitecture features l1d_cache_bytes \
           l2_cache_bytes l3_cache_bytes physical_cores logical_cores effective_threads hostname; do
  expect_grep "$SCRATCH/out" "^$key( |$)"
done
expect_grep "$SCRATCH/out" "^host: "

# The descriptor is what the cache records: a profile written here carries the same host.
expect_exit 0 "$TOOL" --cache "$CACHE" set Abs parallel.minimum_elements=4096 --no-load
expect_exit 0 "$TOOL" --cache "$CACHE" set Relu parallel.minimum_elements=8192 --threads 1 --no-load
expect_exit 0 "$TOOL" --cache "$CACHE" inspect --kernel Abs --json
$PY - "$SCRATCH/out" "$SCRATCH/host.json" <<'EOF' || fail "host --json differs from the host a profile records"
import json, sys
profile = json.load(open(sys.argv[1]))["profiles"][0]
host = json.load(open(sys.argv[2]))
host.pop("hostname")
recorded = {k: profile[k] for k in host}
assert recorded == host, (recorded, host)
EOF

# --- round trip: --as-host with this machine's descriptor changes nothing in any JSON report.
for verb in inspect list propose load; do
  expect_exit 0 "$TOOL" --cache "$CACHE" $verb --json
  cp "$SCRATCH/out" "$SCRATCH/plain.json"
  expect_exit 0 "$TOOL" --cache "$CACHE" $verb --json --as-host "$SCRATCH/host.json"
  cmp -s "$SCRATCH/plain.json" "$SCRATCH/out" || { diff "$SCRATCH/plain.json" "$SCRATCH/out" | head -20 >&2;
    fail "$verb --as-host (this host) differs from plain $verb"; }
done
expect_exit 0 "$TOOL" --cache "$CACHE" inspect --as-host "$SCRATCH/host.json"
expect_grep "$SCRATCH/out" "^as host: .*host.json: "
expect_grep "$SCRATCH/out" "Abs +float +$IMPL .* loaded +yes"

# --- another stepping: every profile is another machine's (incompatible, not local).
$PY - "$SCRATCH/host.json" "$SCRATCH/stepping.json" "$SCRATCH/threads.json" <<'EOF'
import json, sys
h = json.load(open(sys.argv[1]))
json.dump(dict(h, stepping=h["stepping"] + 1, hostname="sim-a"), open(sys.argv[2], "w"))
json.dump(dict(h, effective_threads=1, hostname="sim-b"), open(sys.argv[3], "w"))
EOF
expect_exit 0 "$TOOL" --cache "$CACHE" inspect --as-host "$SCRATCH/stepping.json"
expect_grep "$SCRATCH/out" "Abs +float +$IMPL .* incompatible +no"
expect_grep "$SCRATCH/out" "Relu +float +$IMPL .* incompatible +no"
expect_grep "$SCRATCH/out" "written on another machine \(host.stepping is [0-9]+, here [0-9]+\)"
expect_exit 0 "$TOOL" --cache "$CACHE" inspect --json --as-host "$SCRATCH/stepping.json"
$PY -c "
import json, sys
r = json.load(open(sys.argv[1]))
assert [(p['classification'], p['local']) for p in r['profiles']] == [('incompatible', False)] * 2, r['profiles']
" "$SCRATCH/out" || fail "inspect --as-host (other stepping)"
expect_exit 0 "$TOOL" --cache "$CACHE" load --json --as-host "$SCRATCH/stepping.json"
$PY -c "
import json, sys
r = json.load(open(sys.argv[1]))
assert r['loaded'] == [] and len(r['incompatible']) == 2, r
" "$SCRATCH/out" || fail "load --as-host (other stepping)"
expect_exit 0 "$TOOL" --cache "$CACHE" propose Abs --element-type float --json --as-host "$SCRATCH/stepping.json"
$PY -c "
import json, sys
r = json.load(open(sys.argv[1]))
assert r['covered'] == [] and len(r['missing']) == 1, r
" "$SCRATCH/out" || fail "propose --as-host (other stepping)"
expect_exit 0 "$TOOL" --cache "$CACHE" list Abs --element-type float --json --as-host "$SCRATCH/stepping.json"
$PY -c "
import json, sys
k = json.load(open(sys.argv[1]))['kernels'][0]
assert k['cached_values'] is None and k['active_source'] == 'portable_default', k
" "$SCRATCH/out" || fail "list --as-host (other stepping)"

# --- another thread count: the same machine, so loaded, but only the 1-thread profile is local.
expect_exit 0 "$TOOL" --cache "$CACHE" inspect --as-host "$SCRATCH/threads.json"
expect_grep "$SCRATCH/out" "local means that host at 1 thread$"
expect_grep "$SCRATCH/out" "Abs +float +$IMPL .* loaded +no"
expect_grep "$SCRATCH/out" "Relu +float +$IMPL .* loaded +yes"
expect_exit 0 "$TOOL" --cache "$CACHE" propose Abs Relu --element-type float --json --as-host "$SCRATCH/threads.json"
$PY -c "
import json, sys
r = json.load(open(sys.argv[1]))
assert [e['kernel'] for e in r['covered']] == ['Relu'] and [e['kernel'] for e in r['missing']] == ['Abs'], r
" "$SCRATCH/out" || fail "propose --as-host (1 thread)"
# An explicit --threads still wins over the file's effective_threads.
expect_exit 0 "$TOOL" --cache "$CACHE" list Relu --element-type float --json --threads 0 --as-host "$SCRATCH/threads.json"
$PY -c "
import json, sys
k = json.load(open(sys.argv[1]))['kernels'][0]
assert k['cached_values']['parallel.minimum_elements'] == 8192 and k['active_source'] == 'published_profile', k
" "$SCRATCH/out" || fail "--threads 0 means the described host's threads"
PHYS=$($PY -c "import json,sys; print(json.load(open(sys.argv[1]))['physical_cores'])" "$SCRATCH/host.json")
expect_exit 0 "$TOOL" --cache "$CACHE" list Abs --element-type float --json --threads "$PHYS" --as-host "$SCRATCH/threads.json"
$PY -c "
import json, sys
k = json.load(open(sys.argv[1]))['kernels'][0]
assert k['cached_values']['parallel.minimum_elements'] == 4096, k
" "$SCRATCH/out" || fail "list --as-host --threads N"

# --- bad files: an error naming the file and the field, non-zero exit, in text and JSON.
bad() {  # bad NAME EXIT PATTERN JSON-TEXT
  printf '%s' "$4" >"$SCRATCH/$1.json"
  for verb in inspect list propose load; do
    expect_exit "$2" "$TOOL" --cache "$CACHE" $verb --as-host "$SCRATCH/$1.json"
    expect_grep "$SCRATCH/err" "$SCRATCH/$1.json: .*$3"
    [ ! -s "$SCRATCH/out" ] || fail "$verb --as-host $1 printed a report"
  done
}
HOST=$(cat "$SCRATCH/host.json")
edit() { $PY -c "import json,sys; h=json.loads(sys.argv[1]); $1; print(json.dumps(h))" "$HOST"; }
bad notjson 1 "not a JSON host descriptor" '{"architecture": '
bad array 1 "must be a JSON object" '[1, 2]'
bad missing 1 "field 'stepping' is missing" "$(edit 'del h["stepping"]')"
bad unknown 1 "unknown field 'steping'" "$(edit 'h["steping"] = 1')"
bad type 1 "field 'stepping' must be an integer, got a string" "$(edit 'h["stepping"] = "1"')"
bad fraction 1 "field 'family' must be an integer" "$(edit 'h["family"] = 6.5')"
bad negative 1 "field 'model' = -1 is out of range" "$(edit 'h["model"] = -1')"
bad zero_threads 1 "field 'effective_threads' = 0 is out of range" "$(edit 'h["effective_threads"] = 0')"
bad features 1 "field 'features' must be an array of strings; element 0 is an integer" "$(edit 'h["features"] = [1]')"
bad vendor 1 "field 'vendor' must be a string, got null" "$(edit 'h["vendor"] = None')"
expect_exit 2 "$TOOL" --cache "$CACHE" inspect --as-host "$SCRATCH/absent.json"
expect_grep "$SCRATCH/err" "$SCRATCH/absent.json: no such host descriptor file"
expect_exit 2 "$TOOL" --cache "$CACHE" inspect --json --as-host "$SCRATCH/absent.json"
$PY -c "
import json, sys
e = json.load(open(sys.argv[1]))['error']
assert e['kind'] == 'not_found' and 'absent.json' in e['message'], e
" "$SCRATCH/out" || fail "--json error for a missing --as-host file"
expect_exit 1 "$TOOL" --cache "$CACHE" load --json --as-host "$SCRATCH/type.json"
expect_grep "$SCRATCH/out" "type_mismatch"
# A file missing only the informational hostname is fine.
edit 'del h["hostname"]' >"$SCRATCH/nohostname.json"
expect_exit 0 "$TOOL" --cache "$CACHE" inspect --as-host "$SCRATCH/nohostname.json"

# --- --as-host writes nothing: cache bytes, its directory and the system cache stay as they were.
SYSTEM="$SCRATCH/system/kernel_tuning.cache"
mkdir -p "$SCRATCH/system"
expect_exit 0 "$TOOL" --cache "$SYSTEM" set Abs parallel.minimum_elements=2048 --threads 1 --no-load
export ONNX_LIGHT_SYSTEM_TUNING_CACHE="$SYSTEM"
# Hashes and listings (sizes, times) of both cache directories: a lock or temporary file, a
# rewrite or a touch all show.
snapshot() {
  (cd "$SCRATCH" && sha256sum cache/* system/*; ls -ld --time-style=full-iso cache system; ls -lA --time-style=full-iso cache system)
}
snapshot >"$SCRATCH/snapshot-before"
for host in host stepping threads; do
  for verb in inspect list propose load; do
    expect_exit 0 "$TOOL" --cache "$CACHE" $verb --as-host "$SCRATCH/$host.json"
    expect_exit 0 "$TOOL" --cache "$CACHE" $verb --json --as-host "$SCRATCH/$host.json"
  done
done
snapshot >"$SCRATCH/snapshot-after"
diff "$SCRATCH/snapshot-before" "$SCRATCH/snapshot-after" >&2 || fail "--as-host changed a file"
echo "host: ok"
