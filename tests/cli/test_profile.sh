#!/usr/bin/env bash
# `run --profile`: the per-node and per-op-type tables (--top), the "profile" object of --json, and
# `run --trace FILE.json`, the Chrome trace-event file Perfetto opens.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

# Five nodes, one unnamed, two of them Abs: x -> Abs -> Neg -> Abs -> Add(., x) -> Mul(., x).
$PY - "$SCRATCH/chain.onnx" <<'PYEOF'
import sys
from onnx import helper, TensorProto
nodes = [helper.make_node("Abs", ["x"], ["a"], name="first_abs"),
         helper.make_node("Neg", ["a"], ["b"], name="negate"),
         helper.make_node("Abs", ["b"], ["c"]),
         helper.make_node("Add", ["c", "x"], ["d"], name="plus"),
         helper.make_node("Mul", ["d", "x"], ["y"], name="times")]
g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N"])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N"])])
open(sys.argv[1], "wb").write(helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)]).SerializeToString())
PYEOF
M="$SCRATCH/chain.onnx"
# The graph as written (--optimize none): under the default `all` the five nodes are one ElementwiseChain.
OPT=(--optimize none)

# --json: profile.nodes (one per node, calls = timed runs), profile.op_types, runs, total_us.
expect_exit 0 "$TOOL" run "$M" "${OPT[@]}" -i x=random:1 --dim N=100000 -t 2 -w 2 -r 3 --profile --json
$PY - "$SCRATCH/out" <<'PYEOF'
import json, sys
r = json.load(open(sys.argv[1]))
p = r["profile"]
assert p["runs"] == 3, p["runs"]
assert 0 < p["nodes_us"] <= p["total_us"], p
nodes = {n["node"]: n for n in p["nodes"]}
assert sorted(nodes) == ["#2", "first_abs", "negate", "plus", "times"], sorted(nodes)
assert {k: n["op_type"] for k, n in nodes.items()} == {
    "first_abs": "Abs", "negate": "Neg", "#2": "Abs", "plus": "Add", "times": "Mul"}
tuning = {t["node"]: t for t in r["tuning"]}
for n in p["nodes"]:
    assert n["calls"] == 3 and n["total_us"] > 0 and abs(n["mean_us"] - n["total_us"] / 3) < 1e-6, n
    assert n["implementation"] == tuning[n["label"]]["implementation"], (n, tuning[n["label"]])
    assert n["domain"] == "" and n["input_shapes"][0] == [100000], n
    # Abs/Neg/Add/Mul over 100000 floats at 2 threads: one region per run, two threads admitted.
    assert n["parallel_regions"] == 3 and n["parallel_threads"] == 6, n
assert nodes["plus"]["input_shapes"] == [[100000], [100000]]
assert abs(sum(n["share"] for n in p["nodes"]) - 1) < 1e-9
totals = [n["total_us"] for n in p["nodes"]]
assert totals == sorted(totals, reverse=True), totals
types = {t["op_type"]: t for t in p["op_types"]}
assert sorted(types) == ["Abs", "Add", "Mul", "Neg"], types
assert types["Abs"]["nodes"] == 2 and types["Abs"]["calls"] == 6, types["Abs"]
assert abs(types["Abs"]["total_us"] - nodes["first_abs"]["total_us"] - nodes["#2"]["total_us"]) < 1e-6
assert abs(sum(t["share"] for t in p["op_types"]) - 1) < 1e-9
# The parallel region events and the tuning table are still there.
assert len(r["parallel_regions"]["events"]) == 15, r["parallel_regions"]
PYEOF

# Human output: the tuning table, then nodes by time (top N), then op types.
expect_exit 0 "$TOOL" run "$M" "${OPT[@]}" -i x=random:1 --dim N=1000 -r 4 --profile --top 2
expect_grep "$SCRATCH/out" '^tuning in force:'
expect_grep "$SCRATCH/out" '^nodes \(2 of 5, by time; 4 runs, [0-9.]+ us per run'
expect_grep "$SCRATCH/out" '^  \.\.\. 3 more nodes \(--top 0 shows all\)'
expect_grep "$SCRATCH/out" '^op types \(by time\):'
expect_grep "$SCRATCH/out" '^  Abs +2 +8 +[0-9.]+ +[0-9.]+%'
[[ $(grep -cE '^  (first_abs|negate|#2|plus|times) ' "$SCRATCH/out") == 2 ]] || fail "--top 2 did not show 2 nodes"
expect_exit 0 "$TOOL" run "$M" "${OPT[@]}" -i x=random:1 --dim N=1000 -r 4 --profile --top 0
[[ $(grep -cE '^  (first_abs|negate|#2|plus|times) +(Abs|Neg|Add|Mul) ' "$SCRATCH/out") == 5 ]] || fail "--top 0 did not show every node"
expect_grep "$SCRATCH/out" '^  plus +Add .* 1000, 1000$'
if grep -q 'more node' "$SCRATCH/out"; then fail "--top 0 still cut the table"; fi
# The default is 20, more than this model has.
expect_exit 0 "$TOOL" run "$M" "${OPT[@]}" -i x=random:1 --dim N=1000 --profile
expect_grep "$SCRATCH/out" '^nodes \(5 of 5, by time; 1 run,'

