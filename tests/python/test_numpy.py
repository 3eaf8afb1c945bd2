"""Numpy <-> TensorProto <-> runtime tensor round-trips for every element type tensors hold."""
from __future__ import annotations

import numpy as np
import pytest

from onnx_light.onnx import TensorProto, helper, numpy_helper
from onnx_light.onnx_py import _onnxpykernels

runtime = _onnxpykernels.runtime

# TensorProto.DataType -> the dtype tensor_to_numpy returns (bfloat16: its uint16 bit patterns).
TYPES = {
    TensorProto.FLOAT: np.float32,
    TensorProto.UINT8: np.uint8,
    TensorProto.INT8: np.int8,
    TensorProto.UINT16: np.uint16,
    TensorProto.INT16: np.int16,
    TensorProto.INT32: np.int32,
    TensorProto.INT64: np.int64,
    TensorProto.BOOL: np.bool_,
    TensorProto.FLOAT16: np.float16,
    TensorProto.DOUBLE: np.float64,
    TensorProto.UINT32: np.uint32,
    TensorProto.UINT64: np.uint64,
    TensorProto.COMPLEX64: np.complex64,
    TensorProto.COMPLEX128: np.complex128,
    TensorProto.BFLOAT16: np.uint16,
}
SHAPES = [(), (0,), (7,), (2, 3, 4)]


def sample(data_type: int, shape: tuple) -> np.ndarray:
    """Values covering each type's extremes, in `shape`."""
    rng = np.random.default_rng(data_type * 31 + len(shape))
    dtype = np.dtype(TYPES[data_type])
    count = int(np.prod(shape)) if shape else 1
    if dtype == np.bool_:
        values = rng.integers(0, 2, count).astype(np.bool_)
    elif data_type == TensorProto.BFLOAT16:
        floats = rng.normal(size=count).astype(np.float32)
        values = (floats.view(np.uint32) >> 16).astype(np.uint16)  # truncated bfloat16 bit patterns
    elif dtype.kind in "iu":
        info = np.iinfo(dtype)
        values = rng.integers(info.min, info.max, count, dtype=dtype, endpoint=True)
        values[: min(count, 2)] = [info.min, info.max][: min(count, 2)]
    elif dtype.kind == "f":
        values = (rng.normal(size=count) * 1000).astype(dtype)
        special = np.array([np.finfo(dtype).max, -0.0, np.inf, np.finfo(dtype).tiny], dtype=dtype)
        values[: min(count, 4)] = special[: min(count, 4)]
    else:  # complex
        values = (rng.normal(size=count) + 1j * rng.normal(size=count)).astype(dtype)
    return values.reshape(shape)


def assert_same(actual: np.ndarray, expected: np.ndarray):
    assert isinstance(actual, np.ndarray)
    assert actual.dtype == expected.dtype
    assert actual.shape == expected.shape
    assert actual.tobytes() == expected.tobytes()


def raw_proto(data_type: int, array: np.ndarray) -> TensorProto:
    if data_type == TensorProto.BFLOAT16:
        proto = TensorProto(name="t", data_type=data_type, dims=array.shape)
        proto.raw_data = array.astype("<u2").tobytes()
        return proto
    proto = numpy_helper.from_array(array, name="t")
    assert proto.data_type == data_type
    return proto


def typed_proto(data_type: int, array: np.ndarray) -> TensorProto:
    """The same values in the typed fields (float_data, int32_data, ...), as the ONNX spec stores them."""
    proto = TensorProto(name="t", data_type=data_type, dims=array.shape)
    flat = array.reshape(-1)
    if data_type in (TensorProto.FLOAT,):
        proto.float_data.extend(flat.tolist())
    elif data_type == TensorProto.DOUBLE:
        proto.double_data.extend(flat.tolist())
    elif data_type == TensorProto.INT64:
        proto.int64_data.extend(flat.tolist())
    elif data_type in (TensorProto.UINT32, TensorProto.UINT64):
        proto.uint64_data.extend(int(v) for v in flat)
    elif data_type in (TensorProto.FLOAT16,):
        proto.int32_data.extend(flat.view(np.uint16).astype(np.int32).tolist())
    elif data_type == TensorProto.BFLOAT16:
        proto.int32_data.extend(flat.astype(np.int32).tolist())
    elif data_type == TensorProto.COMPLEX64:
        proto.float_data.extend(np.stack([flat.real, flat.imag], axis=-1).reshape(-1).tolist())
    elif data_type == TensorProto.COMPLEX128:
        proto.double_data.extend(np.stack([flat.real, flat.imag], axis=-1).reshape(-1).tolist())
    else:  # int8/16/32, uint8/16, bool
        proto.int32_data.extend(flat.astype(np.int64).astype(np.int32).tolist())
    return proto


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("data_type", list(TYPES), ids=lambda t: TensorProto.DataType.Name(t))
def test_raw_data_proto_to_numpy(data_type, shape):
    expected = sample(data_type, shape)
    tensor = runtime.tensor_from_proto(raw_proto(data_type, expected))
    assert tensor.element_type == data_type and tensor.shape == shape
    assert_same(runtime.tensor_to_numpy(tensor), expected)


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("data_type", list(TYPES), ids=lambda t: TensorProto.DataType.Name(t))
def test_typed_field_proto_to_numpy(data_type, shape):
    expected = sample(data_type, shape)
    proto = typed_proto(data_type, expected)
    if expected.size:
        assert not proto.raw_data
    assert_same(runtime.tensor_to_numpy(runtime.tensor_from_proto(proto)), expected)


