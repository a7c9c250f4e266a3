"""ast_replace_symbol, ast_insert_symbol, ast_delete_symbol: one tool per symbol operation."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from grinta_jupyter.runtime.errors import ToolError, ToolFailure
from grinta_jupyter.tools.base import Args, ToolContext, ToolSpec, WriteResult
from grinta_jupyter.tools.cells import CellAction, edit_definition
from grinta_jupyter.tools.symbols import locate_in_staged, resolve_for_write


class AstReplaceArgs(Args):
    symbol: str = Field(
        description="Qualified name of the function/class/method, optionally 'path::name'."
    )
    new_source: str = Field(description="The complete new definition.")


class AstInsertArgs(Args):
    anchor: str = Field(
        description="Qualified name of an existing definition, optionally 'path::name'."
    )
    position: Literal["before", "after"] = Field(description="Where the new definition goes.")
    new_source: str = Field(description="The new definition.")


class AstDeleteArgs(Args):
    symbol: str = Field(
        description="Qualified name of the definition to delete, optionally 'path::name'."
    )


def _edit(
    ctx: ToolContext, address: str, verb: str, action: CellAction, new_source: str | None = None
) -> WriteResult:
    from grinta_jupyter.code.edits import (
        SymbolEditError,
        delete_symbol,
        insert_symbol,
        replace_symbol,
    )

    found, resolution = resolve_for_write(ctx, address)
    try:
        staged = ctx.open(found.path)
        if found.cell:  # a definition in a notebook's code cell: edited within that cell
            edit_definition(staged, found, action, new_source)
            symbol = found
        else:
            symbol = locate_in_staged(staged, found)
            if action == "replace":
                staged.text = replace_symbol(staged.text, symbol, new_source or "")
            elif action == "delete":
                staged.text = delete_symbol(staged.text, symbol)
            else:
                where_to: Literal["before", "after"] = (
                    "before" if action == "insert_before" else "after"
                )
                staged.text = insert_symbol(staged.text, symbol, new_source or "", where_to)
    except SymbolEditError as exc:
        raise ToolFailure(ToolError(exc.code, exc.message), (resolution,)) from None
    except ToolFailure as failure:
        raise ToolFailure(failure.error, (resolution,)) from None
    return WriteResult(f"{verb} {symbol.qualname} in {staged.rel}", (resolution,))


def replace(args: AstReplaceArgs, ctx: ToolContext) -> WriteResult:
    return _edit(ctx, args.symbol, "replaced", "replace", args.new_source)


def insert(args: AstInsertArgs, ctx: ToolContext) -> WriteResult:
    action: CellAction = "insert_before" if args.position == "before" else "insert_after"
    return _edit(ctx, args.anchor, f"inserted {args.position}", action, args.new_source)


def delete(args: AstDeleteArgs, ctx: ToolContext) -> WriteResult:
    return _edit(ctx, args.symbol, "deleted", "delete")


REPLACE_SPEC = ToolSpec(
    name="ast_replace_symbol",
    kind="write",
    args=AstReplaceArgs,
    stage=replace,
    description="Replace a function, method or class definition using the syntax tree.",
)
INSERT_SPEC = ToolSpec(
    name="ast_insert_symbol",
    kind="write",
    args=AstInsertArgs,
    stage=insert,
    description="Insert a new definition before or after an existing one using the syntax tree.",
)
DELETE_SPEC = ToolSpec(
    name="ast_delete_symbol",
    kind="write",
    args=AstDeleteArgs,
    stage=delete,
    description="Delete a function, method or class definition using the syntax tree.",
)
