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
"""

from __future__ import annotations

import ast
import base64
import json
import re
import textwrap
import uuid
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from grinta_jupyter.runtime.errors import (
    NOTEBOOK_INVALID,
    SYNTAX_ERROR,
    Candidate,
    ToolError,
    ToolFailure,
    fail,
)
from grinta_jupyter.runtime.textfile import TextFile, sha256

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
class Layout:
    """How the file is written, so new JSON looks like the old."""

    unit: str | None  # one indentation step; None for JSON on one line
    ensure_ascii: bool
    item_separator: str  # between members on one line ("," or ", ")
    key_separator: str  # ": " or ":"
    newline: str = "\n"  # "\r\n" for a notebook written with CRLF


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
        members = _object_members(text, _skip_ws(text, 0))
        top = dict(members)
        major = _value(text, top.get("nbformat"))
        if major != 4:
            raise fail(
                NOTEBOOK_INVALID,
                f"{rel} is nbformat {major!r}; only nbformat 4 notebooks are edited as cells "
                "(convert it with `jupyter nbconvert --to notebook`)",
            )
        minor = _value(text, top.get("nbformat_minor"))
        if "cells" not in top:
            raise fail(NOTEBOOK_INVALID, f"{rel} has no cells array")
        start, end = top["cells"]
        items = _array_items(text, start)
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
        metadata = _value(text, top.get("metadata"))
        return cls(
            text,
            tuple(cells),
            (start, end),
            _layout(text),
            minor if isinstance(minor, int) else 0,
            has_ids,
            choose_marker([c.source for c in cells]),
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
    seen: set[str] = set()
    for position, cell in enumerate(cells, 1):
        if not _valid_id(cell.key):
            raise fail(
                NOTEBOOK_INVALID,
                f"{rel}: cell {position} has the id {cell.key!r}, which nbformat does not allow "
                "(1-64 letters, digits, - or _)",
            )
        if cell.key in seen:
            raise fail(
                NOTEBOOK_INVALID,
                f"{rel}: the id {cell.key!r} is used by two cells; give one of them a new id "
                "(Jupyter does so when the notebook is saved)",
            )
        seen.add(cell.key)


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
        members = _object_members(text, start)
    except ValueError as exc:
        raise fail(
            NOTEBOOK_INVALID, f"{rel}: cell {position} is not a JSON object ({exc})"
        ) from None
    spans = dict(members)
    cell_type = _value(text, spans.get("cell_type"))
    if cell_type not in CELL_TYPES:
        raise fail(NOTEBOOK_INVALID, f"{rel}: cell {position} has cell_type {cell_type!r}")
    raw_source = _value(text, spans.get("source"))
    if isinstance(raw_source, list) and all(isinstance(s, str) for s in raw_source):
        source, is_list = "".join(raw_source), True
    elif isinstance(raw_source, str):
        source, is_list = raw_source, False
    else:
        raise fail(NOTEBOOK_INVALID, f"{rel}: cell {position} has no text source")
    cell_id = _value(text, spans.get("id"))
    outputs = _value(text, spans.get("outputs")) if cell_type == "code" else []
    count = _value(text, spans.get("execution_count")) if cell_type == "code" else None
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


# -- a tiny position-keeping JSON scanner (values themselves are parsed by json) -------

_DECODER = json.JSONDecoder()
_WS = re.compile(r"[ \t\n\r]*")


def _skip_ws(text: str, at: int) -> int:
    found = _WS.match(text, at)
    return found.end() if found else at


def _object_members(text: str, at: int) -> list[tuple[str, tuple[int, int]]]:
    """The members of the object starting at ``at``: (key, value span) in order."""
    if at >= len(text) or text[at] != "{":
        raise ValueError(f"expected an object at offset {at}")
    members: list[tuple[str, tuple[int, int]]] = []
    at = _skip_ws(text, at + 1)
    if at < len(text) and text[at] == "}":
        return members
    while True:
        key, at = _DECODER.raw_decode(text, at)
        if not isinstance(key, str):
            raise ValueError(f"expected a key at offset {at}")
        at = _skip_ws(text, at)
        if at >= len(text) or text[at] != ":":
            raise ValueError(f"expected ':' at offset {at}")
        start = _skip_ws(text, at + 1)
        _, end = _DECODER.raw_decode(text, start)
        members.append((key, (start, end)))
        at = _skip_ws(text, end)
        if at < len(text) and text[at] == ",":
            at = _skip_ws(text, at + 1)
            continue
        if at < len(text) and text[at] == "}":
            return members
        raise ValueError(f"expected ',' or '}}' at offset {at}")


def _array_items(text: str, at: int) -> list[tuple[int, int]]:
    """Spans of the items of the array starting at ``at``."""
    if text[at] != "[":
        raise ValueError(f"expected an array at offset {at}")
    items: list[tuple[int, int]] = []
    at = _skip_ws(text, at + 1)
    if at < len(text) and text[at] == "]":
        return items
    while True:
        _, end = _DECODER.raw_decode(text, at)
        items.append((at, end))
        at = _skip_ws(text, end)
        if at < len(text) and text[at] == ",":
            at = _skip_ws(text, at + 1)
            continue
        if at < len(text) and text[at] == "]":
            return items
        raise ValueError(f"expected ',' or ']' at offset {at}")


def _value(text: str, span: tuple[int, int] | None) -> Any:
    if span is None:
        return None
    return json.loads(text[span[0] : span[1]])


def _layout(text: str) -> Layout:
    match = re.search(r"\{\r?\n([ \t]+)\"", text)
    unit = match.group(1) if match else None
    non_ascii = not text.isascii()
    escapes = re.search(r"\\u(?!00[0-7])[0-9a-fA-F]{4}", text) is not None
    return Layout(
        unit=unit,
        ensure_ascii=escapes and not non_ascii,
        item_separator=", " if unit is None and re.search(r"\", \"", text) else ",",
        key_separator=": " if re.search(r"\": ", text) else ":",
        newline="\r\n" if "\r\n" in text else "\n",
    )


# -- the cell view ----------------------------------------------------------------------

ViewCell = tuple[str, str, str]  # (key, cell_type, source)


def choose_marker(sources: Iterable[str]) -> str:
    """``#%%``, with more ``%`` until no source line starts with ``<marker> cell``."""
    starts = {
        line.lstrip("\r")
        for source in sources
        for line in source.split("\n")
        if line.startswith(BASE_MARKER)
    }
    marker = BASE_MARKER
    while any(line.startswith(marker + " cell") for line in starts):
        marker += "%"
    return marker


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
    if [k for k in old_order if k in set(kept)] != kept:
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
                fresh = _valid_id(key) and key not in known and key not in new_ids
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
    lead, sep, trail = _separators(notebook)
    body = "[" + (lead + sep.join(pieces) + trail if pieces else "") + "]"
    if not pieces:
        body = "[]"
    return text[: notebook.cells_span[0]] + body + text[notebook.cells_span[1] :]


