"""The ONNX protobuf classes and helpers, from Debian's ``python3-onnx`` (the ``onnx`` package).

``onnx_light.onnx.TensorProto`` *is* ``onnx.TensorProto``: objects made from either are
interchangeable, and onnx_light passes them to its C++ library as serialized bytes. Any other
public name of the ``onnx`` package is reachable here too (``onnx_light.onnx.shape_inference``...).
"""
from typing import Any

# Debian's onnx 1.12 ships no type information.
import onnx as _onnx  # type: ignore[import]
from onnx import (
    AttributeProto,
    FunctionProto,
    GraphProto,
    ModelProto,
    NodeProto,
    OperatorSetIdProto,
    SparseTensorProto,
    StringStringEntryProto,
    TensorProto,
    TensorShapeProto,
    TypeProto,
    ValueInfoProto,
    checker,
    helper,
    load_model,
    load_model_from_string,
    numpy_helper,
    save_model,
)

__all__ = [
    "AttributeProto",
    "FunctionProto",
    "GraphProto",
    "ModelProto",
    "NodeProto",
    "OperatorSetIdProto",
    "SparseTensorProto",
    "StringStringEntryProto",
    "TensorProto",
    "TensorShapeProto",
    "TypeProto",
    "ValueInfoProto",
    "checker",
    "helper",
    "load_model",
    "load_model_from_string",
    "numpy_helper",
    "save_model",
]


def __getattr__(name: str) -> Any:
    """Falls back to the ``onnx`` package for every other public name."""
    if name.startswith("_"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    try:
        return getattr(_onnx, name)
    except AttributeError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r} (nor has onnx)") from None
