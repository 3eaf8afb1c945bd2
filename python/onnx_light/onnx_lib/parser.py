"""The ONNX text syntax, parsed by onnx_light's C++ library.

Example::

    from onnx_light.onnx_lib import parser
    model = parser.parse_model(
        '<ir_version: 10, opset_import: ["" : 18]>'
        "agraph (float[N] x) => (float[N] y) { y = Abs(x) }"
    )
"""
from __future__ import annotations

# Debian's onnx 1.12 ships no type information.
import onnx as _onnx  # type: ignore[import]

from ..onnx_py._onnxpykernels import _parser

__all__ = ["parse_model"]


def parse_model(text: str | bytes) -> _onnx.ModelProto:
    """Parses a model in the ONNX text syntax and returns it as an ``onnx.ModelProto``.

    The text is parsed by onnx_light's C++ library (the same code the CLI and
    ``RuntimeSession`` use for ``.onnxtxt`` files), serialized, and read back into the
    ``onnx`` package's ``ModelProto`` class.

    Args:
        text: The model in ONNX text syntax, as ``str`` or UTF-8 ``bytes``.

    Returns:
        An ``onnx.ModelProto``.

    Raises:
        TypeError: ``text`` is neither ``str`` nor ``bytes``.
        onnx_light.ModelError: A syntax error (a ``ValueError``); the message gives the line
            and column.
    """
    if isinstance(text, (bytes, bytearray)):
        text = bytes(text).decode("utf-8")
    if not isinstance(text, str):
        raise TypeError(f"parse_model() expects the model text as str or bytes, not {type(text).__name__}")
    model = _onnx.ModelProto()
    model.ParseFromString(_parser.parse_model_bytes(text))
    return model
