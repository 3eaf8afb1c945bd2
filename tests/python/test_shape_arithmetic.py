"""Shape arithmetic at the int64 limits through the Python module: Range counts in integers,
Tile and Reshape refuse dims that overflow, and every such failure is an onnx_light.InputError
naming the node (never a wrapped shape, a MemoryError or a crash)."""
from __future__ import annotations

import numpy as np
import pytest

import onnx_light
from onnx_light.onnx_py import _onnxpykernels

runtime = _onnxpykernels.runtime

INT64_MAX = np.iinfo(np.int64).max
INT64_MIN = np.iinfo(np.int64).min
HEADER = '<ir_version: 8, opset_import: ["" : 17]>\n'


def session(graph: str) -> "runtime.RuntimeSession":
    return runtime.RuntimeSession(HEADER + "g " + graph)


def int64_range(start: int, limit: int, delta: int) -> np.ndarray:
    s = session("(int64 s, int64 l, int64 d) => (int64[N] y) { y = Range(s, l, d) }")
    return s.run_arrays([np.array(start, np.int64), np.array(limit, np.int64), np.array(delta, np.int64)])[0]


def test_range_past_2_to_the_53_is_exact():
    start = 2**53
    y = int64_range(start, start + 3, 1)
    assert y.dtype == np.int64
    assert y.tolist() == [start, start + 1, start + 2]


def test_range_up_to_int64_max():
    assert int64_range(9223372036854775800, INT64_MAX, 1).tolist() == list(range(9223372036854775800, INT64_MAX))
    assert int64_range(INT64_MAX, 9223372036854775800, -1).tolist() == list(range(INT64_MAX, 9223372036854775800, -1))
    assert int64_range(INT64_MIN, INT64_MAX, 2**62).tolist() == list(range(INT64_MIN, INT64_MAX, 2**62))


@pytest.mark.parametrize("start, limit, delta", [(10, 0, -3), (-5, 5, 5), (0, 10, -1), (5, 5, 1), (-7, -20, -4)])
def test_range_matches_python_range(start, limit, delta):
    assert int64_range(start, limit, delta).tolist() == list(range(start, limit, delta))


def test_range_float_counts_in_float_like_numpy():
    s = session("(float s, float l, float d) => (float[N] y) { y = Range(s, l, d) }")
    args = [np.array(v, np.float32) for v in (0.0, 0.1, 0.01)]
    y = s.run_arrays(args)[0]
    assert len(y) == len(np.arange(*args)) == 10


def test_range_delta_zero_is_an_input_error_naming_the_node():
    with pytest.raises(onnx_light.InputError, match=r"^Range node #0: .*delta"):
        int64_range(0, 10, 0)


@pytest.mark.parametrize("start, limit, what", [
    (0, INT64_MAX, "too large to address"),          # INT64_MAX elements of 8 bytes
    (INT64_MIN, INT64_MAX, "18446744073709551615"),  # not even an int64 count
])
def test_range_too_large_is_an_input_error_not_memory_error(start, limit, what):
    with pytest.raises(onnx_light.InputError, match=r"^Range node #0: ") as error:
        int64_range(start, limit, 1)
    assert what in str(error.value)


def test_range_addressable_but_past_the_memory_limit_is_a_memory_limit_error_naming_the_node():
    # 4 EiB: addressable, but over the session's memory limit; refused before allocating.
    with pytest.raises(onnx_light.MemoryLimitError, match=r"^Range node #0: output 'y' .* needs 4\.0 EiB") as error:
        int64_range(0, 2**59, 1)
    assert isinstance(error.value, MemoryError)


def tile(x: np.ndarray, repeats: int) -> np.ndarray:
    s = session("(float[4] x, int64[1] r) => (float[M] y) { y = Tile(x, r) }")
    return s.run_arrays([x, np.array([repeats], np.int64)])[0]


def test_tile_output_dim_overflow_is_an_input_error():
    # 4 * 2^62 wrapped to 0 and the run returned float[0].
    with pytest.raises(onnx_light.InputError, match=r"^Tile node #0: .*4 \* 4611686018427387904"):
        tile(np.ones(4, np.float32), 2**62)


def test_tile_output_too_large_to_address_is_an_input_error():
    with pytest.raises(onnx_light.InputError, match=r"^Tile node #0: .*too large to address"):
        tile(np.ones(4, np.float32), 2**60)


def test_tile_negative_repeats_is_an_input_error():
    with pytest.raises(onnx_light.InputError, match=r"^Tile node #0: .*non-negative"):
        tile(np.ones(4, np.float32), -1)
    np.testing.assert_array_equal(tile(np.arange(4, dtype=np.float32), 2), np.tile(np.arange(4, dtype=np.float32), 2))


def test_reshape_known_dims_product_overflow_is_an_input_error():
    s = session("(float[N] x, int64[3] s) => (float[A, B, C] y) { y = Reshape(x, s) }")
    # (2^32 + 1)(2^32 - 1) wrapped to -1 and the -1 was inferred as -4.
    with pytest.raises(onnx_light.InputError, match=r"^Reshape node #0: .*overflows"):
        s.run_arrays([np.ones(4, np.float32), np.array([4294967297, 4294967295, -1], np.int64)])
    y = s.run_arrays([np.ones(12, np.float32), np.array([2, -1, 3], np.int64)])[0]
    assert y.shape == (2, 2, 3)
