"""create: a new file."""

from __future__ import annotations

from pydantic import Field

from grinta_jupyter.runtime.errors import (
    FILE_EXISTS,
    NOT_SUPPORTED,
    ToolError,
    ToolFailure,
    fail,
)
from grinta_jupyter.runtime.files import entry_exists
from grinta_jupyter.runtime.resolution import Resolution
from grinta_jupyter.runtime.textfile import line_count
from grinta_jupyter.tools.base import Args, ToolContext, ToolSpec, WriteResult, check_size
from grinta_jupyter.tools.symbols import locate_in_staged, resolve_for_write


class CreateArgs(Args):
    path: str = Field(description="New file, or an existing one when 'into' is given.")
    content: str = Field(description="Full file content, or the new definition.")
    into: str | None = Field(
        default=None,
        description="Add content as a new definition at the end of this "
        "class in path ('*': end of the file).",
    )


def stage(args: CreateArgs, ctx: ToolContext) -> WriteResult:
    if args.into is not None:
        return _add_definition(args, ctx, args.into.strip())
    staged = ctx.open_new(args.path)
    if entry_exists(staged.path.abs, staged.rel, str(staged.path.root)):
        raise fail(
            FILE_EXISTS, f"{staged.rel} already exists; edit it, or add a definition with 'into'"
        )
    check_size(ctx, staged.rel, args.content)
    staged.text = args.content
    return WriteResult(f"created {staged.rel} ({line_count(args.content)} lines)")


def _add_definition(args: CreateArgs, ctx: ToolContext, into: str) -> WriteResult:
    from grinta_jupyter.code.edits import SymbolEditError, append_to
    from grinta_jupyter.runtime.grammars import language_for

    staged = ctx.open(args.path)
    language = language_for(staged.rel)
    if language is None:
        raise fail(
            NOT_SUPPORTED, f"{staged.rel}: no grammar for this file type; use replace_string"
        )
    container = None
    resolutions: tuple[Resolution, ...] = ()
    if into not in ("", "*"):
        found, resolution = resolve_for_write(ctx, f"{staged.rel}::{into}")
        resolutions = (resolution,)
        try:
            container = locate_in_staged(staged, found)
        except ToolFailure as failure:
            raise ToolFailure(failure.error, resolutions) from None
    try:
        staged.text = append_to(staged.text, container, args.content, language)
    except SymbolEditError as exc:
        raise ToolFailure(ToolError(exc.code, exc.message), resolutions) from None
    where = container.qualname if container is not None else "the end of the file"
    return WriteResult(f"added a definition to {where} in {staged.rel}", resolutions)


SPEC = ToolSpec(
    name="create",
    kind="write",
    description="Create a new file, or add a definition to an existing file or class.",
    args=CreateArgs,
    stage=stage,
)
