"""Notebook cells for the tools: addressing them, reading them, editing within them.

A notebook is staged as its cell view (runtime/notebook.py), so every edit
here reads the view's cells, changes some, and renders the view again; the
runtime writes the JSON back at commit.

Addresses: ``path.ipynb::cell:<id>`` names a cell by its nbformat id (a
unique prefix of it will do; a prefix shared by several cells is ambiguous
and refused with the candidates). A notebook without ids (before nbformat
4.5) names its cells by position: ``cell:3``. Definitions inside code cells
are symbols like any other (``path.ipynb::load_data``).

String edits apply within cell sources only: ``old_string`` must lie in one
cell, a string found in two cells is ambiguous, and no edit can touch a cell
header (the structure changes only through ``edit_symbols`` on a cell).
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from grinta_jupyter.runtime.errors import (
    AMBIGUOUS_MATCH,
    AMBIGUOUS_SYMBOL,
    FILE_TOO_LARGE,
    INVALID_ARGS,
    NOT_FOUND,
    NOTEBOOK_INVALID,
    SYMBOL_NOT_FOUND,
    Candidate,
    ToolError,
    ToolFailure,
    fail,
)
from grinta_jupyter.runtime.files import size_text
from grinta_jupyter.runtime.notebook import (
    Notebook,
    NotebookFile,
    ViewCell,
    header_pattern,
    parse_view,
    render_view,
    view_location,
)
from grinta_jupyter.runtime.outputs import summarize_outputs
from grinta_jupyter.runtime.resolution import Resolution
from grinta_jupyter.runtime.secrets import before_cut
from grinta_jupyter.runtime.textfile import TextFile
from grinta_jupyter.tools.base import Settings, StagedFile, ToolContext

if TYPE_CHECKING:
    from grinta_jupyter.code.symbols import Symbol
    from grinta_jupyter.tools.matching import Naming

CELL_PREFIX = "cell:"
MAX_LISTED = 10
CellAction = Literal["replace", "delete", "insert_before", "insert_after"]


def is_cell_address(qualname: str) -> bool:
    return qualname.startswith(CELL_PREFIX)


@dataclass(frozen=True)
class CellTarget:
    """The one cell an address names."""

    path: str
    key: str
    cell_type: str
    source: str
    position: int  # 1-based, in the notebook as staged
    total: int

    @property
    def address(self) -> str:
        return f"{self.path}::cell:{self.key}"


def notebook_file(staged: StagedFile) -> NotebookFile | None:
    original = staged.original
    return original if isinstance(original, NotebookFile) else None


def staged_cells(staged: StagedFile) -> list[ViewCell]:
    notebook = _require(staged)
    return parse_view(staged.text, notebook.nb.marker)


def set_cells(staged: StagedFile, cells: Sequence[ViewCell]) -> None:
    """Stage ``cells`` as the notebook's new cell view. A source line that would read as a
    cell header is refused: it would split the cell in two when the view is written back."""
    marker = _require(staged).nb.marker
    header = header_pattern(marker)
    for key, _, source in cells:
        line = next((line for line in source.split("\n") if header.match(line)), None)
        if line is not None:
            raise fail(
                NOTEBOOK_INVALID,
                f"the new source of cell {key} has a line that reads as a cell header ({line!r}); "
                "change that line",
            )
    staged.text = render_view(cells, marker)


def _require(staged: StagedFile) -> NotebookFile:
    notebook = notebook_file(staged)
    if notebook is None:
        raise TypeError(f"{staged.rel} is not staged as a notebook")
    return notebook


def cell_candidate(path: str, key: str, kind: str, source: str) -> Candidate:
    return Candidate(
        f"{path}::cell:{key}",
        1,
        source.split("\n", 1)[0][:160],
        kind=f"{kind} cell",
        name=f"cell:{key}",
    )


# -- resolving a cell address -------------------------------------------------------------


def resolve_cell(
    ctx: ToolContext, path: str, qualname: str, *, write: bool
) -> tuple[CellTarget, Resolution]:
    """The one cell ``path::cell:<key>`` names (as staged so far in this proposal), or a
    ToolFailure with candidates (carrying the failed resolution)."""
    address = f"{path}::{qualname}"
    key = qualname[len(CELL_PREFIX) :].strip()
    if write:
        staged = ctx.open(path)
        file = notebook_file(staged)
        if file is None:
            raise fail(
                INVALID_ARGS, f"{staged.rel} is not a notebook; cells exist only in .ipynb files"
            )
        cells = parse_view(staged.text, file.nb.marker)
        has_ids, rel = file.nb.has_ids, staged.rel
    else:
        where, textfile = ctx.read_file(path)
        if not isinstance(textfile, NotebookFile):
            raise fail(
                INVALID_ARGS, f"{where.rel} is not a notebook; cells exist only in .ipynb files"
            )
        cells = parse_view(textfile.text, textfile.nb.marker)
        has_ids, rel = textfile.nb.has_ids, where.rel
    if not key and write:  # no cell named: the notebook itself, for an insert at an end
        target = CellTarget(rel, "", "", "", 0, len(cells))
        return target, Resolution(
            address,
            f"{rel} (the notebook)",
            "no cell named: an insert goes at the start or the end",
        )
    exact = [(n, c) for n, c in enumerate(cells, 1) if c[0] == key]
    found = exact or (
        [(n, c) for n, c in enumerate(cells, 1) if c[0].startswith(key)] if key and has_ids else []
    )
    # A key of digits that is no id may mean the cell at that position (a read shows
    # "[cell 3/7]"), or an id that starts so: never taken for either, that cell is offered.
    positional = has_ids and not exact and key.isdigit() and 1 <= int(key) <= len(cells)
    if positional:
        at = (int(key), cells[int(key) - 1])
        found = [at, *(f for f in found if f[0] != at[0])]
    if len(found) == 1 and not positional:
        position, (cell_key, kind, source) = found[0]
        how = "the cell with this id" if exact else "the only cell whose id starts so"
        if not has_ids:
            how = "the cell at this position (the notebook has no cell ids)"
        target = CellTarget(rel, cell_key, kind, source, position, len(cells))
        return target, Resolution(address, f"{rel}::cell:{cell_key} ({kind} cell {position})", how)
    if not found:
        # Ids are case-sensitive (nbformat's are): one that differs only in case is never
        # taken, but offered first (a similarity ratio on short ids missed it).
        folded = key.casefold()
        by_case = [c for c in cells if key and c[0].casefold().startswith(folded)]
        close = difflib.get_close_matches(key, [c[0] for c in cells], n=5, cutoff=0.4)
        near = by_case[:MAX_LISTED] or [c for c in cells if c[0] in close] or cells[:5]
        hint = (
            "read the notebook for the cell ids"
            if cells
            else (f"it has no cells: insert_after '{rel}::cell:' adds the first")
        )
        if by_case:
            hint = "cell ids are case-sensitive: give the id as the candidates spell it"
        error = ToolError(
            SYMBOL_NOT_FOUND,
            f"{rel} has no cell {key!r} ({len(cells)} cells); {hint}",
            tuple(cell_candidate(rel, k, kind, s) for k, kind, s in near),
        )
        raise ToolFailure(error, (Resolution(address, None, "no cell has this id"),))
    listed = found[:MAX_LISTED]
    why = "writes never guess" if write else "reads return the candidates"
    what = (
        f"{address!r} is no cell id; it may mean cell {key} of {len(cells)} (by position)"
        + (f" or {len(found) - 1} whose id starts with {key!r}" if len(found) > 1 else "")
        if positional
        else f"{address!r} names {len(found)} cells"
    )
    error = ToolError(
        AMBIGUOUS_SYMBOL,
        f"{what}; give the full cell id",
        tuple(cell_candidate(rel, k, kind, s) for _, (k, kind, s) in listed),
        more=len(found) - len(listed),
    )
    resolution = Resolution(
        address,
        None,
        f"ambiguous: {len(found)} cells; {why}",
        tuple(f"{rel}::cell:{k}" for _, (k, _, _) in listed),
    )
    raise ToolFailure(error, (resolution,))


# -- edits ----------------------------------------------------------------------------------


def edit_cell(
    staged: StagedFile,
    target: CellTarget,
    action: CellAction,
    new_source: str | None,
    cell_type: Literal["code", "markdown"] | None,
) -> str:
    """Replace, delete, or insert a cell next to ``target``; returns what was done."""
    file = _require(staged)
    cells = staged_cells(staged)
    if not target.key:  # the notebook itself: insert_before is the start, insert_after the end
        if not action.startswith("insert"):
            raise fail(
                INVALID_ARGS,
                f"'{target.path}::cell:' names no cell: only insert_before (at the start) and "
                f"insert_after (at the end) take it; to {action} a cell, name it",
            )
        index = -1 if action == "insert_before" else len(cells) - 1
    else:
        index = next(i for i, c in enumerate(cells) if c[0] == target.key)
    # A cell's source has no final newline (as Jupyter saves it): one sent by the model
    # would show as an empty last line.
    source = (new_source or "").replace("\r\n", "\n").removesuffix("\n")
    if action == "replace":
        if cell_type is not None and cell_type != target.cell_type:
            raise fail(
                INVALID_ARGS,
                f"replace keeps the cell's type ({target.cell_type}); to change it, delete the cell "
                f"and insert a {cell_type} cell",
            )
        # In the cell's own line ends: a cell saved with CRLF stays so (as a string edit
        # keeps it), and its unchanged lines stay unchanged in the diff.
        cells[index] = (target.key, target.cell_type, _in_style(source, target.source))
        done = f"replace {target.address}"
    elif action == "delete":
        del cells[index]
        done = f"delete {target.address}"
    else:
        kind = cell_type or "code"
        taken = [c[0] for c in cells]
        # Without ids a cell is named by position once written; until then (later edits
        # of the same call) by a name of its own, or two inserts could not be told apart.
        key = file.nb.fresh_id(taken) if file.nb.has_ids else _unused_name(taken)
        at = index if action == "insert_before" else index + 1
        cells.insert(at, (key, kind, source))
        side = "before" if action == "insert_before" else "after"
        where = f"{side} {target.address}"
        if not target.key:
            where = f"at the {'start' if action == 'insert_before' else 'end'} of {target.path}"
        done = f"insert a {kind} cell {where}" + (
            f" (id {key})" if file.nb.has_ids else f" (cell:{key} until written)"
        )
    set_cells(staged, cells)
    return done


def _unused_name(taken: Sequence[str]) -> str:
    """``new``, ``new-2``, ...: the first a cell of the staged view does not have."""
    number = 1
    while (name := "new" if number == 1 else f"new-{number}") in taken:
        number += 1
    return name


def edit_definition(
    staged: StagedFile,
    symbol: Symbol,
    action: CellAction,
    new_source: str | None,
) -> str:
    """A symbol edit on a definition inside a code cell: the cell's source is edited as a
    Python file of its own (formatting kept, as for ``.py`` files)."""
    from grinta_jupyter.code.edits import (
        SymbolEditError,
        delete_symbol,
        insert_symbol,
        replace_symbol,
    )
    from grinta_jupyter.tools.symbols import locate_in_staged

    file = _require(staged)
    cells = staged_cells(staged)
    index = next((i for i, c in enumerate(cells) if c[0] == symbol.cell), None)
    if index is None:
        raise fail(
            SYMBOL_NOT_FOUND,
            f"the cell of {symbol.qualname} is gone after an earlier edit in this call",
        )
    key, kind, source = cells[index]
    on_disk = next((c.source for c in file.nb.cells if c.key == key), source)
    cell_file = StagedFile(staged.path, TextFile(on_disk, False, "\n", ""), source)
    located = locate_in_staged(cell_file, symbol)
    try:
        if action == "replace":
            source = replace_symbol(source, located, new_source or "")
        elif action == "delete":
            source = delete_symbol(source, located)
        else:
            side: Literal["before", "after"] = "before" if action == "insert_before" else "after"
            source = insert_symbol(source, located, new_source or "", side)
    except SymbolEditError as exc:
        raise fail(exc.code, exc.message) from None
    cells[index] = (key, kind, source)
    set_cells(staged, cells)
    return f"{action} {symbol.qualname} in {staged.rel}::cell:{key}"


def _in_style(text: str, source: str) -> str:
    """``text`` (its line ends LF) with the line ends of the cell ``source``: CRLF in a cell
    whose every line ends so (a notebook saved by a tool that kept them), whose read shows
    plain lines; else as it is."""
    crlf = "\r\n" in source and source.count("\n") == source.count("\r\n")
    return text.replace("\n", "\r\n") if crlf else text


def replace_in_cells(
    staged: StagedFile,
    old: str,
    new: str,
    replace_all: bool,
    max_chars: int | None,
    naming: Naming,
) -> int:
    """``replace_in`` for a notebook: matches count within cell sources only."""
    from grinta_jupyter.tools.matching import near_misses

    needle, replacement = old.replace("\r\n", "\n"), new.replace("\r\n", "\n")
    cells = staged_cells(staged)
    counts = [source.count(_in_style(needle, source)) for _, _, source in cells]
    count = sum(counts)
    if not count:
        ending = _cell_ending_in(cells, needle)
        if ending is not None:
            # The line copied with its line end, from the last line of a cell: a cell's
            # source has no final newline, so the text is there but for that "\n".
            key, _, source = ending
            line = source[: source.rfind(_in_style(needle.rstrip("\n"), source))].count("\n") + 1
            raise fail(
                NOT_FOUND,
                f"{naming.old} was not found in {staged.rel}: it ends with a line break, and "
                f"cell {key} ends with its text but has no final line break (a cell's "
                "source ends without one); send it, and the replacement, without the final "
                "line break",
                [Candidate(f"{staged.rel}::cell:{key}", line, _cell_snippet(source, line))],
            )
        if needle in staged.text:
            # Found only across a cell header: a header is no text an edit can change, and a
            # near miss "where whitespace differs" on it would send the model retrying.
            raise fail(
                NOT_FOUND,
                f"{naming.old} was found in {staged.rel} only across a cell's end and the next header "
                f"({_require(staged).nb.marker} cell ...), which is not text: it must lie within "
                "one cell's source; edit_symbols on a cell replaces, deletes or inserts cells",
            )
        found, partial = near_misses(staged, old)
        note = f" (near misses were looked for in part of it only: {partial})" if partial else ""
        located = [_in_cell(staged, c) for c in found]
        raise fail(
            NOT_FOUND,
            f"{naming.old} was not found in any cell of {staged.rel}{note}; it must lie within "
            "one cell's source",
            [c for c in located if c is not None],
        )
    if count == 1 and not replace_all:
        # ``str.count`` counts no overlap: ``aa`` occurs twice in ``aaa``, and which one the
        # model meant would be a guess (as in any other file: tools/matching.py).
        at = counts.index(1)
        source = cells[at][2]
        styled = _in_style(needle, source)
        if source.find(styled, source.find(styled) + 1) != -1:
            counts[at] = count = 2
    if count > 1 and not replace_all:
        places = [
            (key, kind, source, n)
            for (key, kind, source), n in zip(cells, counts, strict=True)
            if n
        ]
        candidates = []
        for key, _, source, _ in places[:MAX_LISTED]:
            line = source[: source.find(_in_style(needle, source))].count("\n") + 1
            candidates.append(
                Candidate(f"{staged.rel}::cell:{key}", line, _cell_snippet(source, line))
            )
        where = ", ".join(f"cell {key} ({n}x)" for key, _, _, n in places[:MAX_LISTED])
        raise ToolFailure(
            ToolError(
                AMBIGUOUS_MATCH,
                f"{naming.old} occurs {count} times in {staged.rel} ({where}); {naming.unique}",
                tuple(candidates),
                more=max(0, len(places) - MAX_LISTED),
            )
        )
    edited = [
        (
            key,
            kind,
            source.replace(
                _in_style(needle, source),
                _in_style(replacement, source),
                -1 if replace_all else 1,
            )
            if n
            else source,
        )
        for (key, kind, source), n in zip(cells, counts, strict=True)
    ]
    size = sum(len(source) for _, _, source in edited)
    if max_chars is not None and size > max_chars:
        raise fail(
            FILE_TOO_LARGE,
            f"the edit would make the cells of {staged.rel} about {size_text(size)}, over the "
            f"{size_text(max_chars)} limit; nothing was changed",
        )
    set_cells(staged, edited)
    return count


def _cell_ending_in(cells: Sequence[ViewCell], needle: str) -> ViewCell | None:
    """The first cell whose source ends with ``needle`` but for its final line breaks."""
    bare = needle.rstrip("\n")
    if not bare or bare == needle:
        return None
    return next((cell for cell in cells if cell[2].endswith(_in_style(bare, cell[2]))), None)


def _in_cell(staged: StagedFile, candidate: Candidate) -> Candidate | None:
    """A candidate located in the view, located in its cell instead; None on a header line,
    whose view line number names nothing the model can read or edit."""
    file = _require(staged)
    where = view_location(staged.text, file.nb.marker, candidate.line)
    if where is None:
        return None
    key, line = where
    source = next((s for k, _, s in staged_cells(staged) if k == key), "")
    return Candidate(
        f"{staged.rel}::cell:{key}", line, _cell_snippet(source, line), note=candidate.note
    )


def _cell_snippet(source: str, line: int, around: int = 2) -> str:
    lines = source.split("\n")
    first, last = max(1, line - around), min(len(lines), line + around)
    return "\n".join(f"{n:6}\t{lines[n - 1][:160]}" for n in range(first, last + 1))


# -- reading --------------------------------------------------------------------------------


def render_notebook(
    rel: str, notebook: Notebook, first: int, last: int | None, settings: Settings
) -> str:
    """Cells ``first..last`` (1-based positions): header, numbered source lines, and the
    outputs summarised; cut to the read limits with a note on how to go on."""
    total = len(notebook.cells)
    if total == 0:
        return f"{rel}: notebook with no cells"
    last = min(last or total, total)
    out: list[str] = []
    size = 0
    shown = first - 1
    for position in range(first, last + 1):
        block = _cell_block(rel, notebook, position, settings)
        lines = block.count("\n") + 1
        if out and (
            size + len(block) > settings.read_max_chars
            or len(out) + lines > settings.read_max_lines * 2
        ):
            break
        out.append(block)
        size += len(block) + 1
        shown = position
    head = f"{rel}: notebook, {total} cells (cells {first}-{shown} of {total})"
    text = head + "\n" + "\n".join(out)
    if shown < last:
        text += f"\n[output limit reached: continue with start_line={shown + 1} (a notebook is read by cells)]"
    return text


def _cell_block(rel: str, notebook: Notebook, position: int, settings: Settings) -> str:
    cell = notebook.cells[position - 1]
    count = f" · [{cell.execution_count}]" if cell.execution_count is not None else ""
    lines = [
        f"[cell {position}/{len(notebook.cells)}] {rel}::cell:{cell.key} · {cell.cell_type}{count}"
    ]
    source_lines = cell.source.split("\n") if cell.source else []
    if source_lines and source_lines[-1] == "":
        source_lines.pop()  # a final newline adds no line, as in a file
    rows = _source_rows(source_lines, 1, min(len(source_lines), settings.read_max_lines), settings)
    lines.extend(rows)
    if len(rows) < len(source_lines):  # past the read's line or character limit
        lines.append(
            f"[{len(source_lines) - len(rows)} more lines in this cell: read "
            f"symbol='{rel}::cell:{cell.key}' with start_line={len(rows) + 1}]"
        )
    for summary in summarize_outputs(cell.outputs):
        first, *rest = summary.split("\n")
        lines.append("   out: " + first)
        lines.extend("        " + more for more in rest)
    return "\n".join(lines)


def render_cell_lines(
    rel: str, key: str, source: str, first: int, last: int, settings: Settings
) -> str:
    """Lines ``first..last`` of one cell's source, numbered within the cell; cut to the read
    limits (a line to ``max_line_chars``, all of them to ``read_max_chars``) with a note on
    how to go on.

    Lines are numbered as search numbers them (``split_lines``): a final newline starts no
    line, so a cell saved as ``["x = 1\\n", "y = 2\\n"]`` has two lines, not a third empty
    one that a search hit or an edit could never name."""
    lines = source.split("\n")
    if len(lines) > 1 and lines[-1] == "":
        lines.pop()
    if first > len(lines):
        raise fail(
            INVALID_ARGS, f"start_line {first} is past the end of the cell ({len(lines)} lines)"
        )
    last = min(last, len(lines))
    rows = _source_rows(lines, first, last, settings)
    shown = first + len(rows) - 1
    text = f"{rel}::cell:{key} (lines {first}-{shown} of {len(lines)})\n" + "\n".join(rows)
    if shown < last:
        text += (
            f"\n[output limit reached: continue with symbol='{rel}::cell:{key}' "
            f"start_line={shown + 1}]"
        )
    return text


def _source_rows(lines: list[str], first: int, last: int, settings: Settings) -> list[str]:
    """Numbered rows of ``lines[first - 1 : last]``, each line cut to ``max_line_chars``,
    as many as fit in ``read_max_chars`` (at least one)."""
    limit = settings.max_line_chars
    rows: list[str] = []
    size = 0
    for number in range(first, last + 1):
        line = lines[number - 1]
        if len(line) > limit:
            line = before_cut(line)  # a cut through a secret keeps no piece of it
        if len(line) > limit:
            line = line[:limit] + f" [... {len(line) - limit} more chars]"
        row = f"{number:6}\t{line}"
        if rows and size + len(row) > settings.read_max_chars:
            break
        rows.append(row)
        size += len(row) + 1
    return rows


def outline(
    rel: str, notebook: Notebook, symbols: Sequence[Symbol], settings: Settings | None = None
) -> str:
    """Each cell's first line, and the definitions in code cells under their cell; cut at
    the read limits (a notebook of thousands of cells outlined whole was hundreds of
    thousands of characters for the model) with a note on how to go on."""
    limits = settings or Settings()
    by_cell: dict[str, list[Symbol]] = {}
    for symbol in symbols:
        by_cell.setdefault(symbol.cell, []).append(symbol)
    rows: list[str] = []
    size = 0
    for position, cell in enumerate(notebook.cells, 1):
        block = [f"[cell {position}] cell:{cell.key} {cell.cell_type:<8} {cell.first_line[:100]}"]
        for symbol in by_cell.get(cell.key, []):
            block.append(
                f"    {symbol.start_line:4}-{symbol.end_line:<4} {symbol.kind:<9} "
                f"{symbol.qualname[:200]}"
            )
        chars = sum(len(row) + 1 for row in block)
        if rows and (
            size + chars > limits.read_max_chars or len(rows) + len(block) > limits.read_max_lines
        ):
            rows.append(
                f"[output limit reached at cell {position} of {len(notebook.cells)}: read with "
                f"start_line={position} for the cells from there, or search for a name]"
            )
            break
        rows.extend(block)
        size += chars
    head = f"{rel} outline ({len(notebook.cells)} cells, {len(symbols)} definitions)"
    return head + "\n" + "\n".join(rows)