# --trace: valid Chrome trace JSON, one "X" event per node per timed run, on tid 0, in order;
# the parallel regions and their blocks (with the thread that ran each) alongside.
expect_exit 0 "$TOOL" run "$M" "${OPT[@]}" -i x=random:1 --dim N=100000 -t 2 -w 1 -r 4 --trace "$SCRATCH/trace.json"
if grep -q '^nodes (' "$SCRATCH/out"; then fail "--trace alone printed the profile tables"; fi
$PY - "$SCRATCH/trace.json" <<'PYEOF'
import json, sys
t = json.load(open(sys.argv[1]))
events = t["traceEvents"]
nodes = [e for e in events if e["ph"] == "X" and e["cat"] not in ("parallel_region", "parallel_block")]
assert len(nodes) == 5 * 4, len(nodes)
order = ["first_abs", "negate", "#2", "plus", "times"]
cats = ["Abs", "Neg", "Abs", "Add", "Mul"]
for i, e in enumerate(nodes):
    assert e["name"] == order[i % 5] and e["cat"] == cats[i % 5], e
    assert e["args"]["run"] == i // 5 and e["args"]["input_shapes"].startswith("100000"), e
    assert e["args"]["implementation"], e
    assert e["dur"] >= 0 and e["tid"] == 0 and isinstance(e["pid"], int), e
    if i:
        prev = nodes[i - 1]
        assert e["ts"] >= prev["ts"] + prev["dur"] - 0.002, (prev, e)  # printed to the nanosecond
regions = [e for e in events if e.get("cat") == "parallel_region"]
blocks = [e for e in events if e.get("cat") == "parallel_block"]
assert len(regions) == 5 * 4 and all(e["args"]["threads"] == 2 for e in regions), regions[:2]
assert len(blocks) == 2 * len(regions), len(blocks)
assert {e["tid"] for e in blocks} <= {0, 1}, {e["tid"] for e in blocks}
names = {(e["tid"], e["args"]["name"]) for e in events if e["ph"] == "M" and e["name"] == "thread_name"}
assert (0, "caller") in names, names
assert t["otherData"]["dropped_events"] == 0
PYEOF

# --counters: every counter listed, available or with the reason; the available ones per node.
expect_exit 0 "$TOOL" run "$M" "${OPT[@]}" -i x=random:1 --dim N=100000 -t 2 -r 3 --profile --counters --json
$PY - "$SCRATCH/out" <<'PYEOF'
import json, os, sys
p = json.load(open(sys.argv[1]))["profile"]
status = {c["name"]: c for c in p["counters"]}
assert sorted(status) == sorted(["cycles", "instructions", "llc_misses", "task_clock_ns", "context_switches",
                                 "cpu_migrations", "page_faults"]), sorted(status)
for c in status.values():
    assert c["available"] or c["reason"], c
if not os.path.exists("/sys/bus/event_source/devices/cpu") and not os.path.exists("/sys/bus/event_source/devices/cpu_core"):
    assert not status["cycles"]["available"] and "no hardware PMU" in status["cycles"]["reason"], status["cycles"]
available = sorted(n for n, c in status.items() if c["available"])
for n in p["nodes"]:
    assert sorted(n["counters"]) == available, (n["node"], n["counters"], available)
if status["task_clock_ns"]["available"]:
    assert all(n["counters"]["task_clock_ns"] > 0 for n in p["nodes"]), p["nodes"]
else:
    print("task clock unavailable here:", status["task_clock_ns"]["reason"])
PYEOF
expect_exit 0 "$TOOL" run "$M" "${OPT[@]}" -i x=random:1 --dim N=1000 -r 2 --profile --counters --top 2
expect_grep "$SCRATCH/out" '^counters \([0-7] of 7 available; per node'
if [[ ! -e /sys/bus/event_source/devices/cpu && ! -e /sys/bus/event_source/devices/cpu_core ]]; then
  expect_grep "$SCRATCH/out" '^  cycles: unavailable: no hardware PMU'
fi
# Without --counters the profile has none; --counters needs --profile.
expect_exit 0 "$TOOL" run "$M" "${OPT[@]}" -i x=random:1 --dim N=1000 --profile --json
$PY -c 'import json,sys; p=json.load(open(sys.argv[1]))["profile"]; assert "counters" not in p and all("counters" not in n for n in p["nodes"]), p' "$SCRATCH/out"
expect_exit 2 "$TOOL" run "$M" -i x=random:1 --dim N=10 --counters
expect_grep "$SCRATCH/err" 'requires --profile|--counters'

