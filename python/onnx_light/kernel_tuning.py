"""Inspect, change, load and calibrate kernel tuning from Python.

Every function here runs the same ``libtune`` operation as the matching ``onnx-light-tune``
verb and returns the same dictionary that verb prints with ``--json``:

=================================  ===========================
Python                             CLI
=================================  ===========================
``kernel_tuning_parameters``       ``list --json``
``propose_kernel_tuning_updates``  ``propose --json``
``set_kernel_tuning_parameters``   ``set --json``
``inspect_kernel_tuning_cache``    ``inspect --json``
``load_kernel_tuning_cache``       ``load --json``
``calibrate_kernel_tuning``        ``calibrate --json``
``remove_kernel_tuning_cache``     ``remove --yes --json``
``export_kernel_tuning_cache``     ``export -o FILE --json``
``import_kernel_tuning_cache``     ``import FILE... --json``
``merge_kernel_tuning_caches``     ``merge FILE... -o OUT --json``
``diff_kernel_tuning_caches``      ``diff A B --json``
=================================  ===========================

Keys: a kernel (ONNX op type such as ``"Abs"``) plus an element type (a
``TensorProto.DataType`` number such as ``1``, or a name such as ``"float"``) name one
tuning key; the implementation defaults to the one this host's runtime dispatches to.

``path`` is the cache file; ``None`` (or ``""``) means :func:`default_kernel_tuning_cache_path`.
``num_threads`` is the session thread count the values are for; ``None`` or ``0`` means one
per physical core, as a session with default ``RuntimeParameters`` runs.

Errors: an unknown kernel, parameter or element type raises ``KeyError``
(``onnx_light.NotFoundError``); a value of the wrong type ``TypeError``
(``onnx_light.TypeMismatchError``); a value breaking its rule ``ValueError``
(``onnx_light.InvalidValueError``).

A cache that cannot be parsed, read or written: the writing functions (``set_...``,
``calibrate_...`` with ``save=True``, ``remove_...`` with filters) raise
:class:`TuningCacheError` (an ``onnx_light.IoError``, so an ``OSError``) naming the file and the
fix, with the whole report in its ``report`` attribute; the cache file is never overwritten.
The read-only functions return their report and warn (:class:`TuningCacheWarning`).

Results are dictionaries (:mod:`onnx_light.reports`): the same keys and ``pprint`` output as
``--json``, plus ``to_rows()``, ``to_dataframe()`` and a table in Jupyter.
"""
from __future__ import annotations

import operator as _operator
import os as _os
import warnings as _warnings
from collections.abc import Iterable, Mapping
from pathlib import Path as _Path
from typing import Any, Dict, List, Optional, Union

import numpy as _np

from .onnx_py._onnxpykernels import InvalidValueError, IoError, NotFoundError, _tuning
from .onnx_py._onnxpykernels import runtime as _runtime
from .reports import (
    CalibrationReport,
    DiffReport,
    ExportReport,
    ImportReport,
    InspectionReport,
    LoadReport,
    MergeReport,
    ModelCalibrationReport,
    ParametersReport,
    ProposalReport,
    RemovalReport,
    UpdateReport,
)

__all__ = [
    "default_kernel_tuning_cache_path",
    "kernel_tuning_parameters",
    "propose_kernel_tuning_updates",
    "set_kernel_tuning_parameters",
    "inspect_kernel_tuning_cache",
    "load_kernel_tuning_cache",
    "calibrate_kernel_tuning",
    "remove_kernel_tuning_cache",
    "export_kernel_tuning_cache",
    "import_kernel_tuning_cache",
    "merge_kernel_tuning_caches",
    "diff_kernel_tuning_caches",
    "DEFAULT_CALIBRATION_DURATION_MS",
    "DEFAULT_CALIBRATION_MEMORY_BYTES",
    "DEFAULT_MODEL_CALIBRATION_DURATION_MS",
    "HOST_MATCHES",
    "TuningCacheError",
    "TuningCacheWarning",
    "TuningConflictError",
]


def __dir__() -> List[str]:
    return sorted(__all__)


class TuningCacheWarning(UserWarning):
    """A tuning cache could not be read (malformed, unreadable) or holds invalid profiles."""


class TuningCacheError(IoError):
    """A writing function could not use its cache (malformed, unreadable, read-only, locked...).

    Nothing was written. ``path`` is the cache file, ``status`` the update status and
    ``report`` the operation's whole report dictionary.
    """

    def __init__(self, message: str, path: str, status: str, report: Any) -> None:
        super().__init__(message)
        self.path = path
        self.status = status
        self.report = report


class TuningConflictError(InvalidValueError):
    """An import or merge with ``on_conflict="fail"`` met profiles of the same key, host and
    thread count with other values, and wrote nothing.

    ``conflicts`` lists them (each with both sides' values and provenance), ``report`` is the
    operation's whole report dictionary.
    """

    def __init__(self, message: str, report: Any) -> None:
        super().__init__(message)
        self.report = report
        self.conflicts = report.get("conflicts", [])


def _raise_conflicts(report: Any, what: str) -> None:
    if report.get("status") == "conflict":
        conflicts = report.get("conflicts", [])
        first = conflicts[0] if conflicts else {}
        raise TuningConflictError(
            f"{what}: nothing was written: {len(conflicts)} conflict(s) (same key, host and threads, other values), "
            f"e.g. {first.get('kernel')} at {first.get('effective_threads')} threads: "
            f"{first.get('existing', {}).get('values')} in {first.get('existing', {}).get('source')} vs "
            f"{first.get('incoming', {}).get('values')} in {first.get('incoming', {}).get('source')}; "
            "pass on_conflict='keep', 'replace' or 'newest'",
            report,
        )


# Update statuses that mean nothing was written, and what to do about each from Python.
_CACHE_FIXES = {
    "malformed": "inspect_kernel_tuning_cache({path!r}) shows what was read, remove_kernel_tuning_cache({path!r}) "
    "deletes the file so that the next write starts a new one",
    "unreadable": "check the file's permissions, or delete it with remove_kernel_tuning_cache({path!r})",
    "read_only": "check the permissions of the file and its directory, or pass another path=",
    "write_failed": "check the free space and permissions of the cache's directory",
    "lock_timeout": "another process holds the cache's lock; retry when it is done",
}


def _cache_problem(status: Any, path: Any, diagnostics: Any) -> Optional[str]:
    if status not in _CACHE_FIXES:
        return None
    messages = [d.get("message", "") for d in diagnostics or [] if isinstance(d, dict) and d.get("message")]
    what = "; ".join(messages) if messages else f"the kernel tuning cache {path} is {status}"
    return f"{what}. From Python: " + _CACHE_FIXES[status].format(path=path)


