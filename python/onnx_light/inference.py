"""``InferenceSession``: ONNX Runtime's entry point, on onnx_light's runtime.

Example::

    import numpy as np
    import onnx_light

    session = onnx_light.InferenceSession("model.onnx", threads=2)
    print(session.get_inputs())          # [NodeArg(name='x', type='tensor(float)', shape=['N', 3])]
    (y,) = session.run(None, {"x": np.ones((4, 3), np.float32)})

``run(output_names, input_feed)`` checks the feed before the runtime sees it: an unknown name
gets the closest input's name as a suggestion, a wrong dtype or shape names the input, what
the model declares and what was given (arrays are never printed). ``run_arrays`` is the
positional fast path (inputs lent without a copy). The lower-level API
(``onnx_light.runtime.RuntimeSession`` with runtime contexts) stays available.
"""
from __future__ import annotations

import difflib as _difflib
import errno as _errno
import os as _os
from collections.abc import Mapping as _Mapping
from pathlib import Path as _Path
from typing import Any, Dict, List, Optional, Sequence, Union

import numpy as _np

from .onnx_py._onnxpykernels import InputError, InvalidValueError, runtime as _runtime
from .reports import Profile

__all__ = ["InferenceSession", "NodeArg", "numpy_dtype", "run_feeds"]

# TensorProto.DataType number -> numpy dtype (string 8 and bfloat16 16 have none).
_NUMPY_DTYPES: Dict[int, Any] = {
    1: _np.float32, 2: _np.uint8, 3: _np.int8, 4: _np.uint16, 5: _np.int16, 6: _np.int32, 7: _np.int64,
    9: _np.bool_, 10: _np.float16, 11: _np.float64, 12: _np.uint32, 13: _np.uint64, 14: _np.complex64,
    15: _np.complex128,
}


def numpy_dtype(element_type: int) -> Optional[_np.dtype]:  # type: ignore[type-arg]
    """The numpy dtype of a ``TensorProto.DataType`` number, ``None`` when numpy has none."""
    found = _NUMPY_DTYPES.get(int(element_type))
    return None if found is None else _np.dtype(found)


class NodeArg:
    """A graph input or output as ONNX Runtime's ``NodeArg`` shows it.

    ``shape`` holds an ``int`` per fixed dimension, the symbol (``'N'``) of a symbolic one and
    ``None`` for an unknown one (``shape`` is ``None`` when even the rank is unknown); ``type``
    is ``'tensor(float)'``, ``'tensor(int64)'``...; ``element_type`` the ``TensorProto`` number.
    """

    __slots__ = ("name", "type", "shape", "element_type")

    def __init__(self, info: Any) -> None:
        self.name: str = info.name
        self.type: str = info.type
        self.shape: Optional[List[Union[int, str, None]]] = info.dims
        self.element_type: int = info.element_type

    def __repr__(self) -> str:
        return f"NodeArg(name={self.name!r}, type={self.type!r}, shape={self.shape!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, NodeArg) and (self.name, self.type, self.shape) == (other.name, other.type, other.shape)

    def __hash__(self) -> int:
        return hash((self.name, self.type))


def _shape_text(dims: Optional[Sequence[Union[int, str, None]]]) -> str:
    return "unknown" if dims is None else "[" + ", ".join("?" if d is None else str(d) for d in dims) + "]"


def _suggest(name: str, names: Sequence[str]) -> str:
    same_case = [n for n in names if n.lower() == name.lower()]
    close = same_case or _difflib.get_close_matches(name, names, n=1, cutoff=0.5)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _check_input(info: Any, value: Any) -> Any:
    """The value to run for input `info`: a runtime Tensor as it is, else a numpy array of the declared type."""
    if isinstance(value, _runtime.Tensor):
        return value
    want = numpy_dtype(info.element_type)
    given = value if isinstance(value, _np.ndarray) else _np.asarray(value)
    shape = tuple(given.shape)
    if want is not None and given.dtype != want:
        hint = f"; convert with .astype(np.{want.name})" if given.dtype.kind in "biufc" else ""
        raise InputError(
            f"input {info.name!r}: the model declares {info.type} (numpy {want.name}), got a {given.dtype.name} "
            f"array of shape {shape}{hint}"
        )
    dims = info.dims
    if dims is not None:
        if len(dims) != len(shape):
            raise InputError(
                f"input {info.name!r}: the model declares rank {len(dims)} {_shape_text(dims)}, got rank "
                f"{len(shape)} shape {shape}"
            )
        for axis, (d, n) in enumerate(zip(dims, shape)):
            if isinstance(d, int) and d != n:
                raise InputError(
                    f"input {info.name!r}: the model declares shape {_shape_text(dims)}, got {shape}: dimension "
                    f"{axis} is {n}, the model fixes it at {d}"
                )
    return given


