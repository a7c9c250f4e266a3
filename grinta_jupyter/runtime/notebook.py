"""Notebooks as files of cells: read, edited and written back byte-faithfully.

A ``.ipynb`` file is JSON, but nobody edits it as JSON: the runtime works on
its *cell view*, a plain text with one header line per cell followed by the
cell's source::

    #%% cell 3f2a1b (code)
    import pandas as pd
    #%% cell 8c9d00 (markdown)
    # Totals

The view is what a ``NotebookFile`` holds as its text, so every text tool
(exact matching, diffs, hunks, guards) works on cell sources, and the diff a
reviewer sees is code with cell headers, not JSON. The header marker is
``#%%``, lengthened with ``%`` until no source line of the notebook starts
with it, so a header can never be confused with a source line.

Writing a view back (``NotebookFile.encode``) splices the original JSON text:

- an untouched cell keeps its exact bytes (outputs, metadata, formatting);
- an edited cell gets its new source, serialised in the cell's own style
  (a list of lines or one string) and the file's indentation, and, for a code
  cell, its outputs cleared and its execution count set to null: outputs the
  current source did not produce are never kept (docs/notebook.md);
- an inserted cell is written like nbformat writes one, with a fresh id;
- everything outside the cells array, and the final newline, stay as they were.

The result is parsed again and validated against the nbformat schema before
it can be committed; a view that does not map back onto the notebook (a
header edited by hand, cells reordered, a type changed) is refused, never
guessed. Nothing here writes to disk.

The parts live beside this module:

- ``notebook_json.py``: the position-keeping JSON scanner and the file's
  layout (indentation, separators, escapes), so spliced JSON looks like the old;
- ``notebook_checks.py``: the checks a staged notebook must pass (nbformat
  schema, Python syntax of edited code cells) and which cells a change touches;
- ``outputs.py``: the bounded summaries of cell outputs that reads show.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from grinta_jupyter.runtime.errors import NOTEBOOK_INVALID, fail
from grinta_jupyter.runtime.notebook_json import (
    Layout,
    array_items,
    dumps,
    layout_of,
    line_indent,
    object_members,
    skip_ws,
    value_at,
)
from grinta_jupyter.runtime.textfile import TextFile

SUFFIX = ".ipynb"
BASE_MARKER = "#%%"
CELL_TYPES = ("code", "markdown", "raw")
# A fresh cell id: short, unique in its notebook, valid for nbformat (^[a-zA-Z0-9-_]+$).
_ID_LENGTH = 8


def is_notebook(path: str) -> bool:
    return path.lower().endswith(SUFFIX)


# -- the notebook as parsed from its JSON text ------------------------------------------


@dataclass(frozen=True)
class Cell:
    """One cell: what it says, and where its parts sit in the file's JSON text."""

    key: str  # its id, or (notebooks before nbformat 4.5, without ids) its 1-based position
    cell_type: str
    source: str
    execution_count: int | None
    outputs: tuple[dict[str, Any], ...]
    span: tuple[int, int]  # the cell object in the JSON text
    # Value spans inside the JSON text of the keys an edit rewrites.
    values: dict[str, tuple[int, int]] = field(default_factory=dict)
    source_is_list: bool = True

    @property
    def first_line(self) -> str:
        return self.source.split("\n", 1)[0]