def _raise_unwritable(report: Any, status: Any, path: Any, diagnostics: Any, what: str) -> None:
    problem = _cache_problem(status, path, diagnostics)
    if problem is not None:
        raise TuningCacheError(f"{what}: nothing was written: {problem}", str(path), str(status), report)


def _warn_unreadable(status: Any, path: Any, diagnostics: Any, what: str) -> None:
    if status in ("malformed", "unreadable"):
        problem = _cache_problem(status, path, diagnostics)
        _warnings.warn(f"{what}: {problem}", TuningCacheWarning, stacklevel=3)

#: Time budget of :func:`calibrate_kernel_tuning` for the whole call, in milliseconds.
DEFAULT_CALIBRATION_DURATION_MS: int = _tuning.DEFAULT_CALIBRATION_DURATION_MS
#: Memory budget of one calibration case, in bytes.
DEFAULT_CALIBRATION_MEMORY_BYTES: int = _tuning.DEFAULT_CALIBRATION_MEMORY_BYTES
#: Time budget of :func:`calibrate_kernel_tuning` with ``model=`` (whole runs of a model per decision).
DEFAULT_MODEL_CALIBRATION_DURATION_MS: int = _tuning.DEFAULT_MODEL_CALIBRATION_DURATION_MS

PathLike = Union[str, "_os.PathLike[str]"]
ElementType = Union[int, str]

# ---- argument normalisation ------------------------------------------------------------------


def _type_name(value: Any) -> str:
    return type(value).__name__


def _integer(name: str, value: Any) -> int:
    """An int from an int or anything with __index__ (numpy integers), never from bool or float."""
    if isinstance(value, (bool, _np.bool_)):
        raise TypeError(f"{name} must be an int, not bool")
    try:
        return _operator.index(value)
    except TypeError:
        raise TypeError(f"{name} must be an int, not {_type_name(value)}") from None


def _optional_integer(name: str, value: Any) -> Optional[int]:
    return None if value is None else _integer(name, value)


def _boolean(name: str, value: Any) -> bool:
    if isinstance(value, (bool, _np.bool_)):
        return bool(value)
    raise TypeError(f"{name} must be a bool, not {_type_name(value)}")


def _text(name: str, value: Any) -> str:
    """An optional string argument: None means "" (the operation's default)."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    raise TypeError(f"{name} must be a str or None, not {_type_name(value)}")


def _paths(name: str, value: Any) -> List[str]:
    """One path (str or os.PathLike) or an iterable of them, as strings."""
    if isinstance(value, (str, _os.PathLike)):
        value = [value]
    if not isinstance(value, Iterable):
        raise TypeError(f"{name} must be a path or a list of paths, not {_type_name(value)}")
    paths: List[str] = []
    for item in value:
        if not isinstance(item, (str, _os.PathLike)):
            raise TypeError(f"{name} must hold paths (str or os.PathLike), not {_type_name(item)}")
        paths.append(_path(item))
    if not paths or any(not p for p in paths):
        raise ValueError(f"{name} must name at least one cache file, and no empty path")
    return paths


def _required_path(name: str, value: Any) -> str:
    if value is None:
        raise TypeError(f"{name} must be a path (str or os.PathLike), not None")
    path = _path(value)
    if not path:
        raise ValueError(f"{name} must not be empty")
    return path


def _path(value: Any) -> str:
    """None, "" (the default cache), a str or an os.PathLike."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, _os.PathLike):
        return _os.fsdecode(_os.fspath(value))
    raise TypeError(f"path must be a str, an os.PathLike or None, not {_type_name(value)}")


def _element_type(name: str, value: Any) -> int:
    """A TensorProto.DataType number from an int (TensorProto.FLOAT) or a name ('float')."""
    if isinstance(value, str):
        return _tuning.element_type_number(value)
    number = _integer(name, value)
    if not 0 <= number < 2**31:
        raise NotFoundError(f"unknown element type {number} (use a TensorProto.DataType number such as 1 for float)")
    return number


def _many(name: str, value: Any) -> List[Any]:
    """One item (a str or a scalar) or an iterable of them, as a list."""
    if value is None:
        return []
    if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
        return [value]
    return list(value)


def _kernels(kernel: Any, kernels: Any, one: str = "kernel", many: str = "kernels") -> list[str]:
    if kernel is not None and kernels is not None:
        raise TypeError(f"give {one} or {many}, not both")
    items = _many(one if kernel is not None else many, kernel if kernel is not None else kernels)
    for item in items:
        if not isinstance(item, str):
            raise TypeError(f"kernel names must be str (ONNX op types such as 'Abs'), not {_type_name(item)}")
    return items


def _element_types(element_type: Any, element_types: Any, one: str = "element_type",
                   many: str = "element_types") -> list[int]:
    if element_type is not None and element_types is not None:
        raise TypeError(f"give {one} or {many}, not both")
    name = one if element_type is not None else many
    items = _many(name, element_type if element_type is not None else element_types)
    return [_element_type(name, item) for item in items]


def _selection(kernel: Any, kernels: Any, element_type: Any, element_types: Any, implementation: Any, library: Any,
               device: Any) -> Dict[str, Any]:
    return dict(
        kernels=_kernels(kernel, kernels),
        element_types=_element_types(element_type, element_types),
        implementation=_text("implementation", implementation),
        library=_text("library", library),
        device=_optional_integer("device", device),
    )


def _value_text(name: str, value: Any) -> str:
    """A comparison candidate as the text the schema's parser reads."""
    if isinstance(value, (bool, _np.bool_)):
        return "true" if value else "false"
    if isinstance(value, str):
        return value
    if isinstance(value, (float, _np.floating)):
        return repr(float(value))
    try:
        return str(_operator.index(value))
    except TypeError:
        raise TypeError(f"parameters[{name!r}] values must be int, float, bool or str, not {_type_name(value)}") from None


def _comparison(parameters: Any) -> dict[str, list[str]]:
    if parameters is None:
        return {}
    if not isinstance(parameters, Mapping):
        raise TypeError(f"parameters must be a dict of name -> list of values, not {_type_name(parameters)}")
    result = {}
    for name, candidates in parameters.items():
        if not isinstance(name, str):
            raise TypeError(f"parameters keys must be parameter names (str), not {_type_name(name)}")
        if isinstance(candidates, (str, bytes)) or not isinstance(candidates, Iterable):
            raise TypeError(f"parameters[{name!r}] must be a list of values to compare, not {_type_name(candidates)}")
        result[name] = [_value_text(name, candidate) for candidate in candidates]
    return result


