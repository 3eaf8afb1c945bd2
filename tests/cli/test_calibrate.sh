#!/usr/bin/env bash
# `calibrate`: the CI recipe (calibrate Abs --save, then inspect), the invariants of a real
# bounded run, JSON shape, repeat agreement against the picks, the SVG report, comparison mode
# (the pick against the measured totals), and usage errors.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
CACHE="$SCRATCH/cache/kernel_tuning.cache"

# The CI recipe on the default cache path (XDG_CACHE_HOME from lib.sh).
# Without --force a low-confidence result (this machine may be noisy) is not saved, says so, and
# exits 1 (a CI job must not believe it calibrated); with it, the provenance says what it was.
run_status "$TOOL" calibrate Abs --save
expect_grep "$SCRATCH/out" "calibrated 1 key"
SOURCE=calibrate
if grep -q "not saved: confidence is low" "$SCRATCH/out"; then
  [[ $STATUS == 1 ]] || fail "exit $STATUS although the result was not saved"
  grep -q "confidence.*low" "$SCRATCH/out" || fail "not saved without a low confidence"
  expect_grep "$SCRATCH/err" "1 result not saved"
  test ! -f "$XDG_CACHE_HOME/onnx-light/kernel_tuning.cache" || fail "a low-confidence result was written"
  run_status "$TOOL" calibrate Abs --save --force
  [[ $STATUS == 0 ]] || fail "calibrate --force exited $STATUS"
  if grep -q "Abs confidence: low" "$SCRATCH/out"; then SOURCE=calibrate-low-confidence; fi
else
  [[ $STATUS == 0 ]] || { cat "$SCRATCH/out" "$SCRATCH/err" >&2; fail "exit $STATUS"; }
fi
test -f "$XDG_CACHE_HOME/onnx-light/kernel_tuning.cache" || fail "default cache not written"
expect_exit 0 "$TOOL" inspect --json
$PY - "$SCRATCH/out" "$SOURCE" <<'PYEOF'
import json, sys
r = json.load(open(sys.argv[1]))
assert r["status"] == "loaded", r
(p,) = r["profiles"]
assert p["kernel"] == "Abs" and p["element_type"] == 1 and p["local"] is True, p
assert p["classification"] == "loaded", p
prov = p["provenance"]
assert prov["source"] == sys.argv[2] and prov["tool_version"], (prov, sys.argv[2])
PYEOF

# A real bounded run, not saved: budget respected (1.2x), value valid, diagnostics present.
expect_exit 0 "$TOOL" --cache "$CACHE" calibrate Abs --no-save --json --max-duration-ms 200 --threads 2
$PY - "$SCRATCH/out" "$CACHE" <<'PYEOF'
import json, os, sys
r = json.load(open(sys.argv[1]))
assert r["elapsed_ms"] <= 1.2 * 200, r["elapsed_ms"]
(c,) = r["calibrated"]
assert c["kernel"] == "Abs" and c["device_name"] == "CPU" and c["tuning_abi"] == 3, c
v = c["values"]["parallel.minimum_elements"]
assert isinstance(v, int) and 1 <= v <= 2**40, v
assert len(r["diagnostics"]) >= 1 and all("Abs" in d["message"] for d in r["diagnostics"]), r["diagnostics"]
assert r["cache_update"] is None and not os.path.exists(sys.argv[2]), "--no-save wrote a cache"
assert r["effective_threads"] == 2
m = r["measurements"][0]
assert m["cases"] and all(len(x["median_ns"]) == 2 for x in m["cases"]), m
assert m["confidence"] in ("high", "medium", "low") and m["saved"] is False, m
for x in m["cases"]:
    lo, hi = x["ratio_interval"]
    assert lo <= x["ratio"] <= hi and x["pairs"] >= 1 and x["verdict"] in ("win", "loss", "undecided"), x
assert any(d["message"].startswith("Abs confidence: " + m["confidence"]) for d in r["diagnostics"]), r["diagnostics"]
PYEOF

