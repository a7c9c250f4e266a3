"""read: a file, a line range, a folder listing, a symbol, or a file's outline.

A notebook is read as cells, never as JSON (tools/cells.py): each cell's id,
type, execution count, numbered source and summarised outputs; ``start_line``
and ``end_line`` then count cells, and ``outline`` lists cells and the
definitions in code cells.

Reads may search: a symbol name that resolves uniquely is read directly; an
ambiguous one returns its candidates (the model then names one exactly).
Files are read by the safe reader (runtime/files.py): a FIFO, socket or device
is refused unopened, a file over ``Settings.max_file_bytes`` is refused with
advice; a listing notes what it passed over.
"""

from __future__ import annotations

import os
import stat

from pydantic import Field

from grinta_jupyter.runtime.diffs import quote_path
from grinta_jupyter.runtime.errors import INVALID_ARGS, ToolFailure, fail
from grinta_jupyter.runtime.notebook import NotebookFile, is_notebook
from grinta_jupyter.runtime.secrets import before_cut
from grinta_jupyter.runtime.textfile import split_lines
from grinta_jupyter.runtime.workspace import Skipped, skipped_note
from grinta_jupyter.tools import cells
from grinta_jupyter.tools.base import Args, ReadResult, ToolContext, ToolSpec
from grinta_jupyter.tools.symbols import resolve_symbol

MAX_LISTING = 200
MAX_SKIPS_NAMED = 5


class ReadArgs(Args):
    path: str | None = Field(default=None, description="File or folder.")
    start_line: int | None = Field(default=None, ge=1)
    end_line: int | None = Field(default=None, ge=1)
    symbol: str | None = Field(
        default=None, description="A definition: 'Class.method' or 'path::name'."
    )
    outline: bool = Field(
        default=False, description="List the file's definitions instead of its text."
    )


def stage(args: ReadArgs, ctx: ToolContext) -> ReadResult:
    if args.symbol:
        return _read_symbol(args, ctx)
    if not args.path:
        raise fail(INVALID_ARGS, "give a path, or a symbol")
    where = ctx.resolve_readable(args.path)
    if _is_folder(where.abs):
        return ReadResult(_listing(where.rel, ctx))
    where, textfile = ctx.read_file(args.path)
    if isinstance(textfile, NotebookFile):
        return ReadResult(_read_notebook(args, where.rel, textfile, ctx))
    if args.outline:
        return ReadResult(_outline(where.rel, ctx))
    lines = split_lines(textfile.text)
    first = args.start_line or 1
    last = args.end_line or max(len(lines), 1)  # an empty file reads as such, not as an error
    if first > max(len(lines), 1):
        raise fail(
            INVALID_ARGS, f"start_line {first} is past the end of {where.rel} ({len(lines)} lines)"
        )
    if last < first:
        raise fail(INVALID_ARGS, f"end_line {last} is before start_line {first}")
    output = render_lines(where.rel, lines, first, min(last, len(lines)), ctx)
    if is_notebook(where.rel):  # a notebook that did not parse: shown as the text it is
        output = "[not a valid nbformat-4 notebook: shown as text; edits are refused]\n" + output
    return ReadResult(output)


def render_lines(rel: str, lines: list[str], first: int, last: int, ctx: ToolContext) -> str:
    """Numbered lines ``first..last``, cut to the read limits with a note on how to go on."""
    limits = ctx.settings
    out: list[str] = []
    size = 0
    shown_last = first - 1
    for n in range(first, last + 1):
        line = lines[n - 1]
        if len(line) > limits.max_line_chars:
            line = before_cut(line)  # a cut through a secret keeps no piece of it
        if len(line) > limits.max_line_chars:
            line = (
                line[: limits.max_line_chars]
                + f" [... {len(line) - limits.max_line_chars} more chars]"
            )
        entry = f"{n:6}\t{line}"
        if len(out) >= limits.read_max_lines or size + len(entry) > limits.read_max_chars:
            break
        out.append(entry)
        size += len(entry) + 1
        shown_last = n
    header = f"{quote_path(rel)} (lines {first}-{shown_last} of {len(lines)})"
    if not lines:
        return f"{quote_path(rel)} (empty file)"
    if shown_last < last:
        out.append(f"[output limit reached: continue with start_line={shown_last + 1}]")
    return header + "\n" + "\n".join(out)


def _is_folder(path: os.PathLike[str]) -> bool:
    try:
        return stat.S_ISDIR(os.stat(path).st_mode)
    except OSError:  # reading it says why (a loop, a name too long, ...)
        return False