# ---- operations ----------------------------------------------------------------------------


def default_kernel_tuning_cache_path() -> str:
    """Returns the default cache file path.

    ``$ONNX_LIGHT_TUNING_CACHE``, else ``$XDG_CACHE_HOME/onnx-light/kernel_tuning.cache``,
    else ``$HOME/.cache/onnx-light/kernel_tuning.cache``. The file need not exist.

    Raises:
        KeyError: none of the three variables is set.

    Example::

        default_kernel_tuning_cache_path()   # '/home/me/.cache/onnx-light/kernel_tuning.cache'
    """
    return _tuning.default_cache_path()


def kernel_tuning_parameters(
    kernel: Union[str, Iterable[str], None] = None,
    library: Optional[str] = None,
    implementation: Optional[str] = None,
    element_type: Union[ElementType, Iterable[ElementType], None] = None,
    path: Optional[PathLike] = None,
    num_threads: Optional[int] = None,
    device: Optional[int] = None,
    *,
    kernels: Optional[Iterable[str]] = None,
    element_types: Optional[Iterable[ElementType]] = None,
    spin: Union[str, int, None] = None,
) -> ParametersReport:
    """Lists the tuning parameters of the selected keys: schema, defaults, cached and active values.

    Reads only; nothing is written or published.

    Args:
        kernel: An ONNX op type (``"Abs"``) or several; ``None`` for every kernel.
            ``kernels=`` is the same filter under its plural name.
        library: Only keys of this library (``None``: any).
        implementation: ``None`` for the implementation this host dispatches to, ``"all"``
            for every one, else that implementation (``"portable"``, ``"avx2"``...).
        element_type: A ``TensorProto.DataType`` number or name, or several; ``None`` for
            every type. ``element_types=`` is the same filter under its plural name.
        path: The cache whose profiles fill ``cached_values`` (``None``: the default cache).
        num_threads: The session thread count the values are for (``None``/``0``: one per
            physical core).
        device: Only keys of this device (``-1`` is the CPU; ``None``: any).
        spin: The spin policy of the sessions the values are for (``None``: the default,
            ``"short"``). Profiles are kept apart by whether idle workers spin: ``"none"``
            (they park at once; every parallel region pays a wake-up, which moves thresholds)
            against every other policy.

    Returns:
        ``{cache_path, cache_status, diagnostics, kernels}``; each entry of ``kernels`` has
        the key fields (``library, kernel, implementation, element_type, device,
        device_name, tuning_abi``), ``parameter_names``, ``defaults``, ``calibratable``,
        ``cached_values`` (``None`` without a local profile), ``matched_by`` (how that profile
        applies here: ``exact``, ``model``, ``microarchitecture`` or ``isa``; ``None`` without
        one), ``shadows`` (``[{layer, index, matched_by}]``: the other loaded profiles of the key
        and threads it is in force over), ``active_values`` and ``active_source``
        (``"published_profile"`` or ``"portable_default"``).
        ``kernel_tuning_parameters(kernel="Abs", element_type=1)`` returns one entry.

    Raises:
        KeyError: an unknown kernel, or no variant passes the filters.
        TypeError: an argument of the wrong type.
        ValueError: ``num_threads`` out of range.

    Example::

        report = kernel_tuning_parameters(kernel="Abs", element_type="float")
        report["kernels"][0]["active_values"]   # {'parallel.minimum_elements': 32768, ...}
        kernel_tuning_parameters().to_rows()     # every key, flat rows for pandas
    """
    report = _tuning.kernel_tuning_parameters(
        **_selection(kernel, kernels, element_type, element_types, implementation, library, device),
        path=_path(path),
        num_threads=_optional_integer("num_threads", num_threads),
        idle_spin=_idle_spin(spin),
    )
    _warn_unreadable(report.get("cache_status"), report.get("cache_path"), report.get("diagnostics"),
                     "kernel_tuning_parameters")
    return ParametersReport(report)


def propose_kernel_tuning_updates(
    kernels: Union[str, Iterable[str], None] = None,
    element_types: Union[ElementType, Iterable[ElementType], None] = None,
    path: Optional[PathLike] = None,
    num_threads: Optional[int] = None,
    *,
    kernel: Optional[str] = None,
    element_type: Optional[ElementType] = None,
    implementation: Optional[str] = None,
    library: Optional[str] = None,
    device: Optional[int] = None,
    spin: Union[str, int, None] = None,
) -> ProposalReport:
    """Proposes which keys to calibrate: the selected keys without a local cached profile.

    Read-only: compares the selected keys with the cache for this host and thread count.

    Args:
        kernels: ONNX op types (or one); ``None`` or ``[]`` for every kernel.
        element_types: ``TensorProto.DataType`` numbers or names (or one); ``None`` for every type.
        path: The cache to compare with (``None``: the default cache).
        num_threads: The session thread count (``None``/``0``: one per physical core).
        kernel, element_type: Singular spellings of the two filters.
        implementation, library, device, spin: As in :func:`kernel_tuning_parameters`.

    Returns:
        ``{cache_path, cache_status, selected, covered, missing, calibratable, unsupported,
        diagnostics}``; the key lists hold entries shaped like
        ``kernel_tuning_parameters()["kernels"]``. ``calibratable`` are the missing keys with
        a calibration routine, ``unsupported`` those without one.

    Raises:
        KeyError, TypeError, ValueError: as :func:`kernel_tuning_parameters`.

    Example::

        proposal = propose_kernel_tuning_updates(kernels=["Abs", "MatMul"])
        [k["kernel"] for k in proposal["calibratable"]]   # the keys without a profile yet
    """
    report = _tuning.propose_kernel_tuning_updates(
        kernels=_kernels(kernel, kernels),
        element_types=_element_types(element_type, element_types),
        implementation=_text("implementation", implementation),
        library=_text("library", library),
        device=_optional_integer("device", device),
        path=_path(path),
        num_threads=_optional_integer("num_threads", num_threads),
        idle_spin=_idle_spin(spin),
    )
    _warn_unreadable(report.get("cache_status"), report.get("cache_path"), report.get("diagnostics"),
                     "propose_kernel_tuning_updates")
    return ProposalReport(report)