def run_feeds(session: Any, output_names: Optional[Sequence[str]], input_feed: Any) -> List[Any]:
    """``run(output_names, input_feed)`` for a ``RuntimeSession``: checks the feed, runs, selects the outputs."""
    inputs = session.inputs
    outputs = session.outputs
    input_names = [i.name for i in inputs]
    output_index = {o.name: k for k, o in enumerate(outputs)}
    if not isinstance(input_feed, _Mapping):
        raise TypeError(f"input_feed must be a dict of input name -> numpy array, not {type(input_feed).__name__}")
    for name in input_feed:
        if not isinstance(name, str):
            raise TypeError(f"input_feed keys must be input names (str), not {type(name).__name__}")
        if name not in input_names:
            raise InputError(
                f"input_feed: the model has no input {name!r}{_suggest(name, input_names)}; its inputs: "
                f"{', '.join(input_names) or 'none'}"
            )
    missing = [i for i in inputs if i.name not in input_feed]
    if missing:
        raise InputError(
            "input_feed: missing "
            + ", ".join(f"{i.name!r} ({i.type}, shape {_shape_text(i.dims)})" for i in missing)
        )
    if output_names is None:
        selected = list(range(len(outputs)))
    else:
        if isinstance(output_names, str):
            raise TypeError(f"output_names must be a list of names or None, not a str (did you mean [{output_names!r}]?)")
        selected = []
        for name in output_names:
            if name not in output_index:
                raise InputError(
                    f"output_names: the model has no output {name!r}{_suggest(str(name), list(output_index))}; "
                    f"its outputs: {', '.join(output_index)}"
                )
            selected.append(output_index[name])
    values = [_check_input(info, input_feed[info.name]) for info in inputs]
    results = session.run_arrays(values)
    return [results[k] for k in selected]


def _model_argument(model: Any, from_text: bool) -> Any:
    if from_text:
        if not isinstance(model, str):
            raise TypeError(f"from_text=True needs the model's ONNX text as a str, not {type(model).__name__}")
        from .onnx_lib.parser import parse_model  # noqa: PLC0415  (imports onnx only when needed)

        return parse_model(model)
    if isinstance(model, str):
        if _os.path.isfile(model):
            return _Path(model)
        hint = (
            "; it looks like ONNX text syntax: pass from_text=True or onnx_light.parse_model(text)"
            if "{" in model
            else ""
        )
        raise FileNotFoundError(_errno.ENOENT, f"no such model file{hint}", model[:200])
    if isinstance(model, (bytes, bytearray, memoryview, _os.PathLike)) or hasattr(model, "SerializeToString"):
        return model
    raise TypeError(
        "InferenceSession needs a model path (str or os.PathLike), its serialized bytes or an onnx.ModelProto, "
        f"not {type(model).__name__}"
    )


