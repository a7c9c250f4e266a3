"""create: a new file."""

from __future__ import annotations

from pydantic import Field

from grinta_jupyter.runtime.errors import FILE_EXISTS, fail
from grinta_jupyter.tools.base import Args, ToolContext, ToolSpec


class CreateArgs(Args):
    path: str = Field(description="New file path.")
    content: str = Field(description="Full file content.")


def stage(args: CreateArgs, ctx: ToolContext) -> str:
    staged = ctx.open_new(args.path)
    if staged.path.abs.exists() or staged.path.abs.is_symlink():
        raise fail(FILE_EXISTS, f"{staged.rel} already exists; edit it with replace_string instead")
    staged.text = args.content
    return f"created {staged.rel} ({len(args.content.splitlines())} lines)"


SPEC = ToolSpec(
    name="create",
    kind="write",
    description="Create a new file.",
    args=CreateArgs,
    stage=stage,
)