def set_kernel_tuning_parameters(
    kernel: str,
    element_type: ElementType = 1,
    values: Optional[Mapping[str, Union[int, float, bool, str]]] = None,
    path: Optional[PathLike] = None,
    num_threads: Optional[int] = None,
    load: bool = True,
    *,
    implementation: Optional[str] = None,
    library: Optional[str] = None,
    device: Optional[int] = None,
    prune_stale: bool = False,
    spin: Union[str, int, None] = None,
    match: str = "exact",
    as_host: Optional[PathLike] = None,
) -> UpdateReport:
    """Validates and writes one profile for this host, and by default publishes the cache.

    ``values`` may be partial: omitted names keep the matching cached profile's values (user
    cache, else system cache), else the portable defaults. Every value (name, type, rule) is
    checked before anything is written; the write is locked and atomic.

    ``match`` writes a class profile instead of one for this exact machine: ``"model"`` (vendor,
    family and model: any stepping, cache size or core count), ``"microarchitecture"`` or
    ``"isa"`` (machines with every ISA feature of this one), always at the thread count and spin
    class given. The most specific profile that applies is in force (exact > model >
    microarchitecture > isa; the user cache beats the system cache at equal specificity):
    :func:`inspect_kernel_tuning_cache` reports ``matched_by``, ``in_force`` and ``shadowed_by``.

    Args:
        kernel: The ONNX op type (``"Abs"``).
        element_type: A ``TensorProto.DataType`` number or name (default ``1``, float).
        values: ``{parameter name: value}``; values are ``int``, ``float``, ``bool`` or
            ``str`` (an ``int`` is accepted for a ``double`` parameter).
        path: The cache to write (``None``: the default cache).
        num_threads: The session thread count the profile is for (``None``/``0``: one per
            physical core). Sessions use it only when they run on that many threads.
        load: Publish the cache into this process after writing (default), so sessions created
            afterwards use the new values.
        implementation, library, device: The key's other fields (default: the dispatched
            implementation, ``"onnx_light"``, the CPU).
        prune_stale: Also drop profiles of outdated tuning ABIs.
        spin: The spin policy of the sessions the profile is for (``None``: the default,
            ``"short"``); only whether idle workers spin is recorded (``host.idle_spin``), as in
            :func:`kernel_tuning_parameters`.
        match: The class the profile matches by: ``"exact"`` (default), ``"model"``,
            ``"microarchitecture"`` or ``"isa"`` (see ``HOST_MATCHES``).
        as_host: A host descriptor file (``onnx-light-tune host --json``): write the profile for
            that host (at its ``effective_threads`` by default) instead of this machine.

    Returns:
        An :class:`~onnx_light.reports.UpdateReport`: ``{status, path, values, updated, preserved,
        pruned, diagnostics, load}`` with ``status`` ``"updated"``; ``values`` the complete set written; ``load`` the :func:`load_kernel_tuning_cache` report
        (``None`` when ``load=False`` or nothing was written).

    Raises:
        KeyError: an unknown kernel, element type or parameter name.
        TypeError: a value of the wrong type, or ``values`` missing or not a mapping.
        ValueError: a value breaking its rule (e.g. out of range), or an unknown ``match``;
            nothing is written then.
        TuningCacheError: the cache is malformed, unreadable, read-only or locked; nothing is
            written, the message names the file and the fix.

    Example::

        report = set_kernel_tuning_parameters("Abs", "float", {"parallel.minimum_elements": 65536})
        report["values"]          # {'parallel.minimum_elements': 65536}
        set_kernel_tuning_parameters("Abs", values={"parallel.minimum_elements": 32768}, match="model")
    """
    if not isinstance(kernel, str):
        raise TypeError(f"kernel must be a str (an ONNX op type such as 'Abs'), not {_type_name(kernel)}")
    if values is None:
        raise TypeError("set_kernel_tuning_parameters() needs values: a dict of parameter name -> value")
    if not isinstance(values, Mapping):
        raise TypeError(f"values must be a dict of parameter name -> value, not {_type_name(values)}")
    report = _tuning.set_kernel_tuning_parameters(
        kernel=kernel,
        element_type=_element_type("element_type", element_type),
        values=dict(values),
        path=_path(path),
        num_threads=_optional_integer("num_threads", num_threads),
        idle_spin=_idle_spin(spin),
        load=_boolean("load", load),
        implementation=_text("implementation", implementation),
        library=_text("library", library),
        device=_optional_integer("device", device),
        prune_stale=_boolean("prune_stale", prune_stale),
        match=_match("match", match),
        as_host=_path(as_host),
    )
    _raise_unwritable(report, report.get("status"), report.get("path"), report.get("diagnostics"),
                      "set_kernel_tuning_parameters")
    return UpdateReport(report)


def inspect_kernel_tuning_cache(
    path: Optional[PathLike] = None,
    *,
    kernel: Union[str, Iterable[str], None] = None,
    kernels: Optional[Iterable[str]] = None,
    element_type: Union[ElementType, Iterable[ElementType], None] = None,
    element_types: Optional[Iterable[ElementType]] = None,
    implementation: Optional[str] = None,
    library: Optional[str] = None,
    device: Optional[int] = None,
    num_threads: Optional[int] = None,
    user_only: bool = False,
) -> InspectionReport:
    """Reads every profile of a cache (and of the system cache) without changing anything.

    Args:
        path: The cache file (``None``: the default cache).
        kernel/kernels, element_type/element_types, implementation, library, device: Literal
            filters on the profiles' keys (``None``: no filter).
        num_threads: Only profiles written for this thread count; ``local`` is judged against
            it (``None``: one per physical core).
        user_only: Leave the system cache out.

    Returns:
        ``{status, path, diagnostics, profiles, system_cache}``; ``status`` is ``"loaded"``,
        ``"not_found"``, ``"unreadable"`` or ``"malformed"``. Each profile has the key fields,
        ``match`` (the class the profile's host matches by: ``exact``, ``model``,
        ``microarchitecture``, ``isa``) and every host field, ``values``, ``local``,
        ``classification`` (``loaded``, ``stale``, ``incompatible``, ``invalid``),
        ``matched_by`` (how a loaded profile applies here; ``None`` otherwise), ``in_force``
        (the loaded profile sessions of its key, threads and spin class use), ``layer``,
        ``index``, ``shadowed`` and ``shadowed_by`` (``{layer, index, matched_by}`` of the
        profile in force instead: a more specific one, or the user cache's at equal
        specificity; ``None`` when in force), ``shadows`` (for a profile in force, the loaded
        profiles it is in force over, each ``{layer, index, matched_by}``) and ``provenance`` (``source``, ``written``,
        ``tool_version``, ``hostname``). ``system_cache`` is
        ``{path, status, profiles}`` (a count) or ``None`` without a system layer.

    Raises:
        TypeError, ValueError: bad arguments; KeyError (NotFoundError): a kernel that is neither
        registered nor cached.

    Example::

        inspect_kernel_tuning_cache()                    # a table in Jupyter
        [p["values"] for p in inspect_kernel_tuning_cache(kernel="Abs")["profiles"]]
    """
    report = _tuning.inspect_kernel_tuning_cache(
        path=_path(path),
        **_selection(kernel, kernels, element_type, element_types, implementation, library, device),
        num_threads=_optional_integer("num_threads", num_threads),
        user_only=_boolean("user_only", user_only),
    )
    _warn_unreadable(report.get("status"), report.get("path"), report.get("diagnostics"), "inspect_kernel_tuning_cache")
    return InspectionReport(report)


