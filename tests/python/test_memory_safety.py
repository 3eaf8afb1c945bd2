"""Ownership and aliasing of results (issue 13): results a caller holds are never overwritten, a
failed run leaves the context as it was, and run_arrays handles output arrays that share memory
with inputs or with each other."""
from __future__ import annotations

import numpy as np
import pytest

import onnx_light
from onnx_light.onnx_py import _onnxpykernels

from conftest import ABS_MODEL_TEXT

runtime = _onnxpykernels.runtime

REDUCE_SUM_SCALAR = (
    '<ir_version: 8, opset_import: ["" : 17]>\n'
    "g (float[3] x) => (float y) { y = ReduceSum <keepdims = 0> (x) }"
)
ABS_AND_NEG = (
    '<ir_version: 8, opset_import: ["" : 17]>\n'
    "g (float[4] x) => (float[4] a, float[4] b) { a = Abs(x) b = Neg(x) }"
)


def serial_session(text: str):
    options = runtime.RuntimeSessionOptions(parameters=runtime.RuntimeParameters(1))
    return runtime.RuntimeSession(text, options)


def test_run_arrays_rank0_result_survives_the_next_run():
    session = serial_session(REDUCE_SUM_SCALAR)
    (a1,) = session.run_arrays([np.array([1, 2, 3], np.float32)])
    (a2,) = session.run_arrays([np.array([10, 20, 30], np.float32)])
    assert a1.shape == () and float(a1) == 6.0
    assert float(a2) == 60.0
    assert not np.shares_memory(a1, a2)
    del session  # the arrays own their memory beyond the session
    assert float(a1) == 6.0 and float(a2) == 60.0


def test_context_rank0_result_kept_by_the_caller_survives_the_next_run():
    session = serial_session(REDUCE_SUM_SCALAR)
    context = runtime.RuntimeContext()
    context["x"] = np.array([1, 2, 3], np.float32)
    session.run(context)
    kept = context["y"]
    context["x"] = np.array([10, 20, 30], np.float32)
    session.run(context)
    assert float(kept.numpy()) == 6.0
    assert float(context["y"].numpy()) == 60.0


def test_failed_run_leaves_the_context_as_it_was():
    session = serial_session(ABS_MODEL_TEXT)
    context = runtime.RuntimeContext()
    context["x"] = -np.ones(1 << 16, np.float32)
    session.run(context)
    del context["x"]
    with pytest.raises(onnx_light.InputError, match="missing input 'x'"):
        session.run(context)
    y = context["y"]
    assert y.shape == (1 << 16,) and y.element_count == 1 << 16
    np.testing.assert_array_equal(y.numpy(), np.ones(1 << 16, np.float32))


def test_duplicate_graph_output_names_are_refused():
    text = '<ir_version: 8, opset_import: ["" : 17]>\ng (float[4] x) => (float[4] y, float[4] y) { y = Abs(x) }'
    with pytest.raises(onnx_light.ModelError, match="graph output 'y' is listed twice"):
        runtime.RuntimeSession(text)


def test_run_arrays_output_that_is_the_input_transposes_exactly():
    session = serial_session(
        '<ir_version: 8, opset_import: ["" : 17]>\ng (float[3, 3] x) => (float[3, 3] y) { y = Transpose(x) }')
    x = np.arange(9, dtype=np.float32).reshape(3, 3)
    expected = x.T.copy()
    (returned,) = session.run_arrays([x], [x])
    assert returned is x
    np.testing.assert_array_equal(x, expected)


def test_run_arrays_first_output_in_the_input_buffer_leaves_the_second_correct():
    session = serial_session(ABS_AND_NEG)
    x = np.array([-1, 2, -3, 4], np.float32)
    b = np.zeros(4, np.float32)
    session.run_arrays([x], [x, b])
    np.testing.assert_array_equal(x, [1, 2, 3, 4])
    np.testing.assert_array_equal(b, [1, -2, 3, -4])


def test_run_arrays_output_partly_overlapping_the_input_is_exact():
    session = serial_session(ABS_MODEL_TEXT)
    # The output starts two floats into the input: a loop writing in place would read its own stores.
    backing = -np.arange(1, 1003, dtype=np.float32)
    session.run_arrays([backing[:1000]], [backing[2:]])
    np.testing.assert_array_equal(backing[:2], [-1, -2])
    np.testing.assert_array_equal(backing[2:], np.arange(1, 1001, dtype=np.float32))


def test_run_arrays_outputs_sharing_memory_are_refused_naming_both():
    session = serial_session(ABS_AND_NEG)
    x = np.array([-1, 2, -3, 4], np.float32)
    shared = np.full(6, 7, np.float32)
    with pytest.raises(onnx_light.InputError, match=r"outputs 0 \('a'\) and 1 \('b'\) share memory"):
        session.run_arrays([x], [shared[:4], shared[2:]])
    np.testing.assert_array_equal(shared, 7)
