#!/usr/bin/env bash
# --spin, --affinity and --cpus on run and calibrate: parsing, validation against the allowed CPU
# set, what --json/--profile/--version show, and the pinning of a live run's workers as the kernel
# reports it (/proc/PID/task/*/status).
set -euo pipefail
source "$(dirname "$0")/lib.sh"
EX="$ONNX_LIGHT_SOURCE_DIR/examples"
RUN=("$TOOL" run "$EX/abs.onnxtxt" -i x=random:3 --dim N=70000)

# The CPUs this process may use, and one it may not (this VM: 0-1 and 5).
ALLOWED=$($PY -c 'import os; print(",".join(map(str, sorted(os.sched_getaffinity(0)))))')
FIRST=${ALLOWED%%,*}
# The same as ranges ("0-1"), as the tool prints CPU lists.
ALLOWED_RANGES=$($PY -c '
import os
cpus, parts = sorted(os.sched_getaffinity(0)), []
for c in cpus:
    if parts and parts[-1][1] == c - 1: parts[-1][1] = c
    else: parts.append([c, c])
print(",".join(str(a) if a == b else f"{a}-{b}" for a, b in parts))')
OUTSIDE=$($PY -c 'import os; print(max(os.sched_getaffinity(0)) + 4)')

policy_of() {  # FIELD: prints r["policy"][FIELD] (lists comma-joined) and threads
  $PY - "$SCRATCH/out" "$1" <<'PYEOF'
import json, sys
r = json.load(open(sys.argv[1]))
v = r["policy"][sys.argv[2]]
print(",".join(map(str, v)) if isinstance(v, list) else v, r["threads"])
PYEOF
}

# Spin: the named policies, microseconds, the default; --json shows name and microseconds.
for spec in "none none 0" "short short 50" "long long 1000" "200 200us 200" "200us 200us 200"; do
  read -r given name us <<<"$spec"
  expect_exit 0 "${RUN[@]}" -t 2 --spin "$given" --json
  [[ "$(policy_of spin)" == "$name 2" ]] || fail "--spin $given: $(policy_of spin)"
  [[ "$(policy_of spin_us)" == "$us 2" ]] || fail "--spin $given: $(policy_of spin_us)"
done
expect_exit 0 "${RUN[@]}" -t 2 --json
[[ "$(policy_of spin)" == "short 2" && "$(policy_of affinity)" == "none 2" && "$(policy_of cpus)" == " 2" ]] ||
  fail "defaults: $(policy_of spin) / $(policy_of affinity) / $(policy_of cpus)"
for bad in fast -5 1000001 50ms; do
  expect_exit 2 "${RUN[@]}" --spin "$bad"
  expect_grep "$SCRATCH/err" "spin policy '$bad' is not none, short"
done

# CPU lists: the count defaults to their size; an explicit count wins; the syntax is checked.
expect_exit 0 "${RUN[@]}" --cpus "$FIRST" --json
[[ "$(policy_of cpus)" == "$FIRST 1" && "$(policy_of affinity)" == "cpu_list 1" ]] || fail "--cpus $FIRST: $(policy_of cpus)"
expect_exit 0 "${RUN[@]}" --cpus "$ALLOWED" --json
[[ "$(policy_of cpus)" == "$ALLOWED $(tr ',' '\n' <<<"$ALLOWED" | wc -l)" ]] || fail "--cpus $ALLOWED: $(policy_of cpus)"
expect_exit 0 "${RUN[@]}" --cpus "$FIRST" -t 3 --json
[[ "$(policy_of cpus)" == "$FIRST 3" ]] || fail "--cpus $FIRST -t 3: $(policy_of cpus)"
for bad in "3-1" "a" "0,,1" "1024"; do
  expect_exit 2 "${RUN[@]}" --cpus "$bad"
  expect_grep "$SCRATCH/err" "CPU list '$bad'"
done
# A CPU outside the allowed set is named, with the set, before anything runs.
expect_exit 2 "${RUN[@]}" --cpus "$OUTSIDE"
expect_grep "$SCRATCH/err" "CPU $OUTSIDE is not in the set this process may run on \\($ALLOWED_RANGES;"
expect_exit 2 "${RUN[@]}" --cpus "$FIRST,$OUTSIDE,$((OUTSIDE + 2))" --json
expect_grep "$SCRATCH/out" "CPUs $OUTSIDE,$((OUTSIDE + 2)) are not in the set"
# Under taskset the allowed set shrinks, and the message says so.
if command -v taskset >/dev/null && [[ "$ALLOWED" == *,* ]]; then
  second=$(cut -d, -f2 <<<"$ALLOWED")
  expect_exit 2 taskset -c "$FIRST" "${RUN[@]}" --cpus "$second"
  expect_grep "$SCRATCH/err" "CPU $second is not in the set this process may run on \\($FIRST;"
fi
expect_exit 2 "${RUN[@]}" --affinity physical_cores --cpus "$FIRST"
expect_exit 2 "${RUN[@]}" --affinity cores
expect_grep "$SCRATCH/err" "cores"

# physical_cores: one CPU per physical core, and the default count is the core count.
expect_exit 0 "${RUN[@]}" --affinity physical_cores --json
cores=$("$TOOL" --version | sed -nE 's/^host cores: ([0-9]+) physical.*/\1/p')
read -r cpus threads <<<"$(policy_of cpus)"
[[ "$threads" == "$cores" && $(tr ',' '\n' <<<"$cpus" | wc -l) == "$cores" ]] || fail "physical_cores: $cpus $threads"

# --profile shows the policy in words.
expect_exit 0 "${RUN[@]}" -t 2 --spin long --cpus "$FIRST" --profile
expect_grep "$SCRATCH/out" "^policy: spin long \\(1000 us\\), affinity cpu_list on CPUs $FIRST \\(workers pinned"
expect_exit 0 "$TOOL" --version
expect_grep "$SCRATCH/out" "^allowed CPUs: $ALLOWED_RANGES \\(sched_getaffinity\\); sessions default to spin short \\(50 us\\), affinity none"

# A live run's workers, as the kernel sees them: every onnxl-pool-* thread allowed only the CPU
# asked for. The run is long; it is killed once read.
for cpu in $(tr ',' ' ' <<<"$ALLOWED"); do
  [[ "$cpu" -le 1 ]] || continue
  "${RUN[@]}" -t 3 --cpus "$cpu" -r 1000000 >/dev/null 2>&1 &
  pid=$!
  lists=""
  for _ in $(seq 200); do
    lists=$(for t in /proc/$pid/task/*; do
      if [[ "$(cat "$t/comm" 2>/dev/null)" == onnxl-pool-* ]]; then
        sed -nE 's/^Cpus_allowed_list:\s*//p' "$t/status" 2>/dev/null || true
      fi
    done | sort | tr '\n' ' ')
    [[ "$lists" == "$cpu $cpu " ]] && break
    sleep 0.05
  done
  kill "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  [[ "$lists" == "$cpu $cpu " ]] || fail "--cpus $cpu -t 3: workers allowed on '$lists'"
done

# calibrate takes the same flags: the thread count follows the list; a refused CPU is a usage error.
expect_exit 0 "$TOOL" calibrate Abs --no-save --cpus "$FIRST" --spin none --max-duration-ms 200 --json
$PY - "$SCRATCH/out" <<'PYEOF'
import json, sys
r = json.load(open(sys.argv[1]))
assert r["effective_threads"] == 1, r["effective_threads"]
PYEOF
expect_exit 2 "$TOOL" calibrate Abs --no-save --cpus "$OUTSIDE"
expect_grep "$SCRATCH/err" "CPU $OUTSIDE is not in the set"
expect_exit 2 "$TOOL" calibrate Abs --no-save --spin sometimes
expect_grep "$SCRATCH/err" "spin policy 'sometimes'"

# The spin class is part of a profile's match: a profile set for --spin none serves runs with
# --spin none only, and list/propose/inspect tell the classes apart.
SPIN_CACHE="$SCRATCH/spin-class.cache"
S=("$TOOL" --cache "$SPIN_CACHE")
expect_exit 0 "${S[@]}" set Abs parallel.minimum_elements=123456 --threads 2 --spin none --json
spin_class_of() {  # VERB ARGS...: prints Abs's cached threshold (or None) from list --json
  "${S[@]}" list Abs --element-type float --threads 2 --json "$@" >"$SCRATCH/list.json"
  $PY -c 'import json, sys; k = json.load(open(sys.argv[1]))["kernels"][0]; c = k["cached_values"]; print(c and c["parallel.minimum_elements"], k["active_source"])' "$SCRATCH/list.json"
}
[[ "$(spin_class_of --spin none)" == "123456 published_profile" ]] || fail "list --spin none: $(spin_class_of --spin none)"
[[ "$(spin_class_of)" == "None portable_default" ]] || fail "list (spinning sessions): $(spin_class_of)"
[[ "$(spin_class_of --spin long)" == "None portable_default" ]] || fail "list --spin long: $(spin_class_of --spin long)"
expect_exit 0 "${S[@]}" propose Abs --element-type float --threads 2 --json
$PY -c 'import json, sys; r = json.load(open(sys.argv[1])); assert [k["kernel"] for k in r["missing"]] == ["Abs"], r' "$SCRATCH/out"
expect_exit 0 "${S[@]}" propose Abs --element-type float --threads 2 --spin none --json
$PY -c 'import json, sys; r = json.load(open(sys.argv[1])); assert [k["kernel"] for k in r["covered"]] == ["Abs"], r' "$SCRATCH/out"
expect_exit 0 "${S[@]}" inspect --json
$PY - "$SCRATCH/out" <<'PYEOF'
import json, sys
(p,) = json.load(open(sys.argv[1]))["profiles"]
assert p["idle_spin"] is False and p["tuning_abi"] == 3 and p["effective_threads"] == 2, p
assert p["local"] is False, p  # local means the default spin class unless asked
PYEOF
grep -q "^idle_spin = false$" "$SPIN_CACHE" || fail "the cache file does not record idle_spin = false"
# The human tables say which class a profile serves.
expect_exit 0 "${S[@]}" inspect --color never
expect_grep "$SCRATCH/out" " 2 \(park\) "
expect_exit 0 "${S[@]}" set Abs parallel.minimum_elements=123456 --threads 2 --spin none --color never
expect_grep "$SCRATCH/out" "2 threads, workers park \(spin none\)"
# A run uses the profile only under its class.
run_source() {  # ARGS...: Abs's active_source in run --json
  "${S[@]}" run "$EX/abs.onnxtxt" -i x=random:3 --dim N=1000 -t 2 --profile --json "$@" >"$SCRATCH/run.json"
  $PY -c 'import json, sys; print(json.load(open(sys.argv[1]))["tuning"][0]["active_source"])' "$SCRATCH/run.json"
}
[[ "$(run_source --spin none)" == "published_profile" ]] || fail "run --spin none: $(run_source --spin none)"
[[ "$(run_source)" == "portable_default" ]] || fail "run (short): $(run_source)"
echo "policy: ok"