@dataclass(frozen=True)
class Notebook:
    """A parsed nbformat-4 notebook and the positions of its cells in ``text``."""

    text: str
    cells: tuple[Cell, ...]
    cells_span: tuple[int, int]  # the cells array, brackets included
    layout: Layout
    minor: int
    has_ids: bool
    marker: str
    language: str = "python"  # the kernel's language: only Python cells are checked as Python

    @property
    def is_python(self) -> bool:
        return self.language == "python"

    @classmethod
    def parse(cls, text: str, rel: str = "notebook") -> Notebook:
        """Parse ``text``; NOTEBOOK_INVALID when it is not an nbformat-4 notebook whose
        cells can be named (valid, unique ids, or none at all before nbformat 4.5)."""
        try:
            return cls._parse(text, rel)
        except (ValueError, RecursionError) as exc:  # JSON nested past the parser's depth
            reason = "nested too deeply" if isinstance(exc, RecursionError) else str(exc)
            raise fail(NOTEBOOK_INVALID, f"{rel} is not valid notebook JSON ({reason})") from None

    @classmethod
    def _parse(cls, text: str, rel: str) -> Notebook:
        first = skip_ws(text, 0)
        if first == len(text):
            raise fail(NOTEBOOK_INVALID, f"{rel} is empty: no notebook JSON at all")
        members = object_members(text, first)
        # Jupyter cannot open a file with more after its object (two notebooks run together):
        # neither is it read as cells, or an edit would be refused as breaking the JSON.
        close = skip_ws(text, members[-1][1][1] if members else first + 1)  # at its "}"
        if skip_ws(text, close + 1) != len(text):
            raise ValueError(f"more text after the notebook's object, at offset {close + 1}")
        top = dict(members)
        major = value_at(text, top.get("nbformat"))
        if "nbformat" not in top:
            raise fail(NOTEBOOK_INVALID, f"{rel} is JSON but no notebook (it has no nbformat key)")
        if major != 4:
            raise fail(
                NOTEBOOK_INVALID,
                f"{rel} is nbformat {major!r}; only nbformat 4 notebooks are edited as cells "
                "(convert it with `jupyter nbconvert --to notebook`)",
            )
        minor = value_at(text, top.get("nbformat_minor"))
        if "cells" not in top:
            raise fail(NOTEBOOK_INVALID, f"{rel} has no cells array")
        start, end = top["cells"]
        items = array_items(text, start)
        cells = [_cell(text, s, e, position, rel) for position, (s, e) in enumerate(items, 1)]
        # Notebooks before nbformat 4.5 have no cell ids: their cells are named by position.
        if cells:
            has_ids = all("id" in c.values for c in cells)
        else:
            has_ids = isinstance(minor, int) and minor >= 5
        if has_ids:
            _check_ids(cells, rel)
        elif any("id" in c.values for c in cells):
            raise fail(NOTEBOOK_INVALID, f"{rel}: some cells have ids and some do not")
        metadata = value_at(text, top.get("metadata"))
        marker = choose_marker(c.source for c in cells)
        if len(marker) > MAX_MARKER:
            raise fail(
                NOTEBOOK_INVALID,
                f"{rel}: its cells cannot be shown as a cell view (their source lines start like "
                f"a cell header of every marker from {BASE_MARKER} to {marker[:MAX_MARKER]})",
            )
        return cls(
            text,
            tuple(cells),
            (start, end),
            layout_of(text),
            minor if isinstance(minor, int) else 0,
            has_ids,
            marker,
            _language(metadata),
        )

    def view(self) -> str:
        """The cell view (see the module docstring)."""
        return render_view([(c.key, c.cell_type, c.source) for c in self.cells], self.marker)

    def find(self, key: str) -> list[Cell]:
        """Cells ``key`` names: an exact id (or position), else a unique id prefix."""
        exact = [c for c in self.cells if c.key == key]
        if exact or not self.has_ids:
            return exact
        return [c for c in self.cells if c.key.startswith(key)] if key else []

    def fresh_id(self, taken: Iterable[str] = ()) -> str:
        used = {c.key for c in self.cells} | set(taken)
        while True:
            candidate = uuid.uuid4().hex[:_ID_LENGTH]
            if candidate not in used:
                return candidate


def _check_ids(cells: list[Cell], rel: str) -> None:
    """Every id valid for nbformat and unique: a cell is addressed by its id."""
    seen: dict[str, int] = {}
    for position, cell in enumerate(cells, 1):
        if not valid_id(cell.key):
            raise fail(
                NOTEBOOK_INVALID,
                f"{rel}: cell {position} has the id {cell.key!r}, which nbformat does not allow "
                "(1-64 letters, digits, - or _)",
            )
        if cell.key in seen:
            raise fail(
                NOTEBOOK_INVALID,
                f"{rel}: the id {cell.key!r} is used by two cells (cells {seen[cell.key]} and "
                f"{position}); give one of them a new id (Jupyter does so when the notebook is "
                "saved)",
            )
        seen[cell.key] = position


