"""shell_write: write files with shell heredocs (``cat > path <<'EOF' ... EOF``).

The command is parsed, never executed: only ``cat > path`` (overwrite) and
``cat >> path`` (append) heredocs are accepted, so safety stays the runtime's.
"""

from __future__ import annotations

import re

from pydantic import Field

from grinta_jupyter.runtime.errors import INVALID_ARGS, fail
from grinta_jupyter.tools.base import Args, ToolContext, ToolSpec, WriteResult
from grinta_jupyter.tools.broad.write_file import write_whole

_HEREDOC = re.compile(
    r"^\s*cat\s+(>>?)\s*(['\"]?)([^'\"\s<]+)\2\s*<<-?\s*(['\"]?)(\w+)\4[ \t]*\n(.*?)\n\5[ \t]*$",
    re.DOTALL | re.MULTILINE,
)


class ShellWriteArgs(Args):
    command: str = Field(
        description="cat > path <<'EOF' ... EOF (or >> to append); several allowed."
    )


def stage(args: ShellWriteArgs, ctx: ToolContext) -> WriteResult:
    writes = _HEREDOC.findall(args.command)
    if not writes:
        raise fail(
            INVALID_ARGS, "expected heredoc writes: cat > path <<'EOF' (newline) text (newline) EOF"
        )
    done = []
    for mode, _q, path, _q2, _tag, body in writes:
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
