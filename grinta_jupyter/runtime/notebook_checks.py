"""Checks a staged notebook change must pass before it can be committed.

- ``validate_json``: the JSON text is valid against the nbformat schema, with
  valid, unique cell ids from nbformat 4.5 on (nbformat's validator would
  silently repair them on its own copy);
- ``check_notebook`` / ``check_cells``: in a Python notebook, an edited or new
  code cell has no Python syntax error it did not have before
  (``python_error``: IPython's magics, shell escapes and help are not errors);
- ``cell_changes``, ``touched_cells`` and ``selection_problem``: which cells a
  change between two cell views edits, inserts or deletes, and whether a
  selection of its hunks still changes whole cells.

Failures are values (``ToolError`` with NOTEBOOK_INVALID or SYNTAX_ERROR),
never exceptions; nothing here writes. Views are those of
``runtime/notebook.py``.
"""

from __future__ import annotations

import ast
import hashlib
import importlib.util
import json
import os
import re
import textwrap
import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from grinta_jupyter.runtime import pyast
from grinta_jupyter.runtime.errors import (
    NOTEBOOK_INVALID,
    SYNTAX_ERROR,
    Candidate,
    ToolError,
    ToolFailure,
)
from grinta_jupyter.runtime.notebook import (
    BASE_MARKER,
    Notebook,
    ViewCell,
    choose_marker,
    parse_view,
    render_view,
    valid_id,
)


def validate_json(text: str, rel: str) -> ToolError | None:
    """NOTEBOOK_INVALID unless ``text`` is JSON valid against the nbformat schema."""
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as exc:
        reason = "nested too deeply" if isinstance(exc, RecursionError) else str(exc)
        return ToolError(
            NOTEBOOK_INVALID, f"{rel} would not be valid JSON ({reason}); nothing was written"
        )
    problem = _version_problem(data) or _id_problem(data)
    if problem:
        return ToolError(
            NOTEBOOK_INVALID, f"{rel} would not be a valid notebook: {problem}; nothing was written"
        )
    if _passes_the_schema(data):
        return None
    import nbformat
    from nbformat.validator import ValidationError

    try:
        with pyast.quietly():
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


# nbformat's schema for each nbformat 4 minor version (its own files), compiled with
# fastjsonschema, the validator nbformat itself uses by default. Importing nbformat imports
# jsonschema, whose format checkers import rfc3987-syntax, which builds its IRI grammars at
# import: 1-3 s of processor before the first notebook edit could be checked, and the GIL
# contended with the kernel all that time. A notebook these pass is one nbformat passes
# (the same schema, and its ids were checked above: nbformat would only have repaired
# them); anything else still goes to nbformat, for its verdict and its best message.
_SCHEMAS: dict[int, Callable[[Any], Any] | None] = {}
_SCHEMAS_LOCK = threading.Lock()


def _passes_the_schema(data: Any) -> bool:
    """True when ``data`` passes nbformat's own schema for its minor version, checked
    without importing nbformat; False when it fails, or when that cannot be told so (a
    minor version newer than the schemas, another validator chosen by
    ``NBFORMAT_VALIDATOR``, no fastjsonschema)."""
    if os.environ.get("NBFORMAT_VALIDATOR", "fastjsonschema") != "fastjsonschema":
        return False
    if _nested_deeper_than(data, _FAST_DEPTH):
        return False  # nbformat's reader recurses: past a few hundred levels it refuses
    minor = data["nbformat_minor"]  # a whole number (``_version_problem``)
    with _SCHEMAS_LOCK:
        if minor not in _SCHEMAS:
            _SCHEMAS[minor] = _compiled_schema(minor)
        check = _SCHEMAS[minor]
    if check is None:
        return False
    try:
        check(data)
    except Exception:  # noqa: BLE001 - invalid, or too odd for the fast check: nbformat decides
        return False
    return True


