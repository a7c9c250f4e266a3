"""A numpy array or a pandas frame or series in detail, without running the user's code.

The lines the ``inspect`` tool shows under the summary of one array or
frame (tools/inspect.py; the values are recognised and summarised in
tools/values.py, with the same contract: nothing of the user's runs, and
the output is bounded).

The value arrives as a plain ndarray view or a plain pandas frame sharing
the data (``values.plain_array``, ``values.bare``), and is read through the
library's own attributes and methods (``.shape``, ``.dtypes``,
``.head().to_string()``, ``.isna().sum()``). Object cells, labels and
column names that are not plain values are shown as their bounded repr
first, so no element's ``__repr__`` or ``__str__`` runs. Bounded: columns
listed, rows shown, values shown, and statistics only up to a cell count.
"""

from __future__ import annotations

import datetime
from typing import Any

from grinta_jupyter.runtime.secrets import REDACTED
from grinta_jupyter.tools.values import (
    INT_BITS,
    LINE_CHARS,
    NONE_TYPE,
    ExactTypes,
    bounded_repr,
    counted,
    cut,
    dtype_text,
    foreign_zone,
    is_library_class,
    is_secret_text,
    known_zone,
    label_text,
    library_kind,
    secret_named,
)

HEAD_ROWS = 5
MAX_COLUMNS = 40
FIRST_VALUES = 10
# Null counts and min/max read every cell: past this many cells they are left out.
STATS_MAX_CELLS = 20_000_000


def frame_detail(frame: Any, kind: str, name: object = None) -> list[str]:
    """A plain frame's columns (dtype, null count) and first rows; ``kind`` is "DataFrame",
    or "Series" for a series given as its one-column frame; ``name`` is the variable's, which
    counts for cells as a column's name does (``api_keys = pd.Series([...])``)."""
    rows, columns = frame.shape
    shown = frame.iloc[:, :MAX_COLUMNS]
    nulls: list[int] | None = None
    if rows * shown.shape[1] <= STATS_MAX_CELLS:
        nulls = [int(n) for n in shown.isna().sum().tolist()]
    lines = ["columns (dtype, nulls):" if nulls is not None else "columns (dtype):"]
    for i, (label, dtype) in enumerate(shown.dtypes.items()):
        count = "" if nulls is None else f", {counted(nulls[i], 'null')}"
        lines.append(cut(f"  {label_text(label)}: {dtype_text(dtype)}{count}"))
    if columns > MAX_COLUMNS:
        lines.append(f"  [... {columns - MAX_COLUMNS} more columns]")
    lines.append(f"head({HEAD_ROWS}):" if kind == "DataFrame" else f"first {HEAD_ROWS}:")
    table = _safe_cells(shown.head(HEAD_ROWS), name).to_string(max_cols=12, max_colwidth=40)
    lines.extend(cut(line) for line in table.splitlines())
    return lines


def _safe_cells(frame: Any, name: object = None) -> Any:
    """``frame`` with any cell, label or column name that is not a plain value replaced by its
    label, so ``to_string`` calls no user ``__repr__``/``__str__``, and any text that is a
    secret (``values.is_secret_text``) by ``[REDACTED]``: a cell's under its column's name when
    that name says it holds secrets, else under the variable's ``name``; a row label's under
    the index's name (``df.set_index("api_key")``), else the variable's."""
    frame = frame.copy()
    for i in range(frame.shape[1]):
        column = frame.iloc[:, i]
        if foreign_zone(column.dtype):
            frame.isetitem(i, _in_utc(column))
        elif column.dtype.kind == "O":
            owner = _owner(frame.columns[i], name)
            cells = column.tolist()
            if not all(_plain(v) and not is_secret_text(owner, v) for v in cells):
                frame.isetitem(
                    i, [REDACTED if is_secret_text(owner, v) else _cell(v) for v in cells]
                )
    for axis in ("index", "columns"):
        labels = getattr(frame, axis)
        if foreign_zone(labels.dtype):
            setattr(frame, axis, _in_utc(labels))
        elif labels.dtype.kind == "O":
            owner = _owner(labels.name, name) if axis == "index" else None
            items = labels.tolist()
            if not all(_plain(v) and not is_secret_text(owner, v) for v in items):
                setattr(
                    frame,
                    axis,
                    [REDACTED if is_secret_text(owner, v) else _cell(v) for v in items],
                )
    return frame


def _owner(label: Any, name: object) -> object:
    """The name a column's (or an index's) texts are judged under: its own when it says it
    holds secrets, else the variable's."""
    return label if secret_named(label) else name


_PLAIN = ExactTypes(
    (str, bytes, bool, float, complex, NONE_TYPE, datetime.date, datetime.timedelta)
)


def _plain(value: Any) -> bool:
    """Whether pandas may format ``value`` itself: its text is the library's, and small."""
    cls = type(value)
    if cls in _PLAIN:
        return True
    if cls is int:
        bits: int = value.bit_length()
        return bits <= INT_BITS
    if cls is datetime.datetime or cls is datetime.time:
        return known_zone(value.tzinfo)
    kind = library_kind(value)
    if kind == "numpy scalar":
        return not is_library_class(cls, "numpy", "void")
    if kind == "pandas scalar":
        if is_library_class(cls, "pandas", "Timestamp"):
            return known_zone(value.tzinfo)
        return not is_library_class(cls, "pandas", "Interval")
    return False


def _in_utc(times: Any) -> Any:
    """Times in a zone of the user's (a series or an index) as naive UTC times, read from the
    instants pandas keeps: no ``utcoffset`` of the zone runs."""
    return times.array.asi8.view(f"M8[{times.dtype.unit}]")


def _cell(value: Any) -> Any:
    return value if _plain(value) else bounded_repr(value, room=40)


def array_detail(array: Any, name: object = None) -> list[str]:
    """A plain ndarray's size, first values and, for numbers, its range (and NaN count); its
    texts under the variable's ``name`` (``passwords = np.array([...])``)."""
    lines = [f"size {array.size}, {counted(array.ndim, 'dimension')}"]
    # ``flat`` copies only what it slices: ``ravel`` copies a whole strided or broadcast view.
    first = array.flat[:FIRST_VALUES].tolist()
    lines.append(cut(f"first values: {bounded_repr(first, room=LINE_CHARS, name=name)}"))
    if array.dtype.kind in "iufb" and 0 < array.size <= STATS_MAX_CELLS:
        if array.dtype.kind == "f":
            lines.append(f"nan: {int((array != array).sum())}")
        lines.append(cut(f"min {array.min().item()!r}, max {array.max().item()!r}"))
    return lines