def _language(metadata: Any) -> str:
    """The notebook's language, from its metadata (Python when it does not say)."""
    if not isinstance(metadata, dict):
        return "python"
    for key, field_name in (("kernelspec", "language"), ("language_info", "name")):
        section = metadata.get(key)
        if isinstance(section, dict) and isinstance(section.get(field_name), str):
            return str(section[field_name]).lower()
    return "python"


def _cell(text: str, start: int, end: int, position: int, rel: str) -> Cell:
    try:
        members = object_members(text, start)
    except ValueError as exc:
        raise fail(
            NOTEBOOK_INVALID, f"{rel}: cell {position} is not a JSON object ({exc})"
        ) from None
    spans = dict(members)
    cell_type = value_at(text, spans.get("cell_type"))
    if cell_type not in CELL_TYPES:
        raise fail(NOTEBOOK_INVALID, f"{rel}: cell {position} has cell_type {cell_type!r}")
    raw_source = value_at(text, spans.get("source"))
    if isinstance(raw_source, list) and all(isinstance(s, str) for s in raw_source):
        source, is_list = "".join(raw_source), True
    elif isinstance(raw_source, str):
        source, is_list = raw_source, False
    else:
        raise fail(NOTEBOOK_INVALID, f"{rel}: cell {position} has no text source")
    cell_id = value_at(text, spans.get("id"))
    outputs = value_at(text, spans.get("outputs")) if cell_type == "code" else []
    count = value_at(text, spans.get("execution_count")) if cell_type == "code" else None
    keep: dict[str, tuple[int, int]] = {
        name: spans[name]
        for name in ("source", "outputs", "execution_count", "id")
        if name in spans
    }
    return Cell(
        key=cell_id if isinstance(cell_id, str) and cell_id else str(position),
        cell_type=cell_type,
        source=source,
        execution_count=count if isinstance(count, int) else None,
        outputs=tuple(o for o in outputs if isinstance(o, dict))
        if isinstance(outputs, list)
        else (),
        span=(start, end),
        values=keep,
        source_is_list=is_list,
    )


# -- the cell view ----------------------------------------------------------------------

ViewCell = tuple[str, str, str]  # (key, cell_type, source)


# A source line that starts like a header of some marker (carriage returns before it aside,
# as a lone "\r" can read as a line break): its run of ``%`` is that marker's.
_MARKER_LINE = re.compile(r"^\r*#(%{2,}) cell", re.MULTILINE)
# The longest marker: only a notebook with source lines starting like a header of every
# marker up to it needs one longer, and a marker is written once per cell (a hostile file's
# 2,000-character marker made a 5 MB notebook's view 42 MB and its edit take 18 s).
MAX_MARKER = 33


def choose_marker(sources: Iterable[str]) -> str:
    """``#%%``, with more ``%`` until no source line starts with ``<marker> cell``.

    Linear in the sources: each such line rules out the one marker it starts with (tried
    marker by marker against every line, it took the square of their number)."""
    taken = {len(found.group(1)) for source in sources for found in _MARKER_LINE.finditer(source)}
    run = len(BASE_MARKER) - 1
    while run in taken:
        run += 1
    return "#" + "%" * run


def render_view(cells: Sequence[ViewCell], marker: str) -> str:
    return "".join(f"{marker} cell {key} ({kind})\n{source}\n" for key, kind, source in cells)


def header_pattern(marker: str) -> re.Pattern[str]:
    return re.compile(rf"^{re.escape(marker)} cell (\S+) \(({'|'.join(CELL_TYPES)})\)$")


def parse_view(text: str, marker: str) -> list[ViewCell]:
    """The cells of a view; ValueError when ``text`` is not one."""
    if not text:
        return []
    header = header_pattern(marker)
    lines = text.split("\n")
    if lines[-1] != "":
        raise ValueError("the cell view does not end with a newline")
    lines.pop()
    cells: list[ViewCell] = []
    key = kind = None
    body: list[str] = []
    for line in lines:
        found = header.match(line)
        if found:
            if key is not None and kind is not None:
                cells.append((key, kind, "\n".join(body)))
            key, kind, body = found.group(1), found.group(2), []
        elif key is None:
            raise ValueError("text before the first cell header")
        else:
            body.append(line)
    if key is not None and kind is not None:
        cells.append((key, kind, "\n".join(body)))
    return cells


