"""The dictionaries onnx_light returns, made readable in notebooks.

Every tuning function (and :meth:`onnx_light.InferenceSession.profile`) returns a ``dict``
subclass: the keys, values, equality and ``pprint`` output are exactly those of the plain
dictionary (the CLI's ``--json``), so code written against dictionaries keeps working. On top:

- ``to_rows(key=None)``: the report's main list (``kernels``, ``profiles``, ``nodes``...) as
  flat dictionaries, one per row (a nested ``values`` dict becomes ``values.<name>`` columns),
  ready for ``pandas.DataFrame(rows)`` or ``csv.DictWriter``;
- ``to_dataframe(key=None)``: the same rows as a ``pandas.DataFrame`` when pandas is installed
  (it is never required);
- ``_repr_html_``: a table in Jupyter; ``str(report)`` and IPython's text display: a summary
  line and an aligned text table.
"""
from __future__ import annotations

import html as _html
import importlib as _importlib
from typing import Any, Dict, List, Optional, Sequence

__all__ = [
    "Report",
    "ParametersReport",
    "ProposalReport",
    "UpdateReport",
    "InspectionReport",
    "LoadReport",
    "CalibrationReport",
    "ModelCalibrationReport",
    "RemovalReport",
    "ExportReport",
    "ImportReport",
    "MergeReport",
    "DiffReport",
    "Profile",
    "DISPLAY_ROWS",
]


def __dir__() -> List[str]:
    return sorted(__all__)


#: Rows shown by ``str()`` and the HTML table; ``to_rows()`` always returns every row.
DISPLAY_ROWS = 40
_CELL_WIDTH = 48


def _flatten(row: Any) -> Dict[str, Any]:
    """One level of nesting undone: {'values': {'a': 1}} -> {'values.a': 1}."""
    if not isinstance(row, dict):
        return {"value": row}
    flat: Dict[str, Any] = {}
    for key, value in row.items():
        if isinstance(value, dict) and value:
            for inner, item in value.items():
                flat[f"{key}.{inner}"] = item
        else:
            flat[key] = value
    return flat


def _text(value: Any, nested: bool = False) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, (list, tuple)):
        inner = ", ".join(_text(v, True) for v in value)
        return f"[{inner}]" if nested else inner
    if isinstance(value, dict):
        if "kernel" in value and "implementation" in value:  # a tuning key
            return f"{value['kernel']} {value['implementation']} type {value.get('element_type', '?')}"
        return ", ".join(f"{k}={_text(v, True)}" for k, v in value.items())
    return str(value)


def _cell(value: Any) -> str:
    text = _text(value)
    return text if len(text) <= _CELL_WIDTH else text[: _CELL_WIDTH - 3] + "..."


