"""replace_string: exact text replacement in one file."""

from __future__ import annotations

from pydantic import Field

from grinta_jupyter.runtime.resolution import Resolution
from grinta_jupyter.tools.base import Args, ToolContext, ToolSpec, WriteResult
from grinta_jupyter.tools.matching import replace_in


class ReplaceStringArgs(Args):
    path: str
    old_string: str = Field(
        description="Exact text to replace, including whitespace; must occur once."
    )
    new_string: str
    replace_all: bool = Field(default=False, description="Replace every occurrence.")


def stage(args: ReplaceStringArgs, ctx: ToolContext) -> WriteResult:
    staged = ctx.open(args.path)
    count = replace_in(
        staged,
        args.old_string,
        args.new_string,
        args.replace_all,
        max_chars=ctx.settings.max_file_bytes,
    )
    resolution = Resolution(
        args.path, staged.rel, f"{count} exact match{'es' if count > 1 else ''}"
    )
    summary = f"replaced {count} occurrence{'s' if count > 1 else ''} in {staged.rel}"
    return WriteResult(summary, (resolution,))


SPEC = ToolSpec(
    name="replace_string",
    kind="write",
    description="Replace exact text in one file.",
    args=ReplaceStringArgs,
    stage=stage,
)
