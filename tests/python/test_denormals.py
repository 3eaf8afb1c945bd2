"""RuntimeSessionOptions(flush_denormals=...): denormal floats flushed to zero by default, kept when
asked, on every thread of the session."""
from __future__ import annotations

import platform

import numpy as np
import pytest

from onnx_light.onnx_py import _onnxpykernels

runtime = _onnxpykernels.runtime

pytestmark = pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"), reason="FTZ/DAZ is x86's mode")

SCALE = '<ir_version: 8, opset_import: ["" : 17]>\ng (float[N] x, float[N] s) => (float[N] y) { y = Mul(x, s) }'
DENORMAL = np.float32(np.finfo(np.float32).tiny / 8)


def scale(n: int, threads: int, **options):
    session = runtime.RuntimeSession(SCALE, runtime.RuntimeSessionOptions(
        parameters=runtime.RuntimeParameters(threads), **options))
    inputs = [np.full(n, DENORMAL, np.float32), np.ones(n, np.float32)]
    # Blocks are claimed dynamically: repeat so that a worker's block is among those checked.
    results = [session.run_arrays(inputs)[0] for _ in range(20)]
    return np.concatenate(results)


def test_denormals_are_flushed_by_default():
    assert runtime.RuntimeSessionOptions().flush_denormals is True
    assert "flush_denormals=True" in repr(runtime.RuntimeSessionOptions())
    np.testing.assert_array_equal(scale(1 << 21, 2).view(np.uint32), 0)


def test_denormals_are_kept_when_asked():
    y = scale(1 << 21, 2, flush_denormals=False)
    np.testing.assert_array_equal(y.view(np.uint32), DENORMAL.view(np.uint32))
    # The interpreter's own arithmetic is untouched by either session.
    assert np.float32(DENORMAL) * np.float32(1) == DENORMAL