def _valid_id(key: str) -> bool:
    return bool(re.fullmatch(r"[a-zA-Z0-9_-]{1,64}", key))


def _separators(notebook: Notebook) -> tuple[str, str, str]:
    """Whitespace after ``[``, between cells, and before ``]`` of the cells array."""
    text = notebook.text
    start, end = notebook.cells_span
    cells = notebook.cells
    if cells:
        lead = text[start + 1 : cells[0].span[0]]
        trail = text[cells[-1].span[1] : end - 1]
        sep = text[cells[0].span[1] : cells[1].span[0]] if len(cells) > 1 else "," + lead
        return lead, sep, trail
    unit = notebook.layout.unit
    if unit is None:
        return "", notebook.layout.item_separator, ""
    key_indent = _line_indent(text, start)
    return "\n" + key_indent + unit, ",\n" + key_indent + unit, "\n" + key_indent


def _line_indent(text: str, at: int) -> str:
    line_start = text.rfind("\n", 0, at) + 1
    indent = re.match(r"[ \t]*", text[line_start:at])
    return indent.group(0) if indent else ""


def _dumps(value: Any, layout: Layout, indent: str) -> str:
    """``value`` as JSON in the file's style, continuation lines indented by ``indent``."""
    if layout.unit is None:
        return json.dumps(
            value,
            ensure_ascii=_ascii(value, layout),
            separators=(layout.item_separator, layout.key_separator),
            sort_keys=False,
        )
    dumped = json.dumps(value, indent=layout.unit, ensure_ascii=_ascii(value, layout))
    return dumped.replace("\n", layout.newline + indent)


