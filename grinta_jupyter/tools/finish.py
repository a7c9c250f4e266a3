"""finish: the model says the task is done."""

from __future__ import annotations

from pydantic import Field

from grinta_jupyter.tools.base import Args, FinishResult, ToolContext, ToolSpec


class FinishArgs(Args):
    summary: str = Field(description="What changed and how it was verified.")


def stage(args: FinishArgs, ctx: ToolContext) -> FinishResult:
    return FinishResult(args.summary)


SPEC = ToolSpec(
    name="finish",
    kind="finish",
    description="End the task once the change is verified.",
    args=FinishArgs,
    stage=stage,
)
