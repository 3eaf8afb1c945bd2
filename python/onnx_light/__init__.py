"""onnx_light: a small ONNX CPU runtime and its kernel tuner, from Python.

Modules:

- :mod:`onnx_light.kernel_tuning`: list, propose, set, inspect, load, calibrate and remove
  kernel tuning profiles (the operations of the ``onnx-light-tune`` CLI, returning the same
  dictionaries as its ``--json`` output).
- ``onnx_light.onnx_py._onnxpykernels.runtime``: tensors, runtime contexts, sessions and
  parallel-region profiling.
- :mod:`onnx_light.onnx_lib.parser`: ``parse_model(text)``, the ONNX text syntax parsed by
  onnx_light's own C++ library, returned as an ``onnx.ModelProto``.
- :mod:`onnx_light.onnx`: the ONNX protobuf classes (``TensorProto``, ``ModelProto``...) of the
  ``onnx`` package.

Importing the package publishes the default tuning cache into this process when it exists
(``kernel_tuning.load_kernel_tuning_cache()`` on the default path, plus the system cache), so
sessions use this machine's tuned values without a call. A cache that cannot be read never
makes the import fail: a :class:`TuningCacheWarning` says why. Set the environment variable
``ONNX_LIGHT_NO_AUTOLOAD=1`` to skip this; :data:`autoload_report` holds the load report (or
``None`` when nothing was loaded).

Errors raised by the libraries are :class:`Error` (a ``RuntimeError``) subclasses that also
derive from the builtin a caller expects: :class:`NotFoundError` (``KeyError``),
:class:`InvalidValueError` (``ValueError``), :class:`TypeMismatchError` (``TypeError``),
:class:`ModelError`, :class:`UnsupportedError` and :class:`InputError` (``ValueError``),
:class:`IoError` (``OSError``), :class:`MemoryLimitError` (``MemoryError``: a value over the
session's memory limit) and :class:`CalibrationMismatch`.
"""
from __future__ import annotations

import os as _os
import warnings as _warnings
from typing import Optional as _Optional

from .onnx_py import _onnxpykernels
from .onnx_py._onnxpykernels import (
    CalibrationMismatch,
    Error,
    InputError,
    InvalidValueError,
    IoError,
    MemoryLimitError,
    ModelError,
    NotFoundError,
    TypeMismatchError,
    UnsupportedError,
)
from . import kernel_tuning

__version__: str = _onnxpykernels.__version__

__all__ = [
    "CalibrationMismatch",
    "Error",
    "InputError",
    "InvalidValueError",
    "IoError",
    "MemoryLimitError",
    "ModelError",
    "NotFoundError",
    "TuningCacheWarning",
    "TypeMismatchError",
    "UnsupportedError",
    "autoload_report",
    "kernel_tuning",
]


class TuningCacheWarning(UserWarning):
    """The default tuning cache could not be loaded (or holds invalid profiles) at import."""


def _load_default_cache() -> _Optional[dict]:
    """Publishes the default cache (and the system cache) when one exists; never raises."""
    if _os.environ.get("ONNX_LIGHT_NO_AUTOLOAD", "") not in ("", "0"):
        return None
    try:
        path = kernel_tuning.default_kernel_tuning_cache_path()
    except Exception:  # no HOME, XDG_CACHE_HOME or ONNX_LIGHT_TUNING_CACHE: nothing to load
        return None
    try:
        system = _onnxpykernels._tuning.system_cache_path()
    except Exception:
        system = None
    if not (path and _os.path.exists(path)) and not (system and _os.path.exists(system)):
        return None
    try:
        report = kernel_tuning.load_kernel_tuning_cache(path)
    except Exception as error:  # noqa: BLE001  (the import must not fail because of a cache)
        _warnings.warn(
            f"onnx_light: the kernel tuning cache {path} was not loaded: {error}",
            TuningCacheWarning,
            stacklevel=3,
        )
        return None
    messages = [d.get("message", "") for d in report.get("diagnostics", [])]
    if report.get("status") in ("malformed", "unreadable"):
        _warnings.warn(
            f"onnx_light: the kernel tuning cache {report.get('path')} is {report.get('status')}; "
            f"sessions use the portable defaults. " + " ".join(messages),
            TuningCacheWarning,
            stacklevel=3,
        )
    elif report.get("invalid"):
        _warnings.warn(
            f"onnx_light: {len(report['invalid'])} key(s) of the kernel tuning cache {report.get('path')} "
            f"have invalid profiles and were not loaded. " + " ".join(messages),
            TuningCacheWarning,
            stacklevel=3,
        )
    return report


#: The report of the load done at import (``None`` when no cache existed or autoload is off).
autoload_report: _Optional[dict] = _load_default_cache()