def _ascii(value: Any, layout: Layout) -> bool:
    """Escape non-ASCII as the file does; always for a lone surrogate (no UTF-8 for it)."""
    if layout.ensure_ascii:
        return True
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _source_value(source: str, as_list: bool) -> str | list[str]:
    return source.splitlines(keepends=True) if as_list else source


def _edited_cell(text: str, cell: Cell, source: str, layout: Layout) -> str:
    start = cell.span[0]
    chunk = text[cell.span[0] : cell.span[1]]
    changes: list[tuple[tuple[int, int], str]] = []
    source_span = cell.values["source"]
    indent = _line_indent(text, source_span[0])
    changes.append(
        (source_span, _dumps(_source_value(source, cell.source_is_list), layout, indent))
    )
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
        indent = _line_indent(notebook.text, notebook.cells[0].span[0])
    else:
        indent = _line_indent(notebook.text, start) + (notebook.layout.unit or "")
    return _dumps(cell, notebook.layout, indent)


# -- validation -------------------------------------------------------------------------


def validate_json(text: str, rel: str) -> ToolError | None:
    """NOTEBOOK_INVALID unless ``text`` is JSON valid against the nbformat schema."""
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as exc:
        reason = "nested too deeply" if isinstance(exc, RecursionError) else str(exc)
        return ToolError(
            NOTEBOOK_INVALID, f"{rel} would not be valid JSON ({reason}); nothing was written"
        )
    problem = _id_problem(data)
    if problem:
        return ToolError(
            NOTEBOOK_INVALID, f"{rel} would not be a valid notebook: {problem}; nothing was written"
        )
    import nbformat
    from nbformat.validator import ValidationError

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            node = nbformat.from_dict(data)  # type: ignore[no-untyped-call]
            nbformat.validate(node, version=4)
    except ValidationError as exc:
        where = "/".join(str(p) for p in exc.absolute_path) if hasattr(exc, "absolute_path") else ""
        detail = str(exc.message if hasattr(exc, "message") else exc).splitlines()[0][:300]
        at = f" at {where}" if where else ""
        return ToolError(
            NOTEBOOK_INVALID,
            f"{rel} would not be a valid notebook{at}: {detail}; nothing was written",
        )
    except Exception as exc:  # nbformat rejects odd shapes with other errors too
        return ToolError(
            NOTEBOOK_INVALID, f"{rel} would not be a valid notebook ({exc!r}); nothing was written"
        )
    return None


def _id_problem(data: Any) -> str | None:
    """nbformat's validator repairs missing and repeated ids on its own copy and says
    nothing; a notebook we write must not need the repair."""
    if not isinstance(data, dict) or not isinstance(data.get("cells"), list):
        return None  # the schema check names this
    minor = data.get("nbformat_minor")
    if not isinstance(minor, int) or minor < 5:
        return None
    seen: set[str] = set()
    for position, cell in enumerate(data["cells"], 1):
        if not isinstance(cell, dict):
            return None
        cell_id = cell.get("id")
        if not isinstance(cell_id, str) or not _valid_id(cell_id):
            return f"cell {position} has no valid id (nbformat 4.5 requires one)"
        if cell_id in seen:
            return f"the id {cell_id!r} is used by two cells"
        seen.add(cell_id)
    return None


def check_notebook(rel: str, before: str | None, after: str, raw_after: bytes) -> ToolError | None:
    """Checks for a staged notebook change: valid nbformat, and, in a Python notebook, no
    new Python syntax error in a code cell (the views ``before``/``after``; ``before``
    None: a new file, whose text is its JSON, all of whose code cells are new)."""
    text = raw_after.decode("utf-8-sig", errors="replace")
    error = validate_json(text, rel)
    if error is not None:
        return error
    try:
        notebook = Notebook.parse(text, rel)
    except ToolFailure as failure:
        return failure.error
    if not notebook.is_python:
        return None
    return check_cells(rel, "" if before is None else before, notebook.view())