def load_kernel_tuning_cache(
    path: Optional[PathLike] = None,
    *,
    kernel: Union[str, Iterable[str], None] = None,
    kernels: Optional[Iterable[str]] = None,
    element_type: Union[ElementType, Iterable[ElementType], None] = None,
    element_types: Optional[Iterable[ElementType]] = None,
    implementation: Optional[str] = None,
    library: Optional[str] = None,
    device: Optional[int] = None,
    num_threads: Optional[int] = None,
) -> LoadReport:
    """Classifies a cache and publishes its valid profiles for this machine into this process.

    Sessions created afterwards resolve their kernels' values from the published profiles
    (user cache over system cache). Importing ``onnx_light`` does this once for the default
    cache when it exists.

    Args:
        path: The cache file (``None``: the default cache).
        kernel/kernels, element_type/element_types, implementation, library, device: Only
            profiles matching these filters are considered; with a kernel or element type
            filter, ``missing`` lists the selected keys without a local loaded profile.
        num_threads: Only profiles of this thread count are published, and ``missing`` is
            about it (``None``: every thread count is published).

    Returns:
        ``{status, path, published_generation, loaded, stale, incompatible, invalid,
        missing, diagnostics}``; the class lists hold key dicts. Nothing is published when
        no layer could be read (``status`` ``"malformed"`` or ``"unreadable"``).

    Raises:
        KeyError: a kernel filter names an unknown kernel.
        TypeError, ValueError: bad arguments.

    Example::

        report = load_kernel_tuning_cache("/etc/onnx-light/kernel_tuning.cache")
        report["status"], len(report["loaded"])          # ('loaded', 12)
    """
    report = _tuning.load_kernel_tuning_cache(
        path=_path(path),
        **_selection(kernel, kernels, element_type, element_types, implementation, library, device),
        num_threads=_optional_integer("num_threads", num_threads),
    )
    _warn_unreadable(report.get("status"), report.get("path"), report.get("diagnostics"), "load_kernel_tuning_cache")
    return LoadReport(report)