@pytest.mark.parametrize("data_type", [t for t in TYPES if t != TensorProto.BFLOAT16],
                         ids=lambda t: TensorProto.DataType.Name(t))
def test_helper_make_tensor_matches_numpy_helper(data_type):
    """onnx.helper.make_tensor (typed fields) and onnx.numpy_helper.to_array agree with tensor_to_numpy."""
    values = sample(data_type, (3, 2))
    proto = helper.make_tensor("t", data_type, values.shape, values.reshape(-1).tolist()
                               if data_type != TensorProto.FLOAT16 else values.reshape(-1))
    # onnx 1.12's numpy_helper.to_array cannot read complex typed fields; compare with the values then.
    complex_type = data_type in (TensorProto.COMPLEX64, TensorProto.COMPLEX128)
    expected = values if complex_type else numpy_helper.to_array(proto)
    assert_same(runtime.tensor_to_numpy(runtime.tensor_from_proto(proto)), expected)


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("data_type", list(TYPES), ids=lambda t: TensorProto.DataType.Name(t))
def test_numpy_to_tensor_to_proto_and_back(data_type, shape):
    expected = sample(data_type, shape)
    element_type = TensorProto.BFLOAT16 if data_type == TensorProto.BFLOAT16 else None
    tensor = runtime.tensor_from_numpy(expected, element_type=element_type)
    assert tensor.element_type == data_type
    assert_same(runtime.tensor_to_numpy(tensor), expected)
    proto = runtime.tensor_to_proto(tensor, "named")
    assert isinstance(proto, TensorProto) and proto.data_type == data_type and tuple(proto.dims) == shape
    assert proto.name == "named"
    assert_same(runtime.tensor_to_numpy(runtime.tensor_from_proto(proto)), expected)
    if data_type != TensorProto.BFLOAT16:
        assert_same(numpy_helper.to_array(proto), expected)


def test_tensor_to_numpy_returns_an_independent_writable_copy():
    tensor = runtime.tensor_from_numpy(np.arange(4, dtype=np.int64))
    first = runtime.tensor_to_numpy(tensor)
    first[0] = 100
    assert first.flags.writeable and first.flags.c_contiguous
    np.testing.assert_array_equal(runtime.tensor_to_numpy(tensor), np.arange(4))
    source = np.arange(4, dtype=np.float32)
    copied = runtime.tensor_from_numpy(source)
    source[:] = -1
    np.testing.assert_array_equal(copied.numpy(), np.arange(4, dtype=np.float32))


def test_view_as_float32_gives_the_values():
    x = np.linspace(-3, 3, 9, dtype=np.float32)
    y = runtime.tensor_to_numpy(runtime.tensor_from_numpy(x)).view(np.float32)
    np.testing.assert_array_equal(y, x)


def test_non_contiguous_big_endian_and_list_inputs():
    base = np.arange(24, dtype=np.float64).reshape(4, 6)
    assert_same(runtime.tensor_to_numpy(runtime.tensor_from_numpy(base[:, ::2])), np.ascontiguousarray(base[:, ::2]))
    assert_same(runtime.tensor_to_numpy(runtime.tensor_from_numpy(base.T)), np.ascontiguousarray(base.T))
    big = np.arange(5, dtype=">i4")
    assert_same(runtime.tensor_to_numpy(runtime.tensor_from_numpy(big)), np.arange(5, dtype=np.int32))
    assert_same(runtime.tensor_to_numpy(runtime.tensor_from_numpy([[1.5, 2.5]])), np.array([[1.5, 2.5]]))
    assert_same(np.asarray(runtime.tensor_from_numpy(np.float32(2.5))), np.array(2.5, dtype=np.float32))
    assert np.asarray(runtime.tensor_from_numpy(np.arange(3)), dtype=np.float64).dtype == np.float64


@pytest.mark.parametrize("value", [np.array(["a", "b"]), np.array([object()]), np.array(["2020-01-01"],
                                   dtype="datetime64[D]"), np.zeros(2, dtype="V4")])
def test_unsupported_dtypes_are_type_errors(value):
    with pytest.raises(TypeError, match="dtype"):
        runtime.tensor_from_numpy(value)


def test_element_type_override():
    bits = np.array([0x3F80, 0xC000], dtype=np.uint16)  # bfloat16 1.0, -2.0
    tensor = runtime.tensor_from_numpy(bits, element_type=TensorProto.BFLOAT16)
    assert tensor.element_type_name == "bfloat16"
    assert "1" in repr(tensor) and "-2" in repr(tensor)
    with pytest.raises(ValueError, match="does not match"):
        runtime.tensor_from_numpy(np.zeros(2, dtype=np.float32), element_type=TensorProto.DOUBLE)
    with pytest.raises(KeyError):
        runtime.tensor_from_numpy(np.zeros(2, dtype=np.float32), element_type=99)
    with pytest.raises(ValueError):
        runtime.tensor_from_numpy(np.zeros(2, dtype=np.float32), element_type=TensorProto.STRING)