def check_cells(rel: str, before: str, after: str) -> ToolError | None:
    """SYNTAX_ERROR when an edited or new code cell has a Python error it did not have."""
    marker = _marker_of(after) or _marker_of(before) or BASE_MARKER
    old = {key: source for key, kind, source in _safe_parse(before, marker) if kind == "code"}
    for key, kind, source in _safe_parse(after, marker):
        if kind != "code" or old.get(key) == source:
            continue
        problem = python_error(source)
        if problem is None:
            continue
        if key in old and python_error(old[key]) is not None:
            continue  # already broken; the edit does not make it worse in kind
        line, message = problem
        return ToolError(
            SYNTAX_ERROR,
            f"the edit makes cell {key} of {rel} invalid Python: line {line}: {message}; "
            "nothing was written",
            (
                Candidate(
                    f"{rel}::cell:{key}", line, _line_of(source, line), note="in the staged cell"
                ),
            ),
            line,
        )
    return None


def _safe_parse(view: str, marker: str) -> list[ViewCell]:
    try:
        return parse_view(view, marker)
    except ValueError:
        return []


def _marker_of(view: str) -> str | None:
    found = re.match(r"(#%%+) cell ", view)
    return found.group(1) if found else None


def marker_of(view: str) -> str:
    return _marker_of(view) or BASE_MARKER


def _line_of(source: str, line: int) -> str:
    lines = source.split("\n")
    return lines[line - 1] if 0 < line <= len(lines) else ""


# IPython syntax that is not Python: a line magic or shell escape (`%time f()`, `!ls`), one
# assigned (`files = !ls`, `t = %timeit -o f()`), and help (`len?`, `??len`).
_MAGIC = re.compile(r"^(\s*)(?:[%!]|[\w.]+\s*=\s*[%!])")
_HELP = re.compile(r"^(\s*)(?:\?\??[\w.]+|[\w.]+\?\??)\s*$")


def python_error(source: str) -> tuple[int, str] | None:
    """The first Python syntax error of a code cell, IPython's syntax aside (a cell
    magic such as ``%%bash`` is not Python: no error). The cell is compiled as it is
    first, so valid Python (a ``%`` continuation line) is never masked."""
    if source.lstrip().startswith("%%"):
        return None
    source = textwrap.dedent(source)
    error = _compile_error(source)
    if error is None:
        return None
    masked = "\n".join(
        _HELP.sub(lambda m: m.group(1) + "pass", _MAGIC.sub(lambda m: m.group(1) + "pass #", line))
        for line in source.split("\n")
    )
    return _compile_error(masked) if masked != source else error


def _compile_error(source: str) -> tuple[int, str] | None:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compile(
                source,
                "<cell>",
                "exec",
                flags=ast.PyCF_ONLY_AST | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT,
                dont_inherit=True,
            )
    except SyntaxError as exc:
        return exc.lineno or 1, exc.msg
    except (ValueError, RecursionError, MemoryError) as exc:
        return 1, str(exc) or type(exc).__name__
    return None


def cell_changes(before: str, after: str) -> dict[str, str]:
    """What a change does to each cell it touches, by key: "edit", "delete" or "insert"."""
    marker = _marker_of(before) or _marker_of(after) or BASE_MARKER
    old = {key: source for key, _, source in _safe_parse(before, marker)}
    new = {key: source for key, _, source in _safe_parse(after, marker)}
    changes = {key: "delete" for key in old if key not in new}
    for key, source in new.items():
        if key not in old:
            changes[key] = "insert"
        elif old[key] != source:
            changes[key] = "edit"
    return changes


def selection_problem(before: str, full: str, selected: str) -> str | None:
    """Why some hunks of the change ``before`` -> ``full`` do not make a change of whole
    cells (None when they do): hunks are hunks of the text view, and a line diff may pair
    lines across cells, so a selection could delete or edit a cell the change never did."""
    wanted = cell_changes(before, full)
    for key, kind in cell_changes(before, selected).items():
        if wanted.get(key) != kind:
            done = wanted.get(key, "leave alone")
            return f"those hunks would {kind} cell {key}, which the edit does not {kind} (it would {done} it)"
    return None


def touched_cells(before: str, after: str) -> list[str]:
    """Keys of cells whose source the change edits or that it deletes."""
    marker = _marker_of(before) or _marker_of(after) or BASE_MARKER
    new = {key: source for key, _, source in _safe_parse(after, marker)}
    return [key for key, _, source in _safe_parse(before, marker) if new.get(key) != source]


