"""Native calls release the GIL: while they run on another thread, this thread keeps running Python.

The measure is the longest gap between two iterations of a main-thread ticker while the other
thread runs native calls totalling at least MINIMUM_NATIVE_S. The switch interval is raised to
SWITCH_INTERVAL_S for the measurement, so a call that holds the GIL starves the ticker for the
whole batch (its gap is the batch's length, >= MINIMUM_NATIVE_S) however short each call is,
while a call that releases it lets the ticker run within a sleep and a wake-up.
test_gap_detector_* prove the measure on calls known to hold and to release the GIL.
"""
from __future__ import annotations

import ctypes
import sys
import threading
import time

import numpy as np

from onnx_light import kernel_tuning
from onnx_light.onnx_py import _onnxpykernels

runtime = _onnxpykernels.runtime

# A gap is a sleep plus a wake-up, which a loaded machine stretches to tens of ms, never to a
# batch of native calls three times as long.
MINIMUM_NATIVE_S = 0.3
MAXIMUM_GAP_S = 0.1
SWITCH_INTERVAL_S = 1.0
TICK_SLEEP_S = 0.0005


def main_thread_gaps(calls):
    """Runs calls() on a worker thread (it returns the seconds spent in native calls) while this
    thread ticks; returns (longest gap in seconds between ticks, from the start until the ticker
    sees the worker done, ticks, native seconds)."""
    done = threading.Event()
    result = {}

    def work():
        try:
            result["native_s"] = calls()
        finally:
            done.set()

    previous_interval = sys.getswitchinterval()
    sys.setswitchinterval(SWITCH_INTERVAL_S)
    try:
        worker = threading.Thread(target=work)
        last = time.perf_counter()
        longest = 0.0
        ticks = 0
        worker.start()
        while not done.is_set():
            time.sleep(TICK_SLEEP_S)
            now = time.perf_counter()
            longest = max(longest, now - last)
            last = now
            ticks += 1
        longest = max(longest, time.perf_counter() - last)
        worker.join()
    finally:
        sys.setswitchinterval(previous_interval)
    return longest, ticks, result["native_s"]


def timed_calls(call, minimum_s=MINIMUM_NATIVE_S):
    """calls() repeating call() until the calls took minimum_s in total; returns that total."""
    def calls():
        spent = 0.0
        while spent < minimum_s:
            started = time.perf_counter()
            call()
            spent += time.perf_counter() - started
        return spent

    return calls


def usleep_calls(library, microseconds):
    usleep = library.usleep
    usleep.argtypes = [ctypes.c_uint]
    return timed_calls(lambda: usleep(microseconds))


def test_gap_detector_catches_a_native_call_holding_the_gil():
    # ctypes.PyDLL keeps the GIL through the call: short (1 ms) and long (10 ms) holds both show.
    for microseconds in (1000, 10000):
        longest, ticks, native_s = main_thread_gaps(usleep_calls(ctypes.PyDLL(None), microseconds))
        assert native_s >= MINIMUM_NATIVE_S
        assert longest > MAXIMUM_GAP_S, (
            f"holding the GIL for {microseconds} us per call went unnoticed: longest gap {longest * 1e3:.1f} ms")


def test_gap_detector_passes_a_native_call_releasing_the_gil():
    # ctypes.CDLL releases the GIL around the call.
    longest, ticks, native_s = main_thread_gaps(usleep_calls(ctypes.CDLL(None), 1000))
    assert native_s >= MINIMUM_NATIVE_S
    assert longest <= MAXIMUM_GAP_S, f"longest gap {longest * 1e3:.1f} ms over {ticks} ticks"


def test_session_run_releases_the_gil(abs_model):
    session = runtime.RuntimeSession(abs_model, runtime.RuntimeSessionOptions(parameters=runtime.RuntimeParameters(1)))
    context = runtime.RuntimeContext(runtime.KernelContext(runtime.default_opset(18)))
    context.set("x", runtime.tensor_from_numpy(-np.ones(1 << 22, dtype=np.float32)))
    session.run(context)  # warm up (initialisation, output buffers)
    longest, ticks, native_s = main_thread_gaps(timed_calls(lambda: session.run(context)))
    assert native_s >= MINIMUM_NATIVE_S
    assert longest <= MAXIMUM_GAP_S, f"longest gap {longest * 1e3:.1f} ms over {ticks} ticks in {native_s:.3f} s of runs"


def test_calibrate_releases_the_gil(cache_path):
    reports = []

    def calibrate():
        # Every calibratable key on two threads: the budget is spent measuring.
        reports.append(kernel_tuning.calibrate_kernel_tuning(
            all=True, maximum_duration_ms=200, save=False, path=cache_path, num_threads=2))

    longest, ticks, native_s = main_thread_gaps(timed_calls(calibrate))
    assert len(reports[0]["calibrated"]) > 1
    assert native_s >= MINIMUM_NATIVE_S
    assert longest <= MAXIMUM_GAP_S, f"longest gap {longest * 1e3:.1f} ms over {ticks} ticks in {native_s:.3f} s"
