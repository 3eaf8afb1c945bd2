"""RuntimeSessionOptions(profile=True): session.profile() (the `run --profile --json` "profile"
object), reset_profile(), and the Chrome trace of write_trace() / end_profiling()."""
from __future__ import annotations

import json
import os

import numpy as np
import pytest
from onnx import TensorProto, helper

import onnx_light
from onnx_light.onnx_py import _onnxpykernels

runtime = _onnxpykernels.runtime

NODE_KEYS = {"node", "label", "op_type", "domain", "implementation", "input_shapes", "calls", "total_us", "mean_us",
             "share", "parallel_regions", "parallel_threads", "threshold_work", "parent"}


def chain_model() -> bytes:
    """x -> Abs 'first' -> Neg 'neg' -> Abs (unnamed) -> Add 'sum' (with x)."""
    nodes = [helper.make_node("Abs", ["x"], ["a"], name="first"),
             helper.make_node("Neg", ["a"], ["b"], name="neg"),
             helper.make_node("Abs", ["b"], ["c"]),
             helper.make_node("Add", ["c", "x"], ["y"], name="sum")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N"])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N"])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)]).SerializeToString()


def session(profile: bool, threads: int = 1):
    # The graph as written: under the default optimization the four nodes are one ElementwiseChain.
    options = runtime.RuntimeSessionOptions(parameters=runtime.RuntimeParameters(threads), profile=profile)
    options.optimization = "none"
    return runtime.RuntimeSession(chain_model(), options)


def test_profile_names_the_fused_node_that_ran_under_the_default_optimization():
    s = runtime.RuntimeSession(chain_model(), runtime.RuntimeSessionOptions(profile=True))
    x = np.linspace(-1, 1, 256, dtype=np.float32)
    (y,) = s.run_arrays([x])
    np.testing.assert_array_equal(y, np.abs(x) + x)
    (node,) = s.profile()["nodes"]
    assert (node["node"], node["op_type"], node["domain"]) == ("first", "ElementwiseChain", "com.onnx_light")


def test_profile_is_off_by_default_and_empty_then():
    assert runtime.RuntimeSessionOptions().profile is False
    assert "profile=False" in repr(runtime.RuntimeSessionOptions())
    s = session(False)
    x = np.linspace(-1, 1, 64, dtype=np.float32)
    for _ in range(3):
        s.run_arrays([x])
    p = s.profile()
    assert p["nodes"] == [] and p["op_types"] == [] and p["runs"] == 0 and p["total_us"] == 0


def test_profile_has_one_entry_per_node_with_the_kernel_that_ran():
    s = session(True)
    assert "profile=True" in repr(runtime.RuntimeSessionOptions(profile=True))
    x = np.linspace(-1, 1, 4096, dtype=np.float32)
    for _ in range(2):  # warm-up, then forgotten
        s.run_arrays([x])
    s.reset_profile()
    runs = 6
    for _ in range(runs):
        (y,) = s.run_arrays([x])
    np.testing.assert_array_equal(y, np.abs(x) + x)
    p = s.profile()
    assert p["runs"] == runs and 0 < p["nodes_us"] <= p["total_us"]
    nodes = {n["node"]: n for n in p["nodes"]}
    assert {k: n["op_type"] for k, n in nodes.items()} == {"first": "Abs", "neg": "Neg", "#2": "Abs", "sum": "Add"}
    tuning = {t["node"]: t["implementation"] for t in s.resolved_tuning()}
    for n in p["nodes"]:
        assert set(n) == NODE_KEYS
        assert n["calls"] == runs and n["total_us"] > 0
        assert n["implementation"] == tuning[n["label"]]
        assert n["input_shapes"][0] == [4096]
    assert nodes["sum"]["input_shapes"] == [[4096], [4096]]
    assert sum(n["share"] for n in p["nodes"]) == pytest.approx(1.0)
    assert [n["total_us"] for n in p["nodes"]] == sorted((n["total_us"] for n in p["nodes"]), reverse=True)
    types = {t["op_type"]: t for t in p["op_types"]}
    assert types["Abs"]["nodes"] == 2 and types["Abs"]["calls"] == 2 * runs
    assert types["Abs"]["total_us"] == pytest.approx(nodes["first"]["total_us"] + nodes["#2"]["total_us"])


