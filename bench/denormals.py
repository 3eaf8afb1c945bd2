"""Denormal weights, flushed (the default) or kept: the cost the session's FTZ/DAZ mode removes.

A MatMul [M, K] x [K, N] whose weights are denormal floats (what some exported recognizers carry
after training), timed in one process with the two sessions interleaved, median of per-repetition
medians. Usage: /usr/bin/python3 bench/denormals.py [THREADS] [REPS]  (PYTHONPATH=<build>/python)
"""
from __future__ import annotations

import statistics
import sys
import time

import numpy as np

from onnx_light.onnx_py import _onnxpykernels

runtime = _onnxpykernels.runtime
M, K, N = 64, 512, 512
MODEL = (f'<ir_version: 8, opset_import: ["" : 17]>\n'
         f'g (float[{M}, {K}] a, float[{K}, {N}] w) => (float[{M}, {N}] y) {{ y = MatMul(a, w) }}')


def median_us(session, inputs, out, runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        session.run_arrays(inputs, out)
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e6


def main() -> None:
    threads = int(sys.argv[1]) if len(sys.argv) > 1 else 1
    reps = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    rng = np.random.default_rng(7)
    a = rng.uniform(-1, 1, (M, K)).astype(np.float32)
    w = (rng.uniform(-1, 1, (K, N)) * np.finfo(np.float32).tiny / 4).astype(np.float32)  # all denormal
    sessions = {flush: runtime.RuntimeSession(MODEL, runtime.RuntimeSessionOptions(
        parameters=runtime.RuntimeParameters(threads), flush_denormals=flush)) for flush in (True, False)}
    outs = {flush: [np.empty((M, N), np.float32)] for flush in sessions}
    for flush, session in sessions.items():
        median_us(session, [a, w], outs[flush], 5)  # warm-up
    results = {True: [], False: []}
    for _ in range(reps):
        for flush, session in sessions.items():
            results[flush].append(median_us(session, [a, w], outs[flush], 20))
    flushed, kept = statistics.median(results[True]), statistics.median(results[False])
    print(f"MatMul {M}x{K}x{N}, denormal weights, T={threads}: flushed {flushed:.0f} us "
          f"[{min(results[True]):.0f}-{max(results[True]):.0f}], kept {kept:.0f} us "
          f"[{min(results[False]):.0f}-{max(results[False]):.0f}], kept/flushed {kept / flushed:.1f}x")


if __name__ == "__main__":
    main()