class Report(dict):  # type: ignore[type-arg]
    """A report dictionary with a table view. ``repr`` stays the dictionary's."""

    #: The list shown as the table and returned by ``to_rows()`` by default.
    rows_key: Optional[str] = None
    #: Columns shown by ``str()`` and the HTML table (nested values compactly); ``to_rows()`` has all.
    columns: Sequence[str] = ()
    #: Scalar fields shown on the summary line.
    summary_keys: Sequence[str] = ("status", "path", "cache_path")
    title = "report"

    def to_rows(self, key: Optional[str] = None) -> List[Dict[str, Any]]:
        """The list under ``key`` (default: this report's main list) as flat dicts, one per row."""
        key = key or self.rows_key
        if key is None:
            return [_flatten(dict(self))]
        if key not in self:
            raise KeyError(f"{type(self).__name__} has no list {key!r}; lists: {', '.join(self._list_keys())}")
        items = self[key]
        if not isinstance(items, list):
            raise KeyError(f"{type(self).__name__}[{key!r}] is not a list")
        return [_flatten(item) for item in items]

    def to_dataframe(self, key: Optional[str] = None) -> Any:
        """The rows of :meth:`to_rows` as a ``pandas.DataFrame`` (needs pandas, which onnx_light does not)."""
        try:
            pandas = _importlib.import_module("pandas")  # optional: never a dependency
        except ImportError:
            raise ImportError(
                "to_dataframe() needs pandas (Debian: apt-get install python3-pandas); "
                "to_rows() returns the same rows as a list of dicts"
            ) from None
        return pandas.DataFrame(self.to_rows(key))

    def _list_keys(self) -> List[str]:
        return [k for k, v in self.items() if isinstance(v, list)]

    def _summary(self) -> str:
        parts = [f"{k}={_text(self[k])}" for k in self.summary_keys if k in self and self[k] not in (None, "")]
        counts = [f"{k}: {len(v)}" for k, v in self.items() if isinstance(v, list) and v and k != self.rows_key]
        head = f"{self.title} ({', '.join(parts)})" if parts else self.title
        return head + (f"; {', '.join(counts)}" if counts else "")

    def _table(self) -> tuple[List[str], List[Dict[str, Any]], int]:
        """The displayed columns (``columns``; nested values shown compactly) and rows."""
        items = self.get(self.rows_key) if self.rows_key else None
        if not isinstance(items, list):
            return [], [], 0
        rows = [item if isinstance(item, dict) else {"value": item} for item in items]
        names: List[str] = [c for c in self.columns if any(c in r for r in rows)]
        if not names:
            for row in rows:
                names += [n for n in row if n not in names]
        return names, rows[:DISPLAY_ROWS], len(rows)

    def __str__(self) -> str:
        names, rows, total = self._table()
        lines = [self._summary()]
        if self.rows_key:
            lines.append(f"{self.rows_key}: {total}")
        if rows:
            cells = [[_cell(r.get(n)) for n in names] for r in rows]
            widths = [max([len(n)] + [len(c[i]) for c in cells]) for i, n in enumerate(names)]
            lines.append("  ".join(n.ljust(w) for n, w in zip(names, widths)).rstrip())
            lines += ["  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in cells]
            if total > len(rows):
                lines.append(f"... {total - len(rows)} more rows (to_rows() has all {total})")
        return "\n".join(lines)

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:  # IPython's text display
        printer.text(f"{type(self).__name__}(...)" if cycle else str(self))

    def _repr_html_(self) -> str:
        names, rows, total = self._table()
        out = [f"<div><p><b>{_html.escape(self._summary())}</b></p>"]
        if rows:
            out.append("<table><thead><tr>")
            out += [f"<th>{_html.escape(n)}</th>" for n in names]
            out.append("</tr></thead><tbody>")
            for row in rows:
                out.append("<tr>" + "".join(f"<td>{_html.escape(_cell(row.get(n)))}</td>" for n in names) + "</tr>")
            out.append("</tbody></table>")
            if total > len(rows):
                out.append(f"<p>{total - len(rows)} more rows: <code>to_rows()</code> or <code>to_dataframe()</code> "
                           f"has all {total}.</p>")
        elif self.rows_key:
            out.append(f"<p>no {_html.escape(self.rows_key)}</p>")
        out.append("</div>")
        return "".join(out)


_KEY_COLUMNS = ("kernel", "implementation", "element_type", "tuning_abi")


class ParametersReport(Report):
    """``kernel_tuning_parameters()``: one row per tuning key."""

    rows_key = "kernels"
    columns = _KEY_COLUMNS + ("active_source", "active_values", "cached_values", "matched_by")
    summary_keys = ("cache_path", "cache_status")
    title = "kernel tuning parameters"


class ProposalReport(Report):
    """``propose_kernel_tuning_updates()``: the keys to calibrate."""

    rows_key = "calibratable"
    columns = _KEY_COLUMNS + ("active_source", "active_values")
    summary_keys = ("cache_path", "cache_status")
    title = "proposed calibrations"


class UpdateReport(Report):
    """``set_kernel_tuning_parameters()``."""

    rows_key = "updated"
    columns = _KEY_COLUMNS
    summary_keys = ("status", "path", "values")
    title = "cache update"


class InspectionReport(Report):
    """``inspect_kernel_tuning_cache()``: one row per cached profile."""

    rows_key = "profiles"
    columns = _KEY_COLUMNS + ("effective_threads", "classification", "matched_by", "in_force", "local", "values")
    title = "tuning cache"


class LoadReport(Report):
    """``load_kernel_tuning_cache()``."""

    rows_key = "loaded"
    columns = _KEY_COLUMNS
    summary_keys = ("status", "path", "published_generation")
    title = "cache load"


class CalibrationReport(Report):
    """``calibrate_kernel_tuning()``: one row per calibrated key."""

    rows_key = "calibrated"
    columns = _KEY_COLUMNS + ("values",)
    summary_keys = ("cache_path", "effective_threads", "elapsed_ms")
    title = "calibration"


class ModelCalibrationReport(Report):
    """``calibrate_kernel_tuning(model=...)``: one row per key the model's nodes use."""

    rows_key = "keys"
    columns = ("kernel", "implementation", "nodes", "share", "changed", "new_values")
    summary_keys = ("model", "saved", "model_ms", "elapsed_ms")
    title = "model calibration"

    def _summary(self) -> str:
        e = self.get("end_to_end") or {}
        tail = f"; end to end: {e.get('verdict')}" if e else ""
        if e.get("speedup"):
            tail += f" x{e['speedup']:.3f} [{e.get('speedup_low', 0):.3f}, {e.get('speedup_high', 0):.3f}]"
        return super()._summary() + tail


class RemovalReport(Report):
    """``remove_kernel_tuning_cache()``: one row per removed profile."""

    rows_key = "removed_profiles"
    columns = _KEY_COLUMNS + ("classification", "values")
    summary_keys = ("status", "path", "removed_count", "preserved_count", "dry_run")
    title = "cache removal"


class ExportReport(Report):
    """``export_kernel_tuning_cache()``: one row per exported profile."""

    rows_key = "profiles"
    columns = _KEY_COLUMNS + ("effective_threads", "values")
    summary_keys = ("status", "path", "output", "exported_count", "skipped_count")
    title = "cache export"


class ImportReport(Report):
    """``import_kernel_tuning_cache()``: one row per conflict (the counts are on the summary line)."""

    rows_key = "conflicts"
    columns = _KEY_COLUMNS + ("effective_threads", "resolution", "existing", "incoming")
    summary_keys = ("status", "path", "added_count", "replaced_count", "kept_count", "on_conflict")
    title = "cache import"


class MergeReport(Report):
    """``merge_kernel_tuning_caches()``: one row per conflict."""

    rows_key = "conflicts"
    columns = _KEY_COLUMNS + ("effective_threads", "resolution", "existing", "incoming")
    summary_keys = ("status", "output", "profile_count", "on_conflict")
    title = "cache merge"


class DiffReport(Report):
    """``diff_kernel_tuning_caches()``: one row per changed profile; ``to_rows('added')`` and
    ``to_rows('removed')`` give the others."""

    rows_key = "changed"
    columns = _KEY_COLUMNS + ("effective_threads", "changed_values")
    summary_keys = ("identical", "added_count", "removed_count", "changed_count", "unchanged_count")
    title = "cache diff"


class Profile(Report):
    """What a profiling session recorded: one row per node, longest first.

    ``to_rows('op_types')`` gives the per-op-type totals; :meth:`to_trace` writes the Chrome trace.
    """

    rows_key = "nodes"
    columns = ("node", "op_type", "implementation", "calls", "mean_us", "total_us", "share", "input_shapes")
    summary_keys = ("runs", "total_us", "nodes_us")
    title = "profile"

    def __init__(self, data: Dict[str, Any], trace_writer: Any = None) -> None:
        super().__init__(data)
        self._trace_writer = trace_writer

    @property
    def counters(self) -> List[Dict[str, Any]]:
        """Every counter asked for (``counters=True``): name, available, user_space_only, reason; else []."""
        return list(self.get("counters") or [])

    def to_trace(self, path: Any) -> str:
        """Writes the session's recorded runs as Chrome trace JSON (Perfetto opens it); returns the path."""
        if self._trace_writer is None:
            raise ValueError("this profile is not attached to a session; use the session's write_trace(path)")
        return str(self._trace_writer(path))