class InferenceSession:
    """Runs one ONNX model, with ONNX Runtime's surface where it fits.

    Args:
        path_or_bytes: A path (``str`` or ``os.PathLike``) to a ``.onnx`` file, the model's
            serialized bytes, or an ``onnx.ModelProto``. A ``str`` is always a path; ONNX text
            syntax needs ``from_text=True`` (or ``onnx_light.parse_model``).
        sess_options: A :class:`onnx_light.runtime.RuntimeSessionOptions` (optional; then the
            four keyword options below are set on it instead).
        providers: Accepted for ONNX Runtime code: ``None`` or a list naming
            ``'CPUExecutionProvider'`` (onnx_light runs on the CPU only).
        threads: Intra-op threads (``None``: one per physical core; ``1``: serial).
        optimization: Graph optimization: ``'none'``, ``'basic'`` or ``'all'`` (default).
        profile: Record per-node times (:meth:`profile`, :meth:`end_profiling`).
        counters: With ``profile``: per-node event counters (task clock, context switches, page
            faults; cycles, instructions and LLC misses where the machine has a PMU), in each
            profile row's ``counters``; :attr:`Profile.counters` says which the system refused and why.
        max_memory_bytes: Tensor memory limit of the session (``None``: three quarters of RAM).
        from_text: ``path_or_bytes`` is ONNX text syntax.

    Raises:
        FileNotFoundError: a ``str`` that names no file.
        onnx_light.ModelError: a model that is not valid ONNX.
        onnx_light.UnsupportedError: nodes the runtime cannot run (all listed).
    """

    def __init__(
        self,
        path_or_bytes: Any,
        sess_options: Optional[Any] = None,
        providers: Optional[Sequence[Any]] = None,
        *,
        threads: Optional[int] = None,
        optimization: Optional[str] = None,
        profile: bool = False,
        counters: bool = False,
        max_memory_bytes: Optional[int] = None,
        from_text: bool = False,
    ) -> None:
        if providers is not None:
            names = [p[0] if isinstance(p, tuple) else p for p in providers]
            if "CPUExecutionProvider" not in names:
                raise InvalidValueError(
                    f"providers={names!r}: onnx_light runs on the CPU only; pass None or ['CPUExecutionProvider']"
                )
        model = _model_argument(path_or_bytes, from_text)
        if sess_options is None:
            options = _runtime.RuntimeSessionOptions()
        elif isinstance(sess_options, _runtime.RuntimeSessionOptions):
            given = [n for n, v in (("threads", threads), ("optimization", optimization),
                                    ("max_memory_bytes", max_memory_bytes)) if v is not None]
            if profile:
                given.append("profile")
            if counters:
                given.append("counters")
            if given:
                raise InvalidValueError(
                    f"give {', '.join(given)} on sess_options or as arguments, not both (sess_options is not changed)"
                )
            options = sess_options
        else:
            raise TypeError(
                f"sess_options must be an onnx_light.runtime.RuntimeSessionOptions, not {type(sess_options).__name__}"
            )
        if threads is not None:
            if isinstance(threads, bool) or not isinstance(threads, int):
                raise TypeError(f"threads must be an int, not {type(threads).__name__}")
            options.parameters = _runtime.RuntimeParameters(threads)
        if optimization is not None:
            options.optimization = optimization
        if counters and not (profile or options.profile):
            raise InvalidValueError("counters=True needs profile=True: counters are part of the profile")
        if profile:
            options.profile = True
        if counters:
            options.profile_counters = True
        if max_memory_bytes is not None:
            options.max_memory_bytes = max_memory_bytes
        self._session = _runtime.RuntimeSession(model, options)
        self._inputs = [NodeArg(i) for i in self._session.inputs]
        self._outputs = [NodeArg(o) for o in self._session.outputs]

    @property
    def session(self) -> Any:
        """The underlying :class:`onnx_light.runtime.RuntimeSession`."""
        return self._session

    @property
    def threads(self) -> int:
        """The threads the session runs on."""
        return int(self._session.threads)

    @property
    def thread_pool_id(self) -> int:
        """The thread pool the session runs on: sessions with the same threads, spin and placement
        share one (see ``onnx_light.runtime.live_thread_pools()``)."""
        return int(self._session.thread_pool_id)

    def get_inputs(self) -> List[NodeArg]:
        """The graph inputs (initializers excluded), in order: ``[NodeArg(name='x', type='tensor(float)', shape=['N', 3])]``."""
        return list(self._inputs)

    def get_outputs(self) -> List[NodeArg]:
        """The graph outputs, in order."""
        return list(self._outputs)

    def get_providers(self) -> List[str]:
        """``['CPUExecutionProvider']``, for code written for ONNX Runtime."""
        return ["CPUExecutionProvider"]

    def run(self, output_names: Optional[Sequence[str]], input_feed: Dict[str, Any], run_options: Any = None) -> List[Any]:
        """Runs the model: ``output_names`` (``None``: all) from ``{input name: numpy array}``.

        Returns a list of numpy arrays in the order of ``output_names``:
        ``(y,) = session.run(["y"], {"x": x})``, ``outputs = session.run(None, {"x": x})``. The GIL is released while
        the model runs. ``run_options`` is accepted for ONNX Runtime code and must be ``None``.

        Raises:
            onnx_light.InputError: an unknown input or output name (with a suggestion), a missing
                input, or a dtype/shape that does not fit what the model declares (a ``ValueError``).
        """
        if run_options is not None:
            raise InvalidValueError("run_options is not supported by onnx_light; pass None")
        return run_feeds(self._session, output_names, input_feed)

    def run_arrays(self, inputs: Sequence[Any], outputs: Optional[Sequence[Any]] = None) -> List[Any]:
        """The positional fast path: see :meth:`onnx_light.runtime.RuntimeSession.run_arrays`."""
        return list(self._session.run_arrays(list(inputs), outputs))

    def profile(self) -> Profile:
        """What profiling recorded since creation or :meth:`reset_profile`: a :class:`~onnx_light.reports.Profile`.

        One row per node (``to_rows()``; ``to_rows('op_types')`` per op type), ``to_trace(path)``
        writes the Chrome trace. Empty unless the session was created with ``profile=True``::

            session = InferenceSession("model.onnx", profile=True)
            session.run(None, feeds)
            session.profile()                       # a table; .to_dataframe() with pandas
            session.profile().to_trace("trace.json")
        """
        return Profile(self._session.profile(), self._session.write_trace)

    def reset_profile(self) -> None:
        """Forgets what profiling recorded (e.g. after warm-up runs)."""
        self._session.reset_profile()

    def end_profiling(self, path: Optional[Any] = None) -> str:
        """As ONNX Runtime's: writes the Chrome trace (default name with date and time), returns its path."""
        return str(self._session.end_profiling(path))

    def optimization_report(self) -> Dict[str, Any]:
        """The graph optimizer's report: level, node counts, per transform what it did."""
        return dict(self._session.optimization_report())

    def __repr__(self) -> str:
        return (
            f"InferenceSession(inputs={self._inputs!r}, outputs={self._outputs!r}, threads={self.threads})"
        )