def view_location(text: str, marker: str, line: int) -> tuple[str, int] | None:
    """(cell key, line within the cell) for a 1-based line of a view; None on a header."""
    header = header_pattern(marker)
    key, within = None, 0
    for number, current in enumerate(text.split("\n"), 1):
        found = header.match(current)
        if found:
            key, within = found.group(1), 0
        else:
            within += 1
        if number == line:
            return (key, within) if key is not None and not found else None
    return None


# -- the file a tool edits --------------------------------------------------------------


@dataclass(frozen=True)
class NotebookFile(TextFile):
    """A notebook as a text file whose text is its cell view; ``encode`` writes JSON."""

    notebook: Notebook | None = field(default=None, repr=False)

    @classmethod
    def decode_notebook(cls, raw: bytes, path: str) -> NotebookFile:
        plain = TextFile.decode(raw, path)
        notebook = Notebook.parse(plain.text, path)
        view = notebook.view()
        if parse_view(view, notebook.marker) != [
            (c.key, c.cell_type, c.source) for c in notebook.cells
        ]:  # a backstop: every cell must come back from its view exactly
            raise fail(NOTEBOOK_INVALID, f"{path}: its cells cannot be shown as a cell view")
        return cls(
            text=view,
            bom=plain.bom,
            newline="\n",
            sha256=plain.sha256,
            raw=raw,
            notebook=notebook,
        )

    @property
    def nb(self) -> Notebook:
        assert self.notebook is not None
        return self.notebook

    def encode(self, text: str) -> bytes:
        """The notebook's bytes for the view ``text``; ToolFailure when it cannot be written."""
        json_text = write_view(self.nb, text)
        if json_text == self.nb.text:
            return self.raw
        return super().encode(json_text)

    def adapt(self, payload: str) -> str:
        return payload.replace("\r\n", "\n")


def decode_file(raw: bytes, path: str) -> TextFile:
    """A notebook's cell view for ``.ipynb`` files, the plain text otherwise."""
    if is_notebook(path):
        return NotebookFile.decode_notebook(raw, path)
    return TextFile.decode(raw, path)


def write_view(notebook: Notebook, view: str) -> str:
    """The notebook's JSON text with the cells of ``view`` (see the module docstring)."""
    try:
        wanted = parse_view(view, notebook.marker)
    except ValueError as exc:
        raise fail(
            NOTEBOOK_INVALID, f"the edit breaks the notebook's cell structure ({exc})"
        ) from None
    known = {c.key: c for c in notebook.cells}
    old_order = [c.key for c in notebook.cells]
    kept = [key for key, _, _ in wanted if key in known]
    if len(set(kept)) != len(kept):
        raise fail(NOTEBOOK_INVALID, "the edit repeats a cell; insert a new cell instead")
    kept_set = set(kept)  # once: built per cell, it made a 10,000-cell write quadratic
    if [k for k in old_order if k in kept_set] != kept:
        raise fail(NOTEBOOK_INVALID, "the edit reorders cells; delete and insert cells instead")
    for key, kind, _ in wanted:
        if key in known and known[key].cell_type != kind:
            raise fail(
                NOTEBOOK_INVALID,
                f"the edit changes cell {key} from {known[key].cell_type} to {kind}; "
                "delete it and insert a new cell instead",
            )
    layout = notebook.layout
    text = notebook.text
    pieces: list[str] = []
    new_ids: list[str] = []
    for key, kind, source in wanted:
        cell = known.get(key)
        if cell is None:
            new_id = None
            if notebook.has_ids:
                fresh = valid_id(key) and key not in known and key not in new_ids
                new_id = key if fresh else notebook.fresh_id(new_ids)
            if new_id:
                new_ids.append(new_id)
            pieces.append(_new_cell(notebook, kind, source, new_id))
        elif cell.source == source:
            pieces.append(text[cell.span[0] : cell.span[1]])
        else:
            pieces.append(_edited_cell(text, cell, source, layout))
    if [k for k, _, _ in wanted] == old_order:  # same cells: keep every separator as it was
        out = []
        at = notebook.cells_span[0]
        for cell, piece in zip(notebook.cells, pieces, strict=True):
            out.append(text[at : cell.span[0]])
            out.append(piece)
            at = cell.span[1]
        inner = "".join(out) + text[at : notebook.cells_span[1]]
        return text[: notebook.cells_span[0]] + inner + text[notebook.cells_span[1] :]
    if not pieces:
        return text[: notebook.cells_span[0]] + "[]" + text[notebook.cells_span[1] :]
    lead, sep, trail = _separators(notebook)
    # Two cells that were neighbours keep the bytes between them (a hand-written file's
    # blank line); only a seam the edit makes gets the file's usual separator.
    position = {c.key: n for n, c in enumerate(notebook.cells)}
    joined = [pieces[0]]
    for (before, _, _), (key, _, _), piece in zip(wanted[:-1], wanted[1:], pieces[1:], strict=True):
        index = position.get(before)
        if index is not None and position.get(key) == index + 1:
            gap = (notebook.cells[index].span[1], notebook.cells[index + 1].span[0])
            joined.append(text[gap[0] : gap[1]])
        else:
            joined.append(sep)
        joined.append(piece)
    body = "[" + lead + "".join(joined) + trail + "]"
    return text[: notebook.cells_span[0]] + body + text[notebook.cells_span[1] :]


