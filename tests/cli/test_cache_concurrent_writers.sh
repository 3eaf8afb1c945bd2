#!/usr/bin/env bash
# 8 processes x 50 `set` on distinct keys into one cache while a reader loops `inspect --json`:
# afterwards all 400 profiles are present and loaded, and the reader never saw a malformed or
# shrinking cache.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
CACHE="$SCRATCH/shared/kernel_tuning.cache"
WRITERS=8
EACH=50

# 400 distinct (kernel, element type, threads): every dispatched key of a few elementwise kernels
# times thread counts 1, 2, ...
"$TOOL" list --json --kernel Abs,Relu,Neg,Identity,Add,Sub,Mul,Div >"$SCRATCH/keys.json"
$PY - "$SCRATCH/keys.json" $((WRITERS * EACH)) >"$SCRATCH/jobs" <<'PYEOF'
import json, sys
keys = [(k["kernel"], k["element_type"]) for k in json.load(open(sys.argv[1]))["kernels"]]
need = int(sys.argv[2])
jobs = [(kernel, etype, threads) for threads in range(1, need + 1) for kernel, etype in keys][:need]
assert len(set(jobs)) == need
for kernel, etype, threads in jobs:
    print(kernel, etype, threads, 1000 + len(kernel) * 7 + etype * 13 + threads)
PYEOF
[[ $(wc -l <"$SCRATCH/jobs") == $((WRITERS * EACH)) ]] || fail "could not build $((WRITERS * EACH)) distinct keys"

# Reader: inspect in a loop until told to stop; record every status and profile count. Shell
# tools only, so that the reader leaves the CPU to the writers.
: >"$SCRATCH/reads"
(
  while [[ ! -e "$SCRATCH/stop" ]]; do
    "$TOOL" --cache "$CACHE" inspect --json >"$SCRATCH/read.json" 2>/dev/null || true
    # Keys are sorted: the report's own "status" comes first, system_cache's after the profiles
    # (which have "classification").
    status=$(grep -m1 -o '"status": "[a-z_]*"' "$SCRATCH/read.json" | cut -d'"' -f4 || true)
    count=$(grep -c '"effective_threads"' "$SCRATCH/read.json" || true)
    loaded=$(grep -c '"classification": "loaded"' "$SCRATCH/read.json" || true)
    echo "${status:-broken} $count $((count - loaded))" >>"$SCRATCH/reads"
  done
) &
READER=$!

start=$(date +%s)
pids=()
for ((w = 0; w < WRITERS; w++)); do
  (
    sed -n "$((w * EACH + 1)),$(((w + 1) * EACH))p" "$SCRATCH/jobs" | while read -r kernel etype threads value; do
      "$TOOL" --cache "$CACHE" set "$kernel" "parallel.minimum_elements=$value" --element-type "$etype" \
        --threads "$threads" --no-load --json >"$SCRATCH/w$w.out" 2>"$SCRATCH/w$w.err" ||
        { cat "$SCRATCH/w$w.out" "$SCRATCH/w$w.err" >&2; exit 1; }
    done
  ) &
  pids+=($!)
done
failed=0
for pid in "${pids[@]}"; do wait "$pid" || failed=1; done
touch "$SCRATCH/stop"
wait "$READER"
echo "writers took $(($(date +%s) - start)) s; reader made $(wc -l <"$SCRATCH/reads") reads"
[[ $failed == 0 ]] || fail "a writer failed"

# The reader only ever saw complete caches (or none yet), never fewer profiles than before.
$PY - "$SCRATCH/reads" <<'PYEOF'
import sys
last = 0
rows = [line.split() for line in open(sys.argv[1])]
assert rows, "the reader never ran"
for row in rows:
    assert row[0] in ("loaded", "not_found"), row
    count, bad = int(row[1]), int(row[2])
    assert bad == 0, row
    assert count >= last, (count, last)
    last = count
print("reads ok:", len(rows), "last count", last)
PYEOF

# All 400 present, loaded, with the value each writer set.
expect_exit 0 "$TOOL" --cache "$CACHE" inspect --json
$PY - "$SCRATCH/out" "$SCRATCH/jobs" <<'PYEOF'
import json, sys
r = json.load(open(sys.argv[1]))
assert r["status"] == "loaded", r["status"]
want = {}
for line in open(sys.argv[2]):
    kernel, etype, threads, value = line.split()
    want[(kernel, int(etype), int(threads))] = int(value)
got = {(p["kernel"], p["element_type"], p["effective_threads"]): p["values"]["parallel.minimum_elements"]
       for p in r["profiles"]}
assert len(r["profiles"]) == len(want), (len(r["profiles"]), len(want))
assert got == want, set(want.items()) ^ set(got.items())
assert all(p["classification"] == "loaded" for p in r["profiles"])
PYEOF
ls "$SCRATCH/shared" | grep -v -E '^kernel_tuning\.cache(\.lock)?$' && fail "stray files left in the cache directory"
echo "ok"
