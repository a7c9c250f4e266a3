"""ast_replace_symbol, ast_insert_symbol, ast_delete_symbol: one tool per symbol operation."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from grinta_jupyter.runtime.errors import fail
from grinta_jupyter.tools.base import Args, ToolContext, ToolSpec
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


def _edit(ctx: ToolContext, address: str, apply) -> str:  # type: ignore[no-untyped-def]
    from grinta_jupyter.code.edits import SymbolEditError

    found = resolve_for_write(ctx, address)
    staged = ctx.open(found.path)
    symbol = locate_in_staged(staged, found)
    try:
        staged.text = apply(staged.text, symbol)
    except SymbolEditError as exc:
        raise fail(exc.code, exc.message) from None
    return f"{symbol.qualname} in {staged.rel}"


def replace(args: AstReplaceArgs, ctx: ToolContext) -> str:
    from grinta_jupyter.code.edits import replace_symbol

    return "replaced " + _edit(
        ctx, args.symbol, lambda text, s: replace_symbol(text, s, args.new_source)
    )


def insert(args: AstInsertArgs, ctx: ToolContext) -> str:
    from grinta_jupyter.code.edits import insert_symbol

    return f"inserted {args.position} " + _edit(
        ctx, args.anchor, lambda text, s: insert_symbol(text, s, args.new_source, args.position)
    )


def delete(args: AstDeleteArgs, ctx: ToolContext) -> str:
    from grinta_jupyter.code.edits import delete_symbol

    return "deleted " + _edit(ctx, args.symbol, delete_symbol)


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