def valid_id(key: str) -> bool:
    """Whether nbformat allows ``key`` as a cell id."""
    return bool(re.fullmatch(r"[a-zA-Z0-9_-]{1,64}", key))


def _separators(notebook: Notebook) -> tuple[str, str, str]:
    """Whitespace after ``[``, between cells, and before ``]`` of the cells array."""
    text = notebook.text
    start, end = notebook.cells_span
    cells = notebook.cells
    if cells:
        lead = text[start + 1 : cells[0].span[0]]
        trail = text[cells[-1].span[1] : end - 1]
        if len(cells) > 1:
            sep = text[cells[0].span[1] : cells[1].span[0]]
        else:  # one cell: a comma and the lead, or on one line the file's own separator
            sep = "," + lead if lead else notebook.layout.item_separator
        return lead, sep, trail
    unit = notebook.layout.unit
    if unit is None:
        return "", notebook.layout.item_separator, ""
    key_indent = line_indent(text, start)
    newline = notebook.layout.newline  # a CRLF file's first cell must not bring LF with it
    return (
        newline + key_indent + unit,
        "," + newline + key_indent + unit,
        newline + key_indent,
    )


def _source_value(source: str, as_list: bool) -> str | list[str]:
    return source.splitlines(keepends=True) if as_list else source


def _edited_cell(text: str, cell: Cell, source: str, layout: Layout) -> str:
    start = cell.span[0]
    chunk = text[cell.span[0] : cell.span[1]]
    changes: list[tuple[tuple[int, int], str]] = []
    source_span = cell.values["source"]
    indent = line_indent(text, source_span[0])
    changes.append((source_span, dumps(_source_value(source, cell.source_is_list), layout, indent)))
    if cell.cell_type == "code":
        if "outputs" in cell.values:
            changes.append((cell.values["outputs"], "[]"))
        if "execution_count" in cell.values:
            changes.append((cell.values["execution_count"], "null"))
    for (begin, end), replacement in sorted(changes, reverse=True):
        chunk = chunk[: begin - start] + replacement + chunk[end - start :]
    return chunk


def _new_cell(notebook: Notebook, kind: str, source: str, cell_id: str | None) -> str:
    as_list = any(c.source_is_list for c in notebook.cells) or not notebook.cells
    cell: dict[str, Any] = {"cell_type": kind}
    if kind == "code":
        cell["execution_count"] = None
    if cell_id is not None:
        cell["id"] = cell_id
    cell["metadata"] = {}
    if kind == "code":
        cell["outputs"] = []
    cell["source"] = _source_value(source, as_list)
    start = notebook.cells_span[0]
    if notebook.cells:
        indent = line_indent(notebook.text, notebook.cells[0].span[0])
    else:
        indent = line_indent(notebook.text, start) + (notebook.layout.unit or "")
    return dumps(cell, notebook.layout, indent)


__all__ = [
    "BASE_MARKER",
    "CELL_TYPES",
    "MAX_MARKER",
    "Cell",
    "Notebook",
    "NotebookFile",
    "ViewCell",
    "choose_marker",
    "decode_file",
    "header_pattern",
    "is_notebook",
    "parse_view",
    "render_view",
    "valid_id",
    "view_location",
    "write_view",
]