# A trace that cannot be written fails the run with the file named; usage errors exit 2.
expect_exit 1 "$TOOL" run "$M" -i x=random:1 --dim N=10 --trace "$SCRATCH/no-such-dir/trace.json"
expect_grep "$SCRATCH/err" "no-such-dir/trace.json"
expect_exit 2 "$TOOL" run "$M" -i x=random:1 --dim N=10 --profile --top -1
expect_exit 2 "$TOOL" run "$M" --trace
# A tuned value reaches the node and the label follows it: on AVX-512 a depthwise 3x3 over 24
# columns runs channel-blocked by default and straight from NCHW once the cache lowers the Conv
# key's depthwise.chw_s1_from_width to 24.
$PY - "$SCRATCH/dw.onnx" <<'PYEOF'
import sys
from onnx import helper, numpy_helper, TensorProto
import numpy as np
w = numpy_helper.from_array(np.random.RandomState(0).rand(8, 1, 3, 3).astype(np.float32), "w")
n = helper.make_node("Conv", ["x", "w"], ["y"], name="dw", group=8, pads=[1, 1, 1, 1])
g = helper.make_graph([n], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 12, 24])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 12, 24])], initializer=[w])
open(sys.argv[1], "wb").write(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString())
PYEOF
DW_CACHE="$SCRATCH/dw.cache"
expect_exit 0 "$TOOL" --cache "$DW_CACHE" list Conv --json
CONV_IMPL=$($PY -c 'import json,sys; print(json.load(open(sys.argv[1]))["kernels"][0]["implementation"])' "$SCRATCH/out")
if [ "$CONV_IMPL" = avx512 ]; then
  node_label() {
    expect_exit 0 "$TOOL" --cache "$DW_CACHE" run "$SCRATCH/dw.onnx" -i x=random:1 -t 1 -r 1 --profile --json
    $PY -c 'import json,sys; print(json.load(open(sys.argv[1]))["profile"]["nodes"][0]["implementation"])' "$SCRATCH/out"
  }
  [ "$(node_label)" = dwconv_3x3s1_blocked16_avx512 ] || fail "default depthwise label: $(node_label)"
  expect_exit 0 "$TOOL" --cache "$DW_CACHE" set Conv depthwise.chw_s1_from_width=24 --threads 1
  [ "$(node_label)" = dwconv_3x3s1_chw_avx512 ] || fail "tuned depthwise label: $(node_label)"
  expect_exit 2 "$TOOL" --cache "$DW_CACHE" set Conv depthwise.chw_s1_from_width=25 --threads 1
  expect_grep "$SCRATCH/err" "depthwise.chw_s1_from_width: 25 is not one of"
else
  echo "profile: tuned depthwise path not checked: Conv dispatches to $CONV_IMPL here, the CHW loops need AVX-512"
fi
# The same for MatMul: attention's values product ([2,20,33] x [2,33,32]) reads B in place by
# default and names that path; matmul.in_place_b_max_columns=0 packs B (the implementation's name).
$PY - "$SCRATCH/av.onnx" <<'PYEOF'
import sys
from onnx import helper, TensorProto
n = helper.make_node("MatMul", ["a", "b"], ["y"], name="av")
g = helper.make_graph([n], "g", [helper.make_tensor_value_info("a", TensorProto.FLOAT, [2, 20, 33]),
                                 helper.make_tensor_value_info("b", TensorProto.FLOAT, [2, 33, 32])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 20, 32])])
open(sys.argv[1], "wb").write(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString())
PYEOF
AV_CACHE="$SCRATCH/av.cache"
if [ "$CONV_IMPL" = avx512 ]; then
  av_label() {
    expect_exit 0 "$TOOL" --cache "$AV_CACHE" run "$SCRATCH/av.onnx" -i a=random:1 -i b=random:2 -t 1 -r 1 --profile --json
    $PY -c 'import json,sys; print(json.load(open(sys.argv[1]))["profile"]["nodes"][0]["implementation"])' "$SCRATCH/out"
  }
  [ "$(av_label)" = in_place_b_gemm_avx512 ] || fail "default MatMul label: $(av_label)"
  expect_exit 0 "$TOOL" --cache "$AV_CACHE" set MatMul matmul.in_place_b_max_columns=0 --threads 1
  [ "$(av_label)" = avx512 ] || fail "tuned MatMul label: $(av_label)"
else
  echo "profile: MatMul in-place B label not checked: the row-pointer micro-kernel needs AVX-512"
fi

echo "profile: all checks passed"
