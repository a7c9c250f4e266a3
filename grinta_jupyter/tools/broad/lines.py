"""replace_lines and insert_at_line: edits addressed by line numbers.

Lines are numbered as ``read`` numbers them: split at ``\n`` only (a form feed, U+2028 or
lone ``\r`` inside a line stays in it). The new text takes the file's line endings; a
file without a final newline keeps none when the edit ends it.
"""

from __future__ import annotations

from pydantic import Field

from grinta_jupyter.runtime.diffs import split_keepends
from grinta_jupyter.runtime.errors import INVALID_ARGS, fail
from grinta_jupyter.tools.base import Args, StagedFile, ToolContext, ToolSpec, WriteResult


class ReplaceLinesArgs(Args):
    path: str = Field(description="File to edit.")
    start_line: int = Field(ge=1, description="First line to replace (1-based).")
    end_line: int = Field(ge=1, description="Last line to replace (inclusive).")
    new_text: str = Field(description="Text that replaces those lines.")


class InsertAtLineArgs(Args):
    path: str = Field(description="File to edit.")
    line: int = Field(
        ge=1, description="The text goes before this line (1-based); last line + 1 appends."
    )
    text: str = Field(description="Text to insert.")


def _lines(staged: StagedFile) -> list[str]:
    return split_keepends(staged.text)


def _as_lines(staged: StagedFile, text: str, ends_file: bool = False) -> list[str]:
    """``text`` as lines of the file; its last line ends with a newline unless it ends a
    file that had none."""
    text = staged.conventions.adapt(text)
    open_end = ends_file and bool(staged.text) and not staged.text.endswith("\n")
    if open_end:
        text = text.removesuffix(staged.conventions.newline)
    elif text and not text.endswith("\n"):
        text += staged.conventions.newline
    return split_keepends(text)


def replace_lines(args: ReplaceLinesArgs, ctx: ToolContext) -> WriteResult:
    staged = ctx.open(args.path)
    lines = _lines(staged)
    if args.end_line < args.start_line or args.end_line > len(lines):
        raise fail(
            INVALID_ARGS,
            f"lines {args.start_line}-{args.end_line} are not a range of {staged.rel} "
            f"({len(lines)} lines)",
        )
    new = _as_lines(staged, args.new_text, ends_file=args.end_line == len(lines))
    staged.text = "".join(lines[: args.start_line - 1] + new + lines[args.end_line :])
    return WriteResult(f"replaced lines {args.start_line}-{args.end_line} of {staged.rel}")


def insert_at_line(args: InsertAtLineArgs, ctx: ToolContext) -> WriteResult:
    staged = ctx.open(args.path)
    lines = _lines(staged)
    if args.line > len(lines) + 1:
        raise fail(
            INVALID_ARGS, f"line {args.line} is past the end of {staged.rel} ({len(lines)} lines)"
        )
    appends = args.line == len(lines) + 1
    new = _as_lines(staged, args.text, ends_file=appends)
    if lines and appends and not lines[-1].endswith("\n"):
        lines[-1] += staged.conventions.newline
    staged.text = "".join(lines[: args.line - 1] + new + lines[args.line - 1 :])
    return WriteResult(f"inserted text at line {args.line} of {staged.rel}")


REPLACE_SPEC = ToolSpec(
    name="replace_lines",
    kind="write",
    description="Replace a range of lines in a file with new text.",
    args=ReplaceLinesArgs,
    stage=replace_lines,
)
INSERT_SPEC = ToolSpec(
    name="insert_at_line",
    kind="write",
    description="Insert text into a file before a given line number.",
    args=InsertAtLineArgs,
    stage=insert_at_line,
)
