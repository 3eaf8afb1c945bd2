#!/usr/bin/env bash
# A writer killed with SIGKILL at random moments, 100 times: the cache is always either the
# previous complete version or the next one, never torn; leftovers of killed writers are cleaned
# up by the next successful writer.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
CACHE="$SCRATCH/kernel_tuning.cache"
ROUNDS=100

# A cache of a few hundred profiles, so that a write takes long enough to be interrupted.
"$TOOL" list --json --kernel Abs,Relu,Neg,Identity,Add,Sub,Mul,Div >"$SCRATCH/keys.json"
$PY - "$SCRATCH/keys.json" >"$SCRATCH/seed_jobs" <<'PYEOF'
import json, sys
keys = [(k["kernel"], k["element_type"]) for k in json.load(open(sys.argv[1]))["kernels"]]
for threads in (1, 2, 3):
    for kernel, etype in keys:
        print(kernel, etype, threads)
PYEOF
while read -r kernel etype threads; do
  "$TOOL" --cache "$CACHE" set "$kernel" parallel.minimum_elements=5000 --element-type "$etype" --threads "$threads" \
    --no-load >/dev/null
done < <(head -n 120 "$SCRATCH/seed_jobs")

# Typical duration of one `set`, to spread the kills over its whole life.
t0=$(date +%s%N)
for i in 1 2 3; do "$TOOL" --cache "$CACHE" set Abs parallel.minimum_elements=$((6000 + i)) --threads 7 --no-load >/dev/null; done
duration_us=$((($(date +%s%N) - t0) / 3000))
echo "one set takes about ${duration_us} us"

prev_same=0
next_seen=0
for ((round = 1; round <= ROUNDS; round++)); do
  cp "$CACHE" "$SCRATCH/previous"
  value=$((100000 + round))
  "$TOOL" --cache "$CACHE" set Abs "parallel.minimum_elements=$value" --threads 7 --no-load >/dev/null 2>&1 &
  writer=$!
  delay_us=$((RANDOM * RANDOM % (duration_us * 12 / 10 + 1)))
  sleep "$(printf '%d.%06d' $((delay_us / 1000000)) $((delay_us % 1000000)))"
  kill -KILL "$writer" 2>/dev/null || true
  wait "$writer" 2>/dev/null || true
  if cmp -s "$CACHE" "$SCRATCH/previous"; then
    prev_same=$((prev_same + 1))
    continue
  fi
  # Not the previous bytes: must be the complete next version, the previous plus exactly this change.
  $PY - "$SCRATCH/previous" "$CACHE" "$value" <<'PYEOF' || fail "round $round: cache is neither the previous nor the next version"
import sys, tomllib
prev = tomllib.load(open(sys.argv[1], "rb"))
cur = tomllib.load(open(sys.argv[2], "rb"))
value = int(sys.argv[3])
def ident(p):
    return (p["kernel"], p["element_type"], p["implementation"], p["tuning_abi"], p["host"]["effective_threads"])
def strip(p):
    q = dict(p); q.pop("provenance", None); return q
P = {ident(p): strip(p) for p in prev["profile"]}
C = {ident(p): strip(p) for p in cur["profile"]}
assert P.keys() == C.keys(), set(P) ^ set(C)
changed = [k for k in P if P[k] != C[k]]
assert len(changed) == 1, changed
k = changed[0]
assert k[0] == "Abs" and k[1] == 1 and k[4] == 7, k
assert C[k]["values"]["parallel.minimum_elements"] == value, C[k]["values"]
PYEOF
  next_seen=$((next_seen + 1))
done
echo "kills: $prev_same left the previous version, $next_seen the next version"
[[ $((prev_same + next_seen)) == "$ROUNDS" ]] || fail "lost rounds"
# Both outcomes must occur, or the kills did not land inside the writes.
[[ $prev_same -gt 0 && $next_seen -gt 0 ]] || fail "kills did not spread over the writer's life"

# One more successful write removes the temporary files of killed writers; the lock stays.
expect_exit 0 "$TOOL" --cache "$CACHE" set Abs parallel.minimum_elements=4242 --threads 7 --no-load
ls "$SCRATCH" | grep -E '^kernel_tuning\.cache\.tmp-' && fail "temporary files left after a successful write"
expect_exit 0 "$TOOL" --cache "$CACHE" inspect --json
$PY -c "import json; r=json.load(open('$SCRATCH/out')); assert r['status'] == 'loaded' and len(r['profiles']) == 121, len(r['profiles'])"
echo "ok"