# Deeper than this, nbformat decides: its ``from_dict`` recurses two frames a level and
# refuses (RecursionError) what the schema alone passes, e.g. metadata 500 levels deep.
# A notebook as people write them nests under 20.
_FAST_DEPTH = 64


def _nested_deeper_than(data: Any, limit: int) -> bool:
    """Whether ``data`` (parsed JSON) nests objects and arrays more than ``limit`` deep;
    walked without recursion."""
    stack: list[tuple[Any, int]] = [(data, 1)]
    while stack:
        value, depth = stack.pop()
        children: Iterable[Any]
        if isinstance(value, dict):
            children = value.values()
        elif isinstance(value, list):
            children = value
        else:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))
    return False


def _compiled_schema(minor: int) -> Callable[[Any], Any] | None:
    try:
        import fastjsonschema

        spec = importlib.util.find_spec("nbformat")  # finds the package without importing it
        if spec is None or spec.origin is None:
            return None
        path = Path(spec.origin).parent / "v4" / f"nbformat.v4.{minor}.schema.json"
        schema = json.loads(path.read_text(encoding="utf-8"))
        return fastjsonschema.compile(schema)
    except Exception:  # noqa: BLE001 - no such schema (a future minor), or no fastjsonschema
        return None


def _already_invalid(rel: str, raw_before: bytes | None) -> ToolError | None:
    """NOTEBOOK_INVALID saying the file on disk is invalid as it is, if it is."""
    if raw_before is None:
        return None
    found = validate_json(raw_before.decode("utf-8-sig", errors="replace"), rel)
    if found is None:
        return None
    problem = found.message.replace(" would not be ", " is not ", 1)
    problem = problem.removesuffix("; nothing was written")
    return ToolError(
        NOTEBOOK_INVALID,
        f"{problem}, as it is on disk already, and grinta writes no notebook that would stay "
        "invalid; nothing was written. Ask the user to repair it (opening and saving it in "
        "JupyterLab gives every cell a valid, unique id)",
    )


def _version_problem(data: Any) -> str | None:
    """The format fields, which nbformat's reader asserts on (a bare ``AssertionError``
    that names nothing) before its validator could say what is wrong."""
    if not isinstance(data, dict):
        return f"its JSON is {type(data).__name__ if data is not None else 'null'}, not an object"
    for field in ("nbformat", "nbformat_minor"):
        value = data.get(field)
        if type(value) is not int or value < 0:
            return f"its {field} is {json.dumps(value)[:40]}, not a whole number"
    return None


def _id_problem(data: Any) -> str | None:
    """nbformat's validator repairs missing and repeated ids on its own copy and says
    nothing; a notebook we write must not need the repair."""
    if not isinstance(data, dict) or not isinstance(data.get("cells"), list):
        return None  # the schema check names this
    minor = data.get("nbformat_minor")
    if not isinstance(minor, int) or minor < 5:
        return None
    seen: dict[str, int] = {}
    for position, cell in enumerate(data["cells"], 1):
        if not isinstance(cell, dict):
            return None
        cell_id = cell.get("id")
        if not isinstance(cell_id, str) or not valid_id(cell_id):
            return f"cell {position} has no valid id (nbformat 4.5 requires one)"
        if cell_id in seen:
            return f"the id {cell_id!r} is used by two cells (cells {seen[cell_id]} and {position})"
        seen[cell_id] = position
    return None