# On a loaded machine (a busy loop per CPU) the result is not saved: the report names the load it
# measured, the warning says so, exit 1, nothing written.
LOADED="$SCRATCH/loaded.cache"
busy() { while :; do :; done; }
BUSY=()
for _ in $(seq "$(nproc)"); do busy & BUSY+=($!); done
run_status "$TOOL" --cache "$LOADED" calibrate Abs --save --json --threads 2
kill "${BUSY[@]}"
wait "${BUSY[@]}" 2>/dev/null || true
[[ $STATUS == 1 ]] || { cat "$SCRATCH/err" >&2; fail "calibrate on a loaded machine exited $STATUS"; }
test ! -e "$LOADED" || fail "a result measured on a loaded machine was written"
expect_grep "$SCRATCH/err" "measured on a loaded machine \\(.*over [0-9]+ ms\\); not saved"
$PY - "$SCRATCH/out" <<'PYEOF'
import json, sys
r = json.load(open(sys.argv[1]))
(m,) = r["measurements"]
c = m["contention"]
# Judged by the machine's busy time (windows of 50 ms and more) or by our threads' wait for a CPU.
assert c is not None and c["cpus"] >= 1, c
assert (c["other_cpus"] is not None and c["other_cpus"] >= 0.5 and c["window_ms"] >= 50) or c["waiting_threads"] >= 0.25, c
assert m["confidence"] == "low" and m["saved"] is False, m
assert any("measured on a loaded machine" in d["message"] for d in r["diagnostics"]), r["diagnostics"]
PYEOF