def _listing(rel: str, ctx: ToolContext) -> str:
    files: list[str] = []
    skipped: list[Skipped] = []
    skips = 0
    for item in ctx.workspace.walk(rel):
        if isinstance(item, str):
            files.append(item)
        else:
            skips += 1
            if len(skipped) < MAX_SKIPS_NAMED:
                skipped.append(item)
        if len(files) > MAX_LISTING:
            break
    more = ""
    if len(files) > MAX_LISTING:
        files = files[:MAX_LISTING]
        more = f"\n[more than {MAX_LISTING} files; read a subfolder]"
    if skips:
        more += f"\n[not listed, not regular files or unreadable: {skipped_note(skipped, skips)}]"
    # A name holding a newline would forge entries: such names are quoted, as diffs quote them.
    rows = [quote_path(name) for name in files]
    return f"{quote_path(rel or '.')}/ ({len(files)} files)\n" + "\n".join(rows) + more


def _outline(rel: str, ctx: ToolContext) -> str:
    symbols = ctx.symbols.outline(rel)
    if not symbols:
        return f"{rel}: no definitions found (or the language has no symbol support)"
    # Cut at the read limits: a file of thousands of definitions outlined whole was hundreds
    # of thousands of characters for the model.
    settings, size = ctx.settings, 0
    rows: list[str] = []
    for number, symbol in enumerate(symbols, 1):
        row = f"{symbol.start_line:6}-{symbol.end_line:<6} {symbol.kind:<9} {symbol.qualname[:200]}"
        if rows and (
            size + len(row) + 1 > settings.read_max_chars or len(rows) >= settings.read_max_lines
        ):
            rows.append(
                f"[output limit reached at definition {number} of {len(symbols)}, line "
                f"{symbol.start_line}: read the file from start_line={symbol.start_line}, or a "
                "symbol by name]"
            )
            break
        rows.append(row)
        size += len(row) + 1
    return f"{rel} outline ({len(symbols)} definitions)\n" + "\n".join(rows)


def _read_notebook(args: ReadArgs, rel: str, textfile: NotebookFile, ctx: ToolContext) -> str:
    """A notebook as cells (start_line/end_line count cells), or its outline."""
    notebook = textfile.nb
    if args.outline:
        return cells.outline(rel, notebook, ctx.symbols.outline(rel), ctx.settings)
    first = args.start_line or 1
    if notebook.cells and first > len(notebook.cells):
        raise fail(
            INVALID_ARGS,
            f"start_line {first} is past the last cell of {rel} ({len(notebook.cells)} cells; "
            "a notebook is read by cells)",
        )
    if args.end_line is not None and args.end_line < first:
        raise fail(INVALID_ARGS, f"end_line {args.end_line} is before start_line {first}")
    return cells.render_notebook(rel, notebook, first, args.end_line, ctx.settings)


def _read_symbol(args: ReadArgs, ctx: ToolContext) -> ReadResult:
    from grinta_jupyter.code.index import parse_address

    address = args.symbol or ""
    if args.path and "::" not in address:
        address = f"{ctx.workspace.resolve(args.path).rel}::{address}"
    path, qualname = parse_address(address)
    if cells.is_cell_address(qualname):
        if path is None:
            raise fail(INVALID_ARGS, f"name the notebook too: 'path.ipynb::{qualname}'")
        target, resolution = cells.resolve_cell(ctx, path, qualname, write=False)
        count = target.source.count("\n") + 1
        first = args.start_line or 1
        if first > count:
            raise fail(
                INVALID_ARGS, f"start_line {first} is past the end of the cell ({count} lines)"
            )
        if args.end_line is not None and args.end_line < first:
            raise fail(INVALID_ARGS, f"end_line {args.end_line} is before start_line {first}")
        output = cells.render_cell_lines(
            target.path, target.key, target.source, first, args.end_line or count, ctx.settings
        )
        return ReadResult(
            f"{target.cell_type} cell {target.position} of {target.total}: {output}", (resolution,)
        )
    symbol, resolution = resolve_symbol(ctx, address, write=False)
    try:
        _, textfile = ctx.read_file(symbol.path)
    except ToolFailure as failure:
        raise ToolFailure(failure.error, (resolution,)) from None
    if symbol.cell and isinstance(textfile, NotebookFile):
        source = next((c.source for c in textfile.nb.cells if c.key == symbol.cell), "")
        output = cells.render_cell_lines(
            symbol.path, symbol.cell, source, symbol.start_line, symbol.end_line, ctx.settings
        )
        return ReadResult(output, (resolution,))
    lines = split_lines(textfile.text)
    output = render_lines(symbol.path, lines, symbol.start_line, symbol.end_line, ctx)
    return ReadResult(output, (resolution,))


SPEC = ToolSpec(
    name="read",
    kind="read",
    description="Read a file, line range, folder, symbol or outline.",
    args=ReadArgs,
    stage=stage,
)