# -- what a read shows of outputs -------------------------------------------------------

OUTPUT_TEXT_CHARS = 600
OUTPUT_TEXT_LINES = 12


def summarize_outputs(outputs: Sequence[dict[str, Any]], limit: int = 10) -> list[str]:
    """One bounded line (or a few) per output: stream text cut, errors as ``ename: evalue``,
    images as ``[image/png 640x480]``."""
    lines: list[str] = []
    for output in outputs[:limit]:
        kind = output.get("output_type")
        if kind == "stream":
            lines.append(f"{output.get('name', 'stdout')}: " + _bounded(_text(output.get("text"))))
        elif kind == "error":
            lines.append(
                f"error: {output.get('ename', '?')}: {_bounded(str(output.get('evalue', '')), 300)}"
            )
        elif kind in ("execute_result", "display_data"):
            lines.append(_bundle(output))
        else:
            lines.append(f"[{kind}]")
    if len(outputs) > limit:
        lines.append(f"[{len(outputs) - limit} more outputs]")
    return lines


def _text(value: Any) -> str:
    if isinstance(value, list):
        return "".join(str(v) for v in value)
    return str(value or "")


def _bounded(text: str, chars: int = OUTPUT_TEXT_CHARS) -> str:
    lines = text.rstrip("\n").split("\n")
    cut = "\n".join(lines[:OUTPUT_TEXT_LINES])
    more = len(lines) - OUTPUT_TEXT_LINES
    if len(cut) > chars:
        cut = cut[:chars] + f" [... {len(text) - chars} more chars]"
    elif more > 0:
        cut += f"\n[... {more} more lines]"
    return cut


def _bundle(output: dict[str, Any]) -> str:
    data = output.get("data") or {}
    metadata = output.get("metadata") or {}
    shown: list[str] = []
    for mime, value in data.items():
        if mime.startswith("image/") and mime != "image/svg+xml":
            size = _image_size(mime, _text(value), metadata.get(mime) or {})
            shown.append(f"[{mime} {size}]" if size else f"[{mime}]")
    if "text/plain" in data:
        shown.append(_bounded(_text(data["text/plain"])))
    elif not shown:
        shown.extend(f"[{mime}, {len(_text(data[mime]))} chars]" for mime in list(data)[:3])
    prefix = "result" if output.get("output_type") == "execute_result" else "display"
    return f"{prefix}: " + " ".join(shown)


def _image_size(mime: str, b64: str, metadata: dict[str, Any]) -> str | None:
    width, height = metadata.get("width"), metadata.get("height")
    if isinstance(width, int) and isinstance(height, int):
        return f"{width}x{height}"
    try:
        head = base64.b64decode(b64[:65536].replace("\n", "")[: 65536 - 65536 % 4], validate=False)
    except ValueError:
        return None
    if head.startswith(b"\x89PNG") and len(head) >= 24:
        return f"{int.from_bytes(head[16:20], 'big')}x{int.from_bytes(head[20:24], 'big')}"
    if head[:6] in (b"GIF87a", b"GIF89a") and len(head) >= 10:
        return f"{int.from_bytes(head[6:8], 'little')}x{int.from_bytes(head[8:10], 'little')}"
    if head.startswith(b"\xff\xd8"):
        return _jpeg_size(head)
    return None


def _jpeg_size(data: bytes) -> str | None:
    at = 2
    while at + 9 < len(data):
        if data[at] != 0xFF:
            return None
        marker = data[at + 1]
        length = int.from_bytes(data[at + 2 : at + 4], "big")
        if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):
            height = int.from_bytes(data[at + 5 : at + 7], "big")
            width = int.from_bytes(data[at + 7 : at + 9], "big")
            return f"{width}x{height}"
        at += 2 + length
    return None


__all__ = [
    "Cell",
    "Notebook",
    "NotebookFile",
    "check_cells",
    "check_notebook",
    "decode_file",
    "is_notebook",
    "marker_of",
    "parse_view",
    "python_error",
    "render_view",
    "sha256",
    "summarize_outputs",
    "touched_cells",
    "validate_json",
    "view_location",
    "write_view",
]
