"""replace_lines and insert_at_line: edits addressed by line numbers."""

from __future__ import annotations

from pydantic import Field

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
    return staged.text.splitlines(keepends=True)


def _as_lines(staged: StagedFile, text: str) -> list[str]:
    text = staged.conventions.adapt(text)
    if text and not text.endswith(("\n", "\r\n")):
        text += staged.conventions.newline
    return text.splitlines(keepends=True)


def replace_lines(args: ReplaceLinesArgs, ctx: ToolContext) -> WriteResult:
    staged = ctx.open(args.path)
    lines = _lines(staged)
    if args.end_line < args.start_line or args.end_line > len(lines):
        raise fail(
            INVALID_ARGS,
            f"lines {args.start_line}-{args.end_line} are not a range of {staged.rel} "
            f"({len(lines)} lines)",
        )
    staged.text = "".join(
        lines[: args.start_line - 1] + _as_lines(staged, args.new_text) + lines[args.end_line :]
    )
    return WriteResult(f"replaced lines {args.start_line}-{args.end_line} of {staged.rel}")


def insert_at_line(args: InsertAtLineArgs, ctx: ToolContext) -> WriteResult:
    staged = ctx.open(args.path)
    lines = _lines(staged)
    if args.line > len(lines) + 1:
        raise fail(
            INVALID_ARGS, f"line {args.line} is past the end of {staged.rel} ({len(lines)} lines)"
        )
    if lines and args.line == len(lines) + 1 and not lines[-1].endswith("\n"):
        lines[-1] += staged.conventions.newline
    staged.text = "".join(
        lines[: args.line - 1] + _as_lines(staged, args.text) + lines[args.line - 1 :]
    )
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