def check_notebook(
    rel: str, before: str | None, after: str, raw_after: bytes, raw_before: bytes | None = None
) -> ToolError | None:
    """Checks for a staged notebook change: valid nbformat, and, in a Python notebook, no
    new Python syntax error in a code cell (the views ``before``/``after``; ``before``
    None: a new file, whose text is its JSON, all of whose code cells are new).

    A notebook invalid on disk already (``raw_before``) is refused as such, with what is
    wrong with it as it is: the edit did not break it, and the remedy is a repair."""
    text = raw_after.decode("utf-8-sig", errors="replace")
    error = validate_json(text, rel)
    if error is not None:
        return _already_invalid(rel, raw_before) or error
    try:
        notebook = Notebook.parse(text, rel)
    except ToolFailure as failure:
        return failure.error
    if not notebook.is_python:
        return None
    if before is None or notebook.has_ids:
        return check_cells(rel, "" if before is None else before, notebook.view())
    # Without ids a cell's key is its position, which an insert or a delete shifts: the
    # written cells are named as in the staged view ``after`` (the same cells, in order),
    # or a cell already broken would read as newly broken once it moved.
    written = [(c.key, c.cell_type, c.source) for c in notebook.cells]
    staged = _view_cells(after)
    if len(staged) == len(written):
        written = [
            (key, kind, source)
            for (key, _, _), (_, kind, source) in zip(staged, written, strict=True)
        ]
    return check_cells(rel, before, render_view(written, choose_marker(s for _, _, s in written)))


def check_cells(rel: str, before: str, after: str) -> ToolError | None:
    """SYNTAX_ERROR when an edited or new code cell has a Python error it did not have."""
    old = {key: source for key, kind, source in _view_cells(before) if kind == "code"}
    for key, kind, source in _view_cells(after):
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


def _view_cells(view: str) -> list[ViewCell]:
    """The cells of ``view``, read with its own marker: the views before and after a change
    may differ in it (a source line starting with ``#%% cell`` added or removed)."""
    try:
        return parse_view(view, _marker_of(view) or BASE_MARKER)
    except ValueError:
        return []


def _marker_of(view: str) -> str | None:
    found = re.match(r"(#%%+) cell ", view)
    return found.group(1) if found else None


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
        with pyast.quietly():
            pyast.parse(source, "<cell>", ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    except SyntaxError as exc:
        return exc.lineno or 1, exc.msg
    except (ValueError, RecursionError, MemoryError) as exc:
        return 1, str(exc) or type(exc).__name__
    return None


def cleared_outputs(notebook: Notebook, after: str) -> str:
    """What writing the view ``after`` does to outputs, in words for the reviewer (the
    diff shows sources only): the edited code cells that lose outputs or a count."""
    changes = cell_changes(notebook.view(), after)
    lost = [
        cell
        for cell in notebook.cells
        if changes.get(cell.key) == "edit"
        and cell.cell_type == "code"
        and (cell.outputs or cell.execution_count is not None)
    ]
    if not lost:
        return ""
    named = ", ".join(
        f"{c.key} ({len(c.outputs)} output{'s' if len(c.outputs) != 1 else ''})" for c in lost[:5]
    )
    more = f" and {len(lost) - 5} more" if len(lost) > 5 else ""
    return f"clears the outputs and execution count of edited cell{'s' if len(lost) > 1 else ''} {named}{more}"


def cell_changes(before: str, after: str) -> dict[str, str]:
    """What a change does to each cell it touches, by key: "edit", "delete" or "insert"."""
    old = {key: source for key, _, source in _view_cells(before)}
    new = {key: source for key, _, source in _view_cells(after)}
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


def source_digest(source: str) -> str:
    """What names a cell by its source (``Settings.protected_cells``' ``path::code:``): the
    SHA-256 of its text without trailing whitespace (a front end may keep a final newline the
    file does not)."""
    return hashlib.sha256(source.rstrip().encode("utf-8", "surrogatepass")).hexdigest()


def cell_sources(view: str) -> dict[str, str]:
    """Each cell's source in ``view``, by its key (its id, or its number without one)."""
    return {key: source for key, _, source in _view_cells(view)}


def touched_cells(before: str, after: str) -> list[str]:
    """Keys of cells whose source the change edits or that it deletes."""
    new = {key: source for key, _, source in _view_cells(after)}
    return [key for key, _, source in _view_cells(before) if new.get(key) != source]


__all__ = [
    "cell_changes",
    "cell_sources",
    "source_digest",
    "check_cells",
    "check_notebook",
    "python_error",
    "selection_problem",
    "touched_cells",
    "validate_json",
]