def calibrate_kernel_tuning(
    kernel: Union[str, Iterable[str], None] = None,
    element_types: Union[ElementType, Iterable[ElementType], None] = None,
    maximum_duration_ms: Optional[int] = None,
    maximum_memory_bytes: int = DEFAULT_CALIBRATION_MEMORY_BYTES,
    save: bool = True,
    path: Optional[PathLike] = None,
    only_missing: bool = False,
    num_threads: Optional[int] = None,
    *,
    kernels: Optional[Iterable[str]] = None,
    element_type: Optional[ElementType] = None,
    all: bool = False,  # noqa: A002  (the CLI's --all)
    implementation: Optional[str] = None,
    library: Optional[str] = None,
    device: Optional[int] = None,
    parameters: Optional[Mapping[str, Iterable[Union[int, float, bool, str]]]] = None,
    repeat: int = 1,
    seed: Optional[int] = None,
    prune_stale: bool = False,
    force_save: bool = False,
    allow_load: bool = False,
    model: Any = None,
    inputs: Optional[Mapping[str, Any]] = None,
    dims: Optional[Mapping[str, int]] = None,
    tune_blocks: bool = True,
    spin: Union[str, int, None] = None,
    affinity: Optional[str] = None,
    cpus: Union[str, Iterable[int], None] = None,
    match: str = "exact",
) -> Union[CalibrationReport, ModelCalibrationReport]:
    """Measures where parallel execution pays off and publishes (and by default saves) the result.

    With ``model=`` (a path — a ``str`` naming a file counts as one —, an ``onnx.ModelProto``, its
    bytes or ONNX text), the keys come from
    the model's nodes instead of ``kernel``: every node's parallel/serial time is measured in
    place and each key's threshold is placed around the work of its nodes; tile parameters (GEMM
    block sizes, the depthwise CHW widths) are compared one allowed step down and up on the
    model's own nodes (``tune_blocks``); then the
    whole model runs with the values in force and the new ones interleaved, and the new values
    are saved only when the model is not slower. ``inputs`` maps input names to arrays (others
    are seeded random tensors of their declared shapes, symbolic dimensions bound by ``dims``).
    The budget defaults to ``DEFAULT_MODEL_CALIBRATION_DURATION_MS`` and covers everything. The
    result is ``onnx-light-tune calibrate --model --json``'s dictionary: ``keys`` (per key its
    ``old_values``, ``new_values``, ``changed`` and ``reasons``), ``nodes`` (the in-place
    evidence), ``end_to_end`` (``speedup`` with ``speedup_low``/``speedup_high`` and a
    ``verdict``: ``faster``, ``same``, ``slower``, ``not_measured`` or ``unchanged``), ``saved``
    and ``cache_update``.

    For each selected key: seeded inputs of doubling sizes run forced serial (the reference)
    and parallel (the candidate); every candidate output is checked against the reference
    bytes; each size is decided from interleaved serial/parallel pairs (20% trimmed mean of the
    pair ratios with Yuen's interval, more pairs while it straddles the 5% margin) and the
    crossover is chosen after consecutive wins, refined inside its bracket and confirmed by
    rounds of pairs across the sizes around it (confidence ``high`` when decided sizes pin it
    within one doubling). When the budget ends
    first, the pick follows the measurements (a default is kept only when they agree with it).
    The key is always listed in ``calibrated``; ``measurements[i]["confidence"]`` is ``high``,
    ``medium`` or ``low``. A low-confidence pick, or one from no measurement, is published but
    not saved unless ``force_save=True``. The GIL is released while measuring.

    Args:
        kernel: An ONNX op type or several (``kernels=`` is the plural spelling); give kernels
            or ``all=True``.
        element_types: ``TensorProto.DataType`` numbers or names; ``None`` means float (``1``)
            for named kernels and every type with ``all=True``, as on the CLI.
        maximum_duration_ms: Time budget for the whole call (hard limit); ``None``:
            ``DEFAULT_CALIBRATION_DURATION_MS``, or ``DEFAULT_MODEL_CALIBRATION_DURATION_MS`` with
            ``model=``.
        maximum_memory_bytes: Memory budget of one case; larger cases are not run.
        save: Merge the results into the cache (default); ``False`` publishes them in this
            process only.
        path: The cache to save to (``None``: the default cache).
        only_missing: Skip keys that already have a profile for this host (listed in ``skipped``).
        num_threads: The session thread count to calibrate for (``None``/``0``: one per
            physical core).
        all: Calibrate every calibratable key (element type, implementation, library and device
            filters still apply).
        implementation, library, device: Key filters as in :func:`kernel_tuning_parameters`.
        parameters: Comparison mode: ``{name: [baseline, candidate, ...]}`` runs the given values
            interleaved on the same cases and picks the fastest.
        repeat: Run the whole search this many times and keep the median pick.
        seed: Seed of the generated inputs (default: the library's fixed seed).
        prune_stale: Drop profiles of older tuning ABIs while saving.
        force_save: Save low-confidence (or unmeasured) results too.
        allow_load: Judge measurements taken while other processes load the CPUs as if the machine
            were idle (for machines that are always this busy). Without it such a key is low
            confidence and not saved; ``measurements[i]['contention']`` reports the load either way.
        spin, affinity, cpus: How the measured sessions' pool threads behave, as in
            ``RuntimeParameters`` (``None``: the defaults, ``'short'`` and ``'none'``). With
            ``cpus`` the thread count defaults to the number of CPUs listed. The saved profile
            does not record them.
        match: Save the results as profiles of this machine's class instead of this machine
            only: ``"model"``, ``"microarchitecture"`` or ``"isa"`` (default ``"exact"``), as
            ``set_kernel_tuning_parameters(match=...)``; with ``model=`` too.

    Returns:
        ``{calibrated, skipped, unsupported, diagnostics, published_generation, cache_update}``
        plus ``failed``, ``cache_path``, ``effective_threads``, ``elapsed_ms`` and the
        measurements, exactly as ``onnx-light-tune calibrate --json`` prints them.
        ``calibrated`` entries are key dicts with the ``values`` chosen; ``cache_update`` is
        ``None`` when ``save=False``.

    Raises:
        KeyError: an unknown kernel, element type or parameter.
        TypeError: an argument of the wrong type.
        ValueError: neither kernels nor ``all=True`` (or both), a budget out of range, or an
            unknown ``match``.
        TuningCacheError: ``save=True`` and the cache is malformed, unreadable, read-only or locked
            (nothing is written; ``error.report`` holds the calibration).

    Example::

        calibrate_kernel_tuning("Abs", maximum_duration_ms=250, save=False)["calibrated"][0]["values"]
        report = calibrate_kernel_tuning(model="model.onnx")   # the keys the model uses
        report["end_to_end"]["verdict"], report["saved"]        # ('faster', True)
    """
    policy = None
    if spin is not None or affinity is not None or cpus is not None:
        # Validated here, naming the bad value (ValueError), before any measurement.
        policy = _runtime.RuntimeParameters(
            spin="short" if spin is None else spin, affinity="none" if affinity is None else affinity, cpus=cpus
        )
    if model is not None:
        given = [
            label
            for label, value in (
                ("kernel", kernel), ("kernels", kernels), ("element_types", element_types),
                ("element_type", element_type), ("implementation", implementation), ("library", library),
                ("device", device), ("parameters", parameters),
            )
            if value is not None
        ]
        if _boolean("all", all):
            given.append("all")
        if only_missing:
            given.append("only_missing")
        if repeat != 1:
            given.append("repeat")
        if force_save:
            given.append("force_save")
        if allow_load:
            given.append("allow_load")
        if given:
            raise ValueError(
                "calibrate_kernel_tuning(model=...) takes its keys from the model's nodes; "
                f"it does not take {', '.join(given)}"
            )
        if isinstance(model, str) and _os.path.isfile(model):
            model = _Path(model)  # a file name, not ONNX text
        if inputs is not None and not isinstance(inputs, Mapping):
            raise TypeError(f"inputs must be a mapping of input names to arrays, not {type(inputs).__name__}")
        if dims is not None and not isinstance(dims, Mapping):
            raise TypeError(f"dims must be a mapping of dimension names to sizes, not {type(dims).__name__}")
        report = _tuning.calibrate_model(
            model=model,
            inputs=dict(inputs or {}),
            dims={str(k): _integer(f"dims[{k!r}]", v) for k, v in (dims or {}).items()},
            maximum_duration_ms=_integer(
                "maximum_duration_ms",
                DEFAULT_MODEL_CALIBRATION_DURATION_MS if maximum_duration_ms is None else maximum_duration_ms,
            ),
            save=_boolean("save", save),
            path=_path(path),
            num_threads=_optional_integer("num_threads", num_threads),
            tune_blocks=_boolean("tune_blocks", tune_blocks),
            seed=_seed(seed),
            prune_stale=_boolean("prune_stale", prune_stale),
            policy=policy,
            match=_match("match", match),
        )
        _raise_unsaved(report, "calibrate_kernel_tuning(model=...)")
        return ModelCalibrationReport(report)
    if inputs is not None or dims is not None:
        raise ValueError("calibrate_kernel_tuning(): inputs and dims need model=")
    if maximum_duration_ms is None:
        maximum_duration_ms = DEFAULT_CALIBRATION_DURATION_MS
    names = _kernels(kernel, kernels)
    every = _boolean("all", all)
    if every and names:
        raise ValueError("calibrate_kernel_tuning(): give kernels or all=True, not both")
    if not every and not names:
        raise ValueError("calibrate_kernel_tuning() needs kernels (e.g. 'Abs') or all=True")
    types = _element_types(element_type, element_types)
    if not types and not every:
        types = [1]
    report = _tuning.calibrate_kernel_tuning(
        kernels=names,
        element_types=types,
        all=every,
        implementation=_text("implementation", implementation),
        library=_text("library", library),
        device=_optional_integer("device", device),
        maximum_duration_ms=_integer("maximum_duration_ms", maximum_duration_ms),
        maximum_memory_bytes=_integer("maximum_memory_bytes", maximum_memory_bytes),
        save=_boolean("save", save),
        path=_path(path),
        only_missing=_boolean("only_missing", only_missing),
        num_threads=_optional_integer("num_threads", num_threads),
        parameters=_comparison(parameters),
        repeat=_integer("repeat", repeat),
        seed=_seed(seed),
        prune_stale=_boolean("prune_stale", prune_stale),
        force_save=_boolean("force_save", force_save),
        allow_load=_boolean("allow_load", allow_load),
        policy=policy,
        match=_match("match", match),
    )
    _raise_unsaved(report, "calibrate_kernel_tuning")
    return CalibrationReport(report)


