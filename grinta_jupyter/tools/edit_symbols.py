"""edit_symbols: replace, delete or insert definitions by name, as one transaction."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from grinta_jupyter.runtime.errors import INVALID_ARGS, ToolError, ToolFailure, fail
from grinta_jupyter.runtime.resolution import Resolution
from grinta_jupyter.tools.base import Args, ToolContext, ToolSpec, WriteResult
from grinta_jupyter.tools.cells import edit_cell, edit_definition, is_cell_address, resolve_cell
from grinta_jupyter.tools.symbols import locate_in_staged, resolve_for_write


class SymbolEdit(Args):
    symbol: str = Field(
        description="'Class.method', 'path::name' or 'x.ipynb::cell:<id>'; must name one."
    )
    action: Literal["replace", "delete", "insert_before", "insert_after"]
    new_source: str | None = Field(
        default=None, description="Full definition, decorators included."
    )
    cell_type: Literal["code", "markdown"] | None = None  # a new cell's type (default code)


class EditSymbolsArgs(Args):
    edits: list[SymbolEdit] = Field(min_length=1, description="Applied in order; all or none.")


def stage(args: EditSymbolsArgs, ctx: ToolContext) -> WriteResult:
    total = len(args.edits)
    done: list[str] = []
    resolutions: list[Resolution] = []
    for number, edit in enumerate(args.edits, 1):
        try:
            done.append(_apply(edit, ctx, resolutions))
        except ToolFailure as failure:
            error = failure.error
            raise ToolFailure(
                ToolError(
                    error.code,
                    f"edit {number} of {total} ({edit.symbol}): "
                    f"{error.message}; no edit was applied",
                    error.candidates,
                    error.line,
                    error.more,
                ),
                (*resolutions, *failure.resolutions),
            ) from None
    return WriteResult("; ".join(done), tuple(resolutions))


def _apply(edit: SymbolEdit, ctx: ToolContext, resolutions: list[Resolution]) -> str:
    """Stage one edit; its resolution is added to ``resolutions``. Returns what was done."""
    from grinta_jupyter.code.edits import (
        SymbolEditError,
        delete_symbol,
        insert_symbol,
        replace_symbol,
    )
    from grinta_jupyter.code.index import parse_address

    if edit.action == "delete" and edit.new_source is not None:
        raise fail(INVALID_ARGS, "delete takes no new_source")
    path, qualname = parse_address(edit.symbol)
    if is_cell_address(qualname):
        return _apply_to_cell(edit, path, qualname, ctx, resolutions)
    if edit.cell_type is not None:
        raise fail(
            INVALID_ARGS, "cell_type is only for edits of notebook cells (nb.ipynb::cell:<id>)"
        )
    if edit.action != "delete" and not edit.new_source:
        raise fail(INVALID_ARGS, f"{edit.action} needs new_source")
    found, resolution = resolve_for_write(ctx, edit.symbol)
    resolutions.append(resolution)
    staged = ctx.open(found.path)
    if found.cell:  # a definition inside a notebook's code cell
        return edit_definition(staged, found, edit.action, edit.new_source)
    symbol = locate_in_staged(staged, found)
    source = staged.text
    try:
        if edit.action == "replace":
            staged.text = replace_symbol(source, symbol, edit.new_source or "")
        elif edit.action == "delete":
            staged.text = delete_symbol(source, symbol)
        else:
            where: Literal["before", "after"] = (
                "before" if edit.action == "insert_before" else "after"
            )
            staged.text = insert_symbol(source, symbol, edit.new_source or "", where)
    except SymbolEditError as exc:
        raise fail(exc.code, exc.message) from None
    return f"{edit.action} {symbol.qualname}"


def _apply_to_cell(
    edit: SymbolEdit,
    path: str | None,
    qualname: str,
    ctx: ToolContext,
    resolutions: list[Resolution],
) -> str:
    """Replace, delete or insert a notebook cell (the address names an existing cell)."""
    if path is None:
        raise fail(INVALID_ARGS, f"name the notebook too: 'path.ipynb::{qualname}'")
    if edit.action == "replace" and edit.new_source is None:
        raise fail(INVALID_ARGS, "replace needs new_source (the cell's whole new source)")
    if edit.action.startswith("insert") and edit.new_source is None:
        raise fail(INVALID_ARGS, f"{edit.action} needs new_source (the new cell's source)")
    target, resolution = resolve_cell(ctx, path, qualname, write=True)
    resolutions.append(resolution)
    staged = ctx.open(target.path)
    return edit_cell(staged, target, edit.action, edit.new_source, edit.cell_type)


SPEC = ToolSpec(
    name="edit_symbols",
    kind="write",
    description="Replace, delete, or insert definitions (functions, classes, methods) or "
    "notebook cells by name.",
    args=EditSymbolsArgs,
    stage=stage,
)
