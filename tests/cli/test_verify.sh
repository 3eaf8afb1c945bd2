#!/usr/bin/env bash
# `verify`: re-measures cached thresholds without writing or publishing: nothing to verify on an
# empty cache; a cached value far below anything this machine can measure (1 element) is reported
# drifted with both values, exit 0 unless --strict; a malformed cache is exit 1 and left as it
# was; usage errors are exit 2.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
CACHE="$SCRATCH/verify.cache"
rm -f "$CACHE"

# Empty (missing) cache: nothing to verify, not an error, and no file created.
expect_exit 0 "$TOOL" --cache "$CACHE" verify
expect_grep "$SCRATCH/out" "nothing to verify"
test ! -e "$CACHE" || fail "verify created the cache"
expect_exit 0 "$TOOL" --cache "$CACHE" verify --json
$PY - "$SCRATCH/out" <<'PYEOF'
import json, sys
r = json.load(open(sys.argv[1]))
assert r["cache_status"] == "not_found" and r["profiles"] == [], r
assert r["summary"] == {"holds": 0, "drifted": 0, "not_measured": 0}, r
PYEOF

# Parallel Abs never pays at one element: a cached threshold of 1 has drifted from any pick.
expect_exit 0 "$TOOL" --cache "$CACHE" set Abs parallel.minimum_elements=1 --threads 2
cp "$CACHE" "$SCRATCH/before.cache"
# --allow-load: ctest runs other tests beside this one, and a loaded window gets no verdict without it.
expect_exit 0 "$TOOL" --cache "$CACHE" verify Abs --threads 2 --max-duration-ms 400 --json --allow-load
$PY - "$SCRATCH/out" <<'PYEOF'
import json, sys
r = json.load(open(sys.argv[1]))
assert r["cache_status"] == "loaded" and r["effective_threads"] == 2, r
(p,) = r["profiles"]
assert p["kernel"] == "Abs" and p["parameter"] == "parallel.minimum_elements", p
assert p["cached"] == 1, p
assert p["status"] == "drifted", p
assert p["measured"] >= 1024 and p["confidence"] in ("high", "medium", "low"), p
assert "cached parallel.minimum_elements=1" in p["reason"] and str(p["measured"]) in p["reason"], p
assert r["summary"]["drifted"] == 1, r
assert r["elapsed_ms"] <= 1.2 * r["maximum_duration_ms"], r
PYEOF
cmp -s "$CACHE" "$SCRATCH/before.cache" || fail "verify changed the cache"
expect_exit 1 "$TOOL" --cache "$CACHE" verify Abs --threads 2 --max-duration-ms 200 --strict --allow-load
expect_grep "$SCRATCH/out" "drifted"
expect_grep "$SCRATCH/out" "re-calibrate the drifted keys"
# Another thread count has no profile: nothing to verify there.
expect_exit 0 "$TOOL" --cache "$CACHE" verify Abs --threads 3 --json
$PY -c 'import json, sys; r = json.load(open(sys.argv[1])); assert r["profiles"] == [], r' "$SCRATCH/out"

# A malformed cache: exit 1, named, untouched.
printf 'this is not toml [[[\n' >"$SCRATCH/bad.cache"
cp "$SCRATCH/bad.cache" "$SCRATCH/bad.copy"
expect_exit 1 "$TOOL" --cache "$SCRATCH/bad.cache" verify
expect_grep "$SCRATCH/out" "malformed"
expect_grep "$SCRATCH/out" "bad.cache"
cmp -s "$SCRATCH/bad.cache" "$SCRATCH/bad.copy" || fail "verify changed a malformed cache"

# Usage errors.
expect_exit 2 "$TOOL" --cache "$CACHE" verify --max-duration-ms 0
expect_exit 2 "$TOOL" --cache "$CACHE" verify --no-such-flag
echo "verify: OK"
