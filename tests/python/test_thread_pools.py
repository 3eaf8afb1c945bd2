"""Thread pools shared across sessions, seen from Python: sessions alike share one pool (one set of
workers, not one per session), a pool ends with its last session, and sessions on one pool run
from several Python threads at once with correct results."""
from __future__ import annotations

import gc
import threading
from pathlib import Path

import numpy as np

import onnx_light
from onnx_light import runtime

ABS = '<ir_version: 10, opset_import: ["" : 18]>\nagraph (float[N] x) => (float[N] y) { y = Abs(x) }'


def pool_worker_count() -> int:
    count = 0
    for task in Path("/proc/self/task").iterdir():
        try:
            count += (task / "comm").read_text().startswith("onnxl-pool-")
        except FileNotFoundError:  # the thread ended while listed
            continue
    return count


def test_sessions_alike_share_one_pool_that_ends_with_the_last_session() -> None:
    gc.collect()
    pools_before = runtime.live_thread_pools()
    workers_before = pool_worker_count()
    sessions = [onnx_light.InferenceSession(ABS, threads=2, from_text=True) for _ in range(4)]
    assert len({s.thread_pool_id for s in sessions}) == 1
    # At most one new pool (none when a live session already made it) and its one worker, not four.
    assert runtime.live_thread_pools() - pools_before <= 1
    assert pool_worker_count() - workers_before <= 1

    options = runtime.RuntimeSessionOptions(num_threads=2)
    assert options.share_thread_pool is True
    options.share_thread_pool = False
    own = onnx_light.InferenceSession(ABS, options, from_text=True)
    assert own.thread_pool_id != sessions[0].thread_pool_id
    parked = onnx_light.InferenceSession(
        ABS, runtime.RuntimeSessionOptions(runtime.RuntimeParameters(2, spin="none")), from_text=True
    )
    assert parked.thread_pool_id != sessions[0].thread_pool_id  # another spin policy, another pool

    del sessions, own, parked
    gc.collect()
    assert runtime.live_thread_pools() == pools_before


def test_sessions_sharing_a_pool_run_from_python_threads_at_once() -> None:
    a = onnx_light.InferenceSession(ABS, threads=2, from_text=True)
    b = onnx_light.InferenceSession(ABS, threads=2, from_text=True)
    assert a.thread_pool_id == b.thread_pool_id
    x = -np.arange(1 << 17, dtype=np.float32)
    wrong = []

    def hammer(session: onnx_light.InferenceSession, scale: float) -> None:
        for _ in range(100):
            (y,) = session.run(None, {"x": x * scale})
            if not np.array_equal(y, -x * scale):
                wrong.append(scale)

    threads = [threading.Thread(target=hammer, args=(s, k)) for s, k in ((a, 1.0), (b, 2.0), (a, 3.0))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert wrong == []
