"""multiedit: several exact replacements, across files, as one transaction.

Each edit costs time linear in its file, so the number of edits in one call is
bounded (``MAX_EDITS``); a larger change is several calls, or replace_all.
"""

from __future__ import annotations

from pydantic import Field

from grinta_jupyter.runtime.diffs import quote_path
from grinta_jupyter.runtime.errors import INVALID_ARGS, ToolError, ToolFailure, fail
from grinta_jupyter.tools.base import Args, ToolContext, ToolSpec, WriteResult
from grinta_jupyter.tools.matching import replace_in

MAX_EDITS = 200


class StringEdit(Args):
    path: str
    old_string: str
    new_string: str
    replace_all: bool = False


class MultiEditArgs(Args):
    edits: list[StringEdit] = Field(
        min_length=1,
        description="Applied in order; later edits see earlier ones.",
    )


def stage(args: MultiEditArgs, ctx: ToolContext) -> WriteResult:
    total = len(args.edits)
    if total > MAX_EDITS:
        raise fail(
            INVALID_ARGS,
            f"{total} edits in one call; at most {MAX_EDITS}: split them over several calls, "
            "or use replace_all for a repeated change",
        )
    for number, edit in enumerate(args.edits, 1):
        named = edit.path  # as the workspace names it once it resolves (./a.py is a.py)
        try:
            staged = ctx.open(edit.path)
            named = staged.rel
            replace_in(
                staged,
                edit.old_string,
                edit.new_string,
                edit.replace_all,
                max_chars=ctx.settings.max_file_bytes,
            )
        except ToolFailure as failure:
            # Name the part that failed; nothing of the other parts is written.
            error = failure.error
            raise ToolFailure(
                ToolError(
                    error.code,
                    f"edit {number} of {total} ({quote_path(named)}): {error.message}; "
                    "no edit was applied",
                    error.candidates,
                    error.line,
                    error.more,
                )
            ) from None
    files = sorted(ctx.staged)
    return WriteResult(f"applied {total} edit{'s' if total > 1 else ''} to {', '.join(files)}")


SPEC = ToolSpec(
    name="multiedit",
    kind="write",
    description="Exact text replacements across files: all applied or none.",
    args=MultiEditArgs,
    stage=stage,
)
