"""str_replace: exact string replacement (overlaps replace_string, xml_edit and apply_patch)."""

from __future__ import annotations

from pydantic import Field

from grinta_jupyter.tools.base import Args, ToolContext, ToolSpec, WriteResult
from grinta_jupyter.tools.matching import replace_in


class StrReplaceArgs(Args):
    path: str = Field(description="File to edit.")
    old: str = Field(description="Exact text to find; must be unique in the file.")
    new: str = Field(description="Text to put in its place.")


def stage(args: StrReplaceArgs, ctx: ToolContext) -> WriteResult:
    staged = ctx.open(args.path)
    replace_in(staged, args.old, args.new)
    return WriteResult(f"replaced text in {staged.rel}")


SPEC = ToolSpec(
    name="str_replace",
    kind="write",
    description="Replace a unique exact string in a file with another string.",
    args=StrReplaceArgs,
    stage=stage,
)