def _raise_unsaved(report: Any, what: str) -> None:
    update = report.get("cache_update")
    if isinstance(update, dict):
        done = "the results are published in this process only" if report.get("calibrated") else "nothing was measured"
        _raise_unwritable(report, update.get("status"), update.get("path", report.get("cache_path")),
                          update.get("diagnostics"), f"{what} ({done})")


#: The host classes a profile can match by, most specific first (``match=``, ``host_class=``).
HOST_MATCHES = ("exact", "model", "microarchitecture", "isa")


def _match(name: str, value: Any) -> str:
    # The library checks the name (ValueError naming the classes); only the type is checked here.
    if value is None:
        return "exact"
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str ({', '.join(HOST_MATCHES)}), not {_type_name(value)}")
    return value


def _idle_spin(spin: Any) -> bool:
    """The spin class of a spin policy: whether idle workers spin (every policy but ``"none"``)."""
    if spin is None:
        return True
    # Validated as RuntimeParameters validates it (TypeError/ValueError naming the value).
    return bool(_runtime.RuntimeParameters(spin=spin).spin_us > 0)


def _seed(seed: Any) -> Optional[int]:
    if seed is None:
        return None
    number = _integer("seed", seed)
    if not 0 <= number < 2**32:
        raise ValueError(f"seed = {number} is out of range (0 to 2**32 - 1)")
    return number


def remove_kernel_tuning_cache(
    path: Optional[PathLike] = None,
    *,
    kernel: Union[str, Iterable[str], None] = None,
    kernels: Optional[Iterable[str]] = None,
    element_type: Union[ElementType, Iterable[ElementType], None] = None,
    element_types: Optional[Iterable[ElementType]] = None,
    implementation: Optional[str] = None,
    library: Optional[str] = None,
    device: Optional[int] = None,
    num_threads: Optional[int] = None,
    classifications: Optional[Iterable[str]] = None,
    foreign: bool = False,
    hostname: Optional[str] = None,
    dry_run: bool = False,
) -> RemovalReport:
    """Removes the cache file, or only the matching profiles.

    Without filters the cache file and its lock file are deleted. With any filter the matching
    profiles are dropped with a locked update and the file is kept. The system cache is never
    touched, and nothing already published in this process changes.

    Args:
        path: The cache file (``None``: the default cache).
        kernel/kernels, element_type/element_types, implementation, library, device: Literal
            filters on the profiles' keys.
        num_threads: Only profiles written for this thread count.
        classifications: Only profiles of these classes (``"stale"``, ``"incompatible"``,
            ``"invalid"``, ``"loaded"``; any of them).
        foreign: Only profiles of other machines.
        hostname: Only profiles whose provenance records this hostname.
        dry_run: Report what would be removed; change nothing.

    Returns:
        ``{status, path, dry_run, removed_files, removed, preserved, removed_profiles,
        removed_count, preserved_count, diagnostics}``; ``status`` is ``"removed"``,
        ``"unchanged"``, ``"would_remove"`` (dry run), ``"not_found"`` or an update status
        (``"read_only"``, ``"malformed"``...). ``removed_profiles`` has one inspect-style
        object per profile; the counts are of profiles.

    Raises:
        TypeError, ValueError: bad arguments; KeyError (NotFoundError): a kernel that is neither
        registered nor cached.
        TuningCacheError: with filters, a cache that is malformed, unreadable, read-only or locked.

    Example::

        remove_kernel_tuning_cache(kernel="Abs", dry_run=True)["removed_count"]   # what would go
        remove_kernel_tuning_cache()     # the whole file (the fix for a malformed cache)
    """
    report = _tuning.remove_kernel_tuning_cache(
        path=_path(path),
        **_selection(kernel, kernels, element_type, element_types, implementation, library, device),
        num_threads=_optional_integer("num_threads", num_threads),
        classifications=[_text("classifications", c) for c in _many("classifications", classifications)],
        foreign=_boolean("foreign", foreign),
        hostname=_text("hostname", hostname),
        dry_run=_boolean("dry_run", dry_run),
    )
    _raise_unwritable(report, report.get("status"), report.get("path"), report.get("diagnostics"),
                      "remove_kernel_tuning_cache")
    return RemovalReport(report)


def export_kernel_tuning_cache(
    output: PathLike,
    path: Optional[PathLike] = None,
    *,
    kernel: Union[str, Iterable[str], None] = None,
    kernels: Optional[Iterable[str]] = None,
    element_type: Union[ElementType, Iterable[ElementType], None] = None,
    element_types: Optional[Iterable[ElementType]] = None,
    implementation: Optional[str] = None,
    library: Optional[str] = None,
    device: Optional[int] = None,
    num_threads: Optional[int] = None,
    all_hosts: bool = False,
    as_host: Optional[PathLike] = None,
    host_class: str = "exact",
) -> ExportReport:
    """Writes the selected profiles of a cache as a standalone cache file (``export -o``).

    By default the profiles of this machine, at every thread count; ``as_host`` (a file of
    ``onnx-light-tune host --json``) selects another host's, ``all_hosts=True`` every host's.
    The output is a cache file of the same format, sorted by key and host, provenance kept, and
    written like a cache (locked, atomic, never over a file that is not a cache). Profiles an
    import would refuse (unreadable, invalid values) are left out and named in ``diagnostics``.

    Args:
        output: The file to write.
        path: The cache to read (``None``: the default cache).
        kernel/kernels, element_type/element_types, implementation, library, device: Literal
            filters on the profiles' keys (``None``: any).
        num_threads: Only profiles written for this thread count (``0``: one per physical core).
        all_hosts: Every host's profiles.
        as_host: A host descriptor file: that host's profiles instead of this machine's.
        host_class: Generalise the profiles to this class (``"model"``, ``"microarchitecture"``,
            ``"isa"``; default ``"exact"``, as written): each is written as a class profile
            (``host.match``, only the class's host fields, format version 2); profiles already
            as general stay as they are.

    Returns:
        ``{status, path, output, all_hosts, host, host_class, profiles, exported_count,
        skipped_count, diagnostics}``; ``status`` is ``"exported"``; ``host`` the descriptor whose
        profiles were selected (without ``effective_threads``), ``None`` with ``all_hosts``;
        each profile has ``match``.

    Raises:
        KeyError (NotFoundError): the cache, or the ``as_host`` file, does not exist.
        ValueError (InvalidValueError): the cache is malformed, an unknown ``host_class``, or
            profiles that become one under ``host_class`` disagree on their values (nothing is
            written).
        TuningCacheError: ``output`` could not be written (read-only, not a cache, locked).

    Example::

        export_kernel_tuning_cache("build-07.cache")["exported_count"]
        export_kernel_tuning_cache("fleet-all.cache", path="fleet.cache", all_hosts=True)
    """
    report = _tuning.export_kernel_tuning_cache(
        output=_required_path("output", output),
        path=_path(path),
        **_selection(kernel, kernels, element_type, element_types, implementation, library, device),
        num_threads=_optional_integer("num_threads", num_threads),
        all_hosts=_boolean("all_hosts", all_hosts),
        as_host=_path(as_host),
        host_class=_match("host_class", host_class),
    )
    _raise_unwritable(report, report.get("status"), report.get("output"), report.get("diagnostics"),
                      "export_kernel_tuning_cache")
    return ExportReport(report)


