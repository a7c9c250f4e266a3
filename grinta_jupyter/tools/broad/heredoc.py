"""shell_write: write files with shell heredocs (``cat > path <<'EOF' ... EOF``).

The command is parsed, never executed: only ``cat > path`` (overwrite) and
``cat >> path`` (append) heredocs are accepted, so safety stays the runtime's.
"""

from __future__ import annotations

import bisect
import re

from pydantic import Field

from grinta_jupyter.runtime.errors import INVALID_ARGS, fail
from grinta_jupyter.tools.base import Args, ToolContext, ToolSpec, WriteResult
from grinta_jupyter.tools.broad.write_file import write_whole

# A heredoc's first line; its text runs to the first later line that is its tag alone.
_HEADER = re.compile(
    r"[ \t]*cat[ \t]+(>>?)[ \t]*(['\"]?)([^'\"\s<]+)\2[ \t]*<<-?[ \t]*(['\"]?)(\w+)\4[ \t]*"
)


def heredocs(command: str) -> list[tuple[str, str, str]]:
    """The writes in ``command``: (">" or ">>", path, text), line by line (one expression
    with a lazy body searched again from every header took the square of the command's
    length when the tags never came)."""
    lines = command.split("\n")
    ends: dict[str, list[int]] = {}  # each line that may close a heredoc, by tag
    for number, line in enumerate(lines):
        ends.setdefault(line.rstrip(" \t"), []).append(number)
    writes = []
    number = 0
    while number < len(lines):
        header = _HEADER.fullmatch(lines[number])
        closing = ends.get(header.group(5), []) if header else []
        # The text has at least one line: the tag right after the header is text.
        after = bisect.bisect_left(closing, number + 2)
        if header is None or after == len(closing):
            number += 1
            continue
        end = closing[after]
        writes.append((header.group(1), header.group(3), "\n".join(lines[number + 1 : end])))
        number = end + 1
    return writes


class ShellWriteArgs(Args):
    command: str = Field(
        description="cat > path <<'EOF' ... EOF (or >> to append); several allowed."
    )


def stage(args: ShellWriteArgs, ctx: ToolContext) -> WriteResult:
    writes = heredocs(args.command)
    if not writes:
        raise fail(
            INVALID_ARGS, "expected heredoc writes: cat > path <<'EOF' (newline) text (newline) EOF"
        )
    done = []
    for mode, path, body in writes:
        body += "\n"
        if mode == ">>":
            where = ctx.workspace.resolve(path, write=True)
            staged = ctx.open(path) if where.abs.is_file() else ctx.open_new(path)
            text = staged.text
            if text and not text.endswith("\n"):
                text += staged.conventions.newline
            staged.text = text + (staged.conventions.adapt(body) if staged.original else body)
            done.append(f"appended to {staged.rel}")
        else:
            done.append(write_whole(ctx, path, body))
    return WriteResult("; ".join(done))


SPEC = ToolSpec(
    name="shell_write",
    kind="write",
    description="Write or append files using shell heredoc syntax (cat > file <<'EOF').",
    args=ShellWriteArgs,
    stage=stage,
)