def test_trace_is_chrome_trace_json_with_one_event_per_node_per_run(tmp_path):
    s = session(True, threads=2)
    x = np.linspace(-1, 1, 100000, dtype=np.float32)
    runs = 3
    for _ in range(runs):
        s.run_arrays([x])
    path = tmp_path / "trace.json"
    assert s.write_trace(str(path)) == str(path)
    trace = json.loads(path.read_text())
    nodes = [e for e in trace["traceEvents"] if e["ph"] == "X" and e["cat"] not in ("parallel_region", "parallel_block")]
    assert len(nodes) == 4 * runs
    assert [e["name"] for e in nodes] == ["first", "neg", "#2", "sum"] * runs
    assert [e["cat"] for e in nodes] == ["Abs", "Neg", "Abs", "Add"] * runs
    stamps = [e["ts"] for e in nodes]
    assert stamps == sorted(stamps) and all(e["dur"] >= 0 for e in nodes)
    assert all(e["tid"] == 0 and e["pid"] == os.getpid() for e in nodes)
    blocks = [e for e in trace["traceEvents"] if e.get("cat") == "parallel_block"]
    assert blocks and {e["tid"] for e in blocks} <= {0, 1}

    # end_profiling, as ONNX Runtime's: writes the trace and returns its file name.
    other = tmp_path / "end.json"
    assert s.end_profiling(other) == str(other)
    assert len(json.loads(other.read_text())["traceEvents"]) == len(trace["traceEvents"])
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        name = s.end_profiling()
    finally:
        os.chdir(cwd)
    assert name.startswith("onnx_light_profile_") and name.endswith(".json")
    assert json.loads((tmp_path / name).read_text())["traceEvents"]
    with pytest.raises(onnx_light.IoError, match="no-such-dir"):
        s.write_trace(str(tmp_path / "no-such-dir" / "t.json"))


COUNTERS = ["cycles", "instructions", "llc_misses", "task_clock_ns", "context_switches", "cpu_migrations",
            "page_faults"]


def test_counters_per_node_with_every_refused_counter_explained():
    options = runtime.RuntimeSessionOptions(parameters=runtime.RuntimeParameters(2), profile=True,
                                            profile_counters=True)
    options.optimization = "none"
    assert options.profile_counters is True
    s = runtime.RuntimeSession(chain_model(), options)
    x = np.linspace(-1, 1, 100000, dtype=np.float32)
    for _ in range(3):
        s.run_arrays([x])
    p = s.profile()
    status = {c["name"]: c for c in p["counters"]}
    assert sorted(status) == sorted(COUNTERS)
    for c in status.values():
        assert c["available"] or c["reason"], c
    available = sorted(n for n, c in status.items() if c["available"])
    for n in p["nodes"]:
        assert set(n) == NODE_KEYS | {"counters"}
        assert sorted(n["counters"]) == available
    if status["task_clock_ns"]["available"]:
        assert all(n["counters"]["task_clock_ns"] > 0 for n in p["nodes"])
    # The notebook API: InferenceSession(..., profile=True, counters=True) and Profile.counters.
    session = onnx_light.InferenceSession(chain_model(), profile=True, counters=True)
    session.run(None, {"x": x})
    report = session.profile()
    assert [c["name"] for c in report.counters] == COUNTERS
    rows = report.to_rows()
    if status["task_clock_ns"]["available"]:
        assert all(r["counters.task_clock_ns"] > 0 for r in rows), rows


def test_counters_need_the_profile_and_are_off_by_default():
    assert runtime.RuntimeSessionOptions().profile_counters is False
    with pytest.raises(onnx_light.InvalidValueError, match="needs profile=True"):
        runtime.RuntimeSessionOptions(profile_counters=True)
    with pytest.raises(onnx_light.InvalidValueError, match="needs profile=True"):
        onnx_light.InferenceSession(chain_model(), counters=True)
    s = session(True)
    s.run_arrays([np.ones(8, dtype=np.float32)])
    p = s.profile()
    assert "counters" not in p and all("counters" not in n for n in p["nodes"])
    assert onnx_light.InferenceSession(chain_model(), profile=True).profile().counters == []