def import_kernel_tuning_cache(
    files: Union[PathLike, Iterable[PathLike]],
    path: Optional[PathLike] = None,
    *,
    on_conflict: str = "keep",
) -> ImportReport:
    """Merges cache files into a cache (``import``), in one locked, atomic update.

    Every profile of every file is checked first (structure, and the values of registered
    kernels): one problem anywhere raises ``ValueError`` naming the file, the profile and the
    field, and nothing is written. Profiles are merged by key and host (threads included), the
    files in order, their provenance kept. A profile already in the cache with the same values
    is kept; one with other values is a conflict, settled by ``on_conflict``.

    Args:
        files: A cache file or several (another machine's export, a fleet's merge).
        path: The cache to import into (``None``: the default cache).
        on_conflict: ``"keep"`` (default: the cache's values stay), ``"replace"`` (the file's
            win), ``"newest"`` (the later ``provenance.written`` wins) or ``"fail"`` (write
            nothing, raise :class:`TuningConflictError`).

    Returns:
        ``{status, path, files, on_conflict, added, replaced, kept, conflicts, added_count,
        replaced_count, kept_count, conflict_count, diagnostics}``; ``status`` is ``"imported"``
        or ``"unchanged"``; each conflict has ``resolution`` and both sides (``existing``,
        ``incoming``: ``source``, ``index``, ``values``, ``provenance``).

    Raises:
        KeyError (NotFoundError): a file does not exist.
        ValueError (InvalidValueError): a file is malformed or holds an invalid profile.
        TuningConflictError: ``on_conflict="fail"`` and a conflict.
        TuningCacheError: the cache is malformed, unreadable, read-only or locked.

    Example::

        report = import_kernel_tuning_cache(["build-07.cache", "build-08.cache"], on_conflict="newest")
        report["added_count"], [c["resolution"] for c in report["conflicts"]]
    """
    report = _tuning.import_kernel_tuning_cache(
        files=_paths("files", files), path=_path(path), on_conflict=_text("on_conflict", on_conflict))
    _raise_conflicts(report, "import_kernel_tuning_cache")
    _raise_unwritable(report, report.get("status"), report.get("path"), report.get("diagnostics"),
                      "import_kernel_tuning_cache")
    return ImportReport(report)


def merge_kernel_tuning_caches(
    files: Union[PathLike, Iterable[PathLike]],
    output: PathLike,
    *,
    on_conflict: str = "fail",
) -> MergeReport:
    """Merges cache files into one file (``merge -o``) without touching any cache.

    Every profile is checked first, as by :func:`import_kernel_tuning_cache`. The output holds
    one profile per key and host, sorted: without conflicts the same bytes whatever the order of
    ``files``, and a file merged with itself comes back unchanged.

    Args:
        files: The cache files to merge, in order.
        output: The file to write (locked and atomic; never over a file that is not a cache).
        on_conflict: ``"fail"`` (default: write nothing, raise :class:`TuningConflictError`),
            ``"keep"`` (the earlier file's), ``"replace"`` (the later file's) or ``"newest"``.

    Returns:
        ``{status, output, inputs, on_conflict, profile_count, conflicts, conflict_count,
        diagnostics}`` with ``status`` ``"merged"``.

    Raises:
        KeyError, ValueError: as :func:`import_kernel_tuning_cache`.
        TuningConflictError: ``on_conflict="fail"`` and a conflict.
        TuningCacheError: ``output`` could not be written.

    Example::

        merge_kernel_tuning_caches(["build-07.cache", "build-08.cache"], "fleet.cache")["profile_count"]
    """
    report = _tuning.merge_kernel_tuning_caches(
        files=_paths("files", files), output=_required_path("output", output),
        on_conflict=_text("on_conflict", on_conflict))
    _raise_conflicts(report, "merge_kernel_tuning_caches")
    _raise_unwritable(report, report.get("status"), report.get("output"), report.get("diagnostics"),
                      "merge_kernel_tuning_caches")
    return MergeReport(report)


def diff_kernel_tuning_caches(a: PathLike, b: PathLike) -> DiffReport:
    """Compares two cache files by key and host (``diff A B``). Reads only.

    Returns:
        ``{a, b, identical, added, removed, changed, added_count, removed_count, changed_count,
        unchanged_count, diagnostics}``: ``a`` and ``b`` are ``{path, profiles}``; ``added`` the
        profiles only in ``b``, ``removed`` those only in ``a``, ``changed`` those in both with
        other values (``changed_values`` names the parameters; ``a`` and ``b`` hold both sides).
        Provenance alone is no difference; unreadable or repeated profiles are named in
        ``diagnostics`` and not compared.

    Raises:
        KeyError (NotFoundError): a file does not exist.
        ValueError (InvalidValueError): a file is malformed.
        OSError (IoError): a file cannot be read.

    Example::

        diff = diff_kernel_tuning_caches("yesterday.cache", "fleet.cache")
        diff["identical"], [c["changed_values"] for c in diff["changed"]]
    """
    return DiffReport(_tuning.diff_kernel_tuning_caches(a=_required_path("a", a), b=_required_path("b", b)))
