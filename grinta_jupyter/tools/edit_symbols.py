"""edit_symbols: replace, delete or insert definitions by name, as one transaction."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from grinta_jupyter.runtime.errors import INVALID_ARGS, ToolError, ToolFailure, fail
from grinta_jupyter.runtime.resolution import Resolution
from grinta_jupyter.tools.base import Args, ToolContext, ToolSpec, WriteResult
from grinta_jupyter.tools.symbols import locate_in_staged, resolve_for_write


class SymbolEdit(Args):
    symbol: str = Field(description="'Class.method' or 'path::name'; must name one definition.")
    action: Literal["replace", "delete", "insert_before", "insert_after"]
    new_source: str | None = Field(
        default=None, description="Full definition, decorators included."
    )


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

    if edit.action == "delete" and edit.new_source is not None:
        raise fail(INVALID_ARGS, "delete takes no new_source")
    if edit.action != "delete" and not edit.new_source:
        raise fail(INVALID_ARGS, f"{edit.action} needs new_source")
    found, resolution = resolve_for_write(ctx, edit.symbol)
    resolutions.append(resolution)
    staged = ctx.open(found.path)
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


SPEC = ToolSpec(
    name="edit_symbols",
    kind="write",
    description="Replace, delete, or insert definitions (functions, classes, methods) by name.",
    args=EditSymbolsArgs,
    stage=stage,
)
