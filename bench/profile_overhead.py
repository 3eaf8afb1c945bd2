"""What RuntimeSessionOptions(profile=True) costs: a chain of 50 small nodes, profiled and not.

A model of 50 elementwise nodes (Abs, Neg, Add, Mul, Relu, Sigmoid in turn) over [1, N] floats, so
that the per-node cost of profiling (two clock reads, the input shapes copied, a trace event, and
per parallel block two more reads) is as visible as it gets. Both sessions run in one process,
interleaved, median of per-repetition medians. The profiled session keeps recording for the whole
benchmark (its trace buffer fills and then counts drops, which is the steady state of a long run).
Usage: /usr/bin/python3 bench/profile_overhead.py [THREADS] [N] [REPS]  (PYTHONPATH=<build>/python)
"""
from __future__ import annotations

import statistics
import sys
import time

import numpy as np
from onnx import TensorProto, helper

from onnx_light.onnx_py import _onnxpykernels

runtime = _onnxpykernels.runtime
NODES = 50


def chain(n: int) -> bytes:
    ops = ["Abs", "Neg", "Add", "Mul", "Relu", "Sigmoid"]
    nodes, last = [], "x"
    for i in range(NODES):
        op = ops[i % len(ops)]
        inputs = [last, "x"] if op in ("Add", "Mul") else [last]
        nodes.append(helper.make_node(op, inputs, [f"v{i}"], name=f"n{i}"))
        last = f"v{i}"
    nodes[-1].output[0] = "y"
    graph = helper.make_graph(nodes, "chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, n])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, n])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)]).SerializeToString()


def median_us(session, inputs, out, runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        session.run_arrays(inputs, out)
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e6


def main() -> None:
    threads = int(sys.argv[1]) if len(sys.argv) > 1 else 1
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 64
    reps = int(sys.argv[3]) if len(sys.argv) > 3 else 9
    model = chain(n)
    x = np.linspace(-1, 1, n, dtype=np.float32).reshape(1, n)
    sessions = {p: runtime.RuntimeSession(model, runtime.RuntimeSessionOptions(
        parameters=runtime.RuntimeParameters(threads), profile=p)) for p in (False, True)}
    outs = {p: [np.empty((1, n), np.float32)] for p in sessions}
    for p, session in sessions.items():
        median_us(session, [x], outs[p], 50)  # warm-up
    results = {False: [], True: []}
    for _ in range(reps):
        for p, session in sessions.items():
            results[p].append(median_us(session, [x], outs[p], 200))
    off, on = statistics.median(results[False]), statistics.median(results[True])
    profile = sessions[True].profile()
    print(f"{NODES} nodes over [1, {n}], T={threads}: off {off:.1f} us [{min(results[False]):.1f}-"
          f"{max(results[False]):.1f}], on {on:.1f} us [{min(results[True]):.1f}-{max(results[True]):.1f}], "
          f"+{on - off:.1f} us per run = {(on - off) * 1000 / NODES:.0f} ns per node ({(on / off - 1) * 100:+.1f}%); "
          f"profile: {profile['runs']} runs, {profile['nodes_us'] / max(profile['runs'], 1):.1f} us per run in nodes")


if __name__ == "__main__":
    main()
