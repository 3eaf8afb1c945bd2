"""onnx_light: a small ONNX CPU runtime and its kernel tuner, from Python.

Five lines in a notebook::

    import numpy as np, onnx_light
    session = onnx_light.InferenceSession("model.onnx", threads=2, profile=True)
    outputs = session.run(None, {"x": np.ones((1, 3, 224, 224), np.float32)})
    session.profile()                                             # a table per node
    onnx_light.kernel_tuning.calibrate_kernel_tuning(model="model.onnx")  # tune for this machine

Modules:

- :class:`InferenceSession` (:mod:`onnx_light.inference`): ONNX Runtime's entry point
  (``get_inputs()``, ``run(None, feeds)``, ``end_profiling()``).
- :mod:`onnx_light.runtime`: the lower-level runtime (tensors, contexts, ``RuntimeSession``,
  parallel-region profiling); ``onnx_light.onnx_py._onnxpykernels.runtime`` is the same module.
- :mod:`onnx_light.reports`: the report dictionaries' table views (``to_rows()``, Jupyter HTML).
- :mod:`onnx_light.kernel_tuning`: list, propose, set, inspect, load, calibrate and remove
  kernel tuning profiles, and export, import, merge and diff cache files (the operations of the
  ``onnx-light-tune`` CLI, returning the same dictionaries as its ``--json`` output).
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
import os as _os
import warnings as _warnings
from typing import List as _List, Optional as _Optional

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
from . import kernel_tuning, reports, runtime
from .inference import InferenceSession, NodeArg
from .kernel_tuning import TuningCacheError, TuningCacheWarning, TuningConflictError
from .reports import LoadReport as _LoadReport
from .runtime import RuntimeSession, RuntimeSessionOptions

__version__: str = _onnxpykernels.__version__

__all__ = [
    "CalibrationMismatch",
    "Error",
    "InferenceSession",
    "InputError",
    "InvalidValueError",
    "IoError",
    "MemoryLimitError",
    "ModelError",
    "NodeArg",
    "NotFoundError",
    "RuntimeSession",
    "RuntimeSessionOptions",
    "TuningCacheError",
    "TuningCacheWarning",
    "TuningConflictError",
    "TypeMismatchError",
    "UnsupportedError",
    "autoload_report",
    "kernel_tuning",
    "parse_model",
    "reports",
    "runtime",
]


def parse_model(text: "str | bytes") -> "onnx.ModelProto":  # type: ignore[name-defined]  # noqa: F821
    """Parses ONNX text syntax into an ``onnx.ModelProto`` (see :mod:`onnx_light.onnx_lib.parser`)."""
    from .onnx_lib.parser import parse_model as parse  # imports onnx only when used

    return parse(text)


def __dir__() -> _List[str]:
    return sorted(__all__ + ["__version__"])


def _load_default_cache() -> "_Optional[_LoadReport]":
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
        with _warnings.catch_warnings():  # said once, below, with the autoload's wording
            _warnings.simplefilter("ignore", TuningCacheWarning)
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
autoload_report: _Optional[_LoadReport] = _load_default_cache()
