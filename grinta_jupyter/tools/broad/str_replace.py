"""str_replace: exact string replacement (overlaps replace_string, xml_edit and apply_patch)."""

from __future__ import annotations

from pydantic import Field

from grinta_jupyter.tools.base import Args, ToolContext, ToolSpec, WriteResult
from grinta_jupyter.tools.matching import Naming, replace_in

# Refusals name this tool's own arguments (it has no replace_all; files are new by write_file).
NAMING = Naming(
    old="old", new="new", unique="add surrounding lines to make it unique", new_file="write_file"
)


class StrReplaceArgs(Args):
    path: str = Field(description="File to edit.")
    old: str = Field(description="Exact text to find; must be unique in the file.")
    new: str = Field(description="Text to put in its place.")


def stage(args: StrReplaceArgs, ctx: ToolContext) -> WriteResult:
    staged = ctx.open(args.path)
    replace_in(staged, args.old, args.new, naming=NAMING)
    return WriteResult(f"replaced text in {staged.rel}")


SPEC = ToolSpec(
    name="str_replace",
    kind="write",
    description="Replace a unique exact string in a file with another string.",
    args=StrReplaceArgs,
    stage=stage,
)
