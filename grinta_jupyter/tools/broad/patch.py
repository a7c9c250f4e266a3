"""apply_patch: a unified diff (``--- a/x`` / ``+++ b/x`` / ``@@`` hunks), applied exactly.

Context and removed lines must match the file exactly; a hunk that does not
match is refused (no fuzz), naming the hunk.
"""

from __future__ import annotations

import re

from pydantic import Field

from grinta_jupyter.runtime.errors import INVALID_ARGS, NOT_FOUND, fail
from grinta_jupyter.tools.base import Args, ToolContext, ToolSpec, WriteResult

_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


class ApplyPatchArgs(Args):
    patch: str = Field(description="A unified diff with ---/+++ file headers and @@ hunks.")


def stage(args: ApplyPatchArgs, ctx: ToolContext) -> WriteResult:
    files = _parse(args.patch)
    if not files:
        raise fail(
            INVALID_ARGS, "no file in the patch: it needs '--- a/path' and '+++ b/path' lines"
        )
    for old_path, new_path, hunks in files:
        if old_path is None:
            staged = ctx.open_new(new_path)
            if staged.path.abs.exists():
                raise fail(INVALID_ARGS, f"the patch creates {new_path}, which exists")
            staged.text = "".join(line for hunk in hunks for kind, line in hunk[1] if kind in "+")
            continue
        staged = ctx.open(old_path)
        lines = staged.text.splitlines(keepends=True)
        offset = 0
        for number, (start, body) in enumerate(hunks, 1):
            old = [line for kind, line in body if kind in " -"]
            new = [line for kind, line in body if kind in " +"]
            at = _find(lines, old, start - 1 + offset)
            if at is None:
                raise fail(
                    NOT_FOUND,
                    f"hunk {number} of {old_path} does not match the file at line {start}; "
                    "read the file and make the context lines exact",
                )
            newline = staged.conventions.newline
            new = [line if line.endswith("\n") else line + newline for line in new]
            lines[at : at + len(old)] = new
            offset += len(new) - len(old)
        staged.text = "".join(lines)
    return WriteResult(f"applied a patch to {', '.join(sorted(ctx.staged))}")


def _find(lines: list[str], old: list[str], hint: int) -> int | None:
    """Where ``old`` occurs, preferring the position the hunk header names."""

    def matches(at: int) -> bool:
        return [x.rstrip("\r\n") for x in lines[at : at + len(old)]] == [
            x.rstrip("\r\n") for x in old
        ]

    if 0 <= hint <= len(lines) - len(old) and matches(hint):
        return hint
    hits = [at for at in range(len(lines) - len(old) + 1) if matches(at)]
    return hits[0] if len(hits) == 1 else None


def _parse(text: str) -> list[tuple[str | None, str, list[tuple[int, list[tuple[str, str]]]]]]:
    files: list[tuple[str | None, str, list[tuple[int, list[tuple[str, str]]]]]] = []
    lines = text.splitlines(keepends=True)
    i = 0
    while i < len(lines):
        if lines[i].startswith("--- ") and i + 1 < len(lines) and lines[i + 1].startswith("+++ "):
            old = _path(lines[i][4:])
            new = _path(lines[i + 1][4:])
            hunks: list[tuple[int, list[tuple[str, str]]]] = []
            i += 2
            while i < len(lines) and lines[i].startswith("@@"):
                match = _HUNK.match(lines[i])
                if not match:
                    raise fail(INVALID_ARGS, f"bad hunk header: {lines[i].strip()}")
                body: list[tuple[str, str]] = []
                i += 1
                while (
                    i < len(lines)
                    and lines[i][:1] in (" ", "-", "+", "\\")
                    and not lines[i].startswith(("--- ", "+++ "))
                ):
                    if lines[i].startswith("\\"):
                        if body:  # "\ No newline at end of file": the previous line has none
                            kind, line = body[-1]
                            body[-1] = (kind, line.rstrip("\r\n"))
                    else:
                        body.append((lines[i][0], lines[i][1:]))
                    i += 1
                hunks.append((int(match.group(1)), body))
            if new is None:
                raise fail(INVALID_ARGS, "deleting files is not supported")
            files.append((old, new, hunks))
        else:
            i += 1
    return files


def _path(header: str) -> str | None:
    name = header.strip().split("\t")[0]
    if name == "/dev/null":
        return None
    return name[2:] if name.startswith(("a/", "b/")) else name


SPEC = ToolSpec(
    name="apply_patch",
    kind="write",
    description="Apply a unified diff patch to one or more files.",
    args=ApplyPatchArgs,
    stage=stage,
)