# Binary kernels with broadcast variants, repeat agreement, SVG report.
expect_exit 0 "$TOOL" --cache "$CACHE" list Add --element-type float --threads 2 --json
cp "$SCRATCH/out" "$SCRATCH/add_list.json"
run_status "$TOOL" --cache "$CACHE" calibrate Add --repeat 3 --max-duration-ms 300 --threads 2 --json --report "$SCRATCH/add.svg"
$PY - "$SCRATCH/out" "$SCRATCH/add_list.json" "$(host_elementwise_implementation)" "$STATUS" <<'PYEOF'
import json, sys
r = json.load(open(sys.argv[1]))
listed = json.load(open(sys.argv[2]))
(c,) = r["calibrated"]
assert c["kernel"] == "Add" and c["implementation"] == sys.argv[3], c
(m,) = r["measurements"]
picks, value = m["picks"], c["values"]["parallel.minimum_elements"]
assert m["runs"] == 3 and len(picks) == 3, m
# The saved value is the median pick of the runs (a kept default counts as its value); the
# agreement counts the runs within one doubling of it; fewer than all make the confidence low.
want = sorted(picks)[(len(picks) - 1) // 2]
assert value == want, (picks, value)
assert m["agreement"] == sum(1 for p in picks if 2 * p >= want and p <= 2 * want), (picks, m["agreement"])
if m["agreement"] < 3:
    assert m["confidence"] == "low", m
summary = f"Add repeat: {m['agreement']} of 3 runs picked within one doubling of {want}; picks {', '.join(map(str, picks))}."
assert any(d["message"] == summary for d in r["diagnostics"]), (summary, r["diagnostics"])
if m["confidence"] == "low":
    assert r["cache_update"] is None and not m["saved"], r
    assert any("not saved: confidence is low" in d["message"] for d in r["diagnostics"]), r["diagnostics"]
    # Runs that disagree save nothing and fail the command.
    assert [k["kernel"] for k in r["not_saved"]] == ["Add"] and sys.argv[4] == "1", (r["not_saved"], sys.argv[4])
else:
    assert r["cache_update"]["status"] == "updated" and m["saved"], r["cache_update"]
    assert r["not_saved"] == [] and sys.argv[4] == "0", (r["not_saved"], sys.argv[4])
PYEOF
expect_grep "$SCRATCH/add.svg" "<svg"
expect_grep "$SCRATCH/add.svg" "serial \(reference\)"
expect_grep "$SCRATCH/add.svg" "work size"
# A tight memory budget: no case larger than the budget runs, the default is kept with a reason
# (on 2 threads: on one, no case is measured at all, whatever the budget).
expect_exit 0 "$TOOL" --cache "$CACHE" calibrate Relu --no-save --max-memory 4K --json --threads 2
$PY - "$SCRATCH/out" <<'PYEOF'
import json, sys
r = json.load(open(sys.argv[1]))
assert r["calibrated"][0]["values"]["parallel.minimum_elements"] == 32768, r
assert any("memory budget" in d["message"] for d in r["diagnostics"]), r["diagnostics"]
assert r["measurements"][0]["cases"] == [], r["measurements"]
PYEOF
# Comparison mode lists every value's speedup and picks the fastest as measured.
expect_exit 0 "$TOOL" --cache "$CACHE" calibrate Neg --no-save --parameter parallel.minimum_elements=32768,1024 --json --max-duration-ms 200
$PY - "$SCRATCH/out" <<'PYEOF'
import json, sys
r = json.load(open(sys.argv[1]))
m = r["measurements"][0]
assert [e["value"] for e in m["comparison"]] == [32768, 1024], m
assert m["comparison"][0]["speedup"] == 1.0
# The pick is the value with the lowest summed median as measured (the earlier one on a tie).
# The pick is the value with the lowest summed median as measured when it is at least 2% below the
# baseline's (the first value), else the baseline.
fastest = min(m["comparison"], key=lambda e: e["total_median_ns"])
pick = fastest if fastest["total_median_ns"] <= 0.98 * m["comparison"][0]["total_median_ns"] else m["comparison"][0]
assert r["calibrated"][0]["values"]["parallel.minimum_elements"] == pick["value"], m["comparison"]
assert m["changed_default"] == (pick["value"] != 32768), m
for e in m["comparison"]:
    assert abs(e["speedup"] - m["comparison"][0]["total_median_ns"] / e["total_median_ns"]) < 1e-9 * e["speedup"], e
PYEOF
# A saved profile is loaded by `run` in a later process (active_source published_profile).
expect_exit 0 "$TOOL" --cache "$CACHE" set Abs parallel.minimum_elements=8 --threads 2
expect_exit 0 "$TOOL" --cache "$CACHE" run "$ONNX_LIGHT_SOURCE_DIR/examples/abs.onnxtxt" -i x=random --dim N=64 --threads 2 --profile --json
$PY - "$SCRATCH/out" <<'PYEOF'
import json, sys
r = json.load(open(sys.argv[1]))
t = r["tuning"][0]
assert t["active_source"] == "published_profile", t
assert t["active_values"]["parallel.minimum_elements"] == 8, t
assert r["parallel_regions"]["events"][0]["admitted_threads"] == 2, r["parallel_regions"]
PYEOF

# Errors: usage 2, unknown kernel 1, malformed cache 1 and left byte-identical.
expect_exit 2 "$TOOL" calibrate
expect_exit 2 "$TOOL" calibrate Abs --all
expect_exit 2 "$TOOL" calibrate Abs --max-duration-ms 0
expect_exit 2 "$TOOL" calibrate Abs --parameter nonsense
expect_exit 2 "$TOOL" calibrate NoSuchKernel
expect_grep "$SCRATCH/err" "NoSuchKernel"
expect_exit 2 "$TOOL" calibrate Abs --max-memory lots
expect_grep "$SCRATCH/err" "--max-memory"
printf 'format = "something-else"\n' > "$SCRATCH/bad.cache"
cp "$SCRATCH/bad.cache" "$SCRATCH/bad.copy"
# --force: the write must be attempted whatever the confidence on this machine.
expect_exit 1 "$TOOL" --cache "$SCRATCH/bad.cache" calibrate Abs --max-duration-ms 50 --force
expect_grep "$SCRATCH/out" "malformed"
cmp "$SCRATCH/bad.cache" "$SCRATCH/bad.copy" || fail "malformed cache was modified"
expect_exit 0 "$TOOL" calibrate --help
expect_grep "$SCRATCH/out" "calibrate Abs --save"
echo "calibrate: all checks passed"
