"""ast_replace_symbol, ast_insert_symbol, ast_delete_symbol: one tool per symbol operation."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Literal

from pydantic import Field

from grinta_jupyter.runtime.errors import ToolError, ToolFailure
from grinta_jupyter.tools.base import Args, ToolContext, ToolSpec, WriteResult
from grinta_jupyter.tools.symbols import locate_in_staged, resolve_for_write

if TYPE_CHECKING:
    from grinta_jupyter.code.symbols import Symbol


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


SymbolEdit = Callable[[str, "Symbol"], str]  # (source, symbol) -> new source


def _edit(ctx: ToolContext, address: str, verb: str, apply: SymbolEdit) -> WriteResult:
    from grinta_jupyter.code.edits import SymbolEditError

    found, resolution = resolve_for_write(ctx, address)
    try:
        staged = ctx.open(found.path)
        symbol = locate_in_staged(staged, found)
        staged.text = apply(staged.text, symbol)
    except SymbolEditError as exc:
        raise ToolFailure(ToolError(exc.code, exc.message), (resolution,)) from None
    except ToolFailure as failure:
        raise ToolFailure(failure.error, (resolution,)) from None
    return WriteResult(f"{verb} {symbol.qualname} in {staged.rel}", (resolution,))


def replace(args: AstReplaceArgs, ctx: ToolContext) -> WriteResult:
    from grinta_jupyter.code.edits import replace_symbol

    return _edit(
        ctx, args.symbol, "replaced", lambda text, s: replace_symbol(text, s, args.new_source)
    )


def insert(args: AstInsertArgs, ctx: ToolContext) -> WriteResult:
    from grinta_jupyter.code.edits import insert_symbol

    return _edit(
        ctx,
        args.anchor,
        f"inserted {args.position}",
        lambda text, s: insert_symbol(text, s, args.new_source, args.position),
    )


def delete(args: AstDeleteArgs, ctx: ToolContext) -> WriteResult:
    from grinta_jupyter.code.edits import delete_symbol

    return _edit(ctx, args.symbol, "deleted", delete_symbol)


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
