"""shell_write: write files with shell heredocs (``cat > path <<'EOF' ... EOF``).

The command is parsed, never executed: only ``cat > path`` (overwrite) and
``cat >> path`` (append) heredocs are accepted, so safety stays the runtime's.
What a shell would do differently is refused rather than guessed: any other
command (comments and blank lines aside), a heredoc that never ends, a path
the shell would expand, and an unquoted delimiter (``<<EOF``) whose text has
``$``, backticks or backslash escapes the shell would expand. ``<<-`` strips
leading tabs from the text and from the closing line, as the shell does.
"""

from __future__ import annotations

import bisect
import re

from pydantic import Field

from grinta_jupyter.runtime.errors import INVALID_ARGS, fail
from grinta_jupyter.tools.base import Args, ToolContext, ToolSpec, WriteResult, check_size
from grinta_jupyter.tools.broad.write_file import write_whole
from grinta_jupyter.tools.multiedit import MAX_EDITS

# A heredoc's first line; its text runs to the first later line that is its tag alone.
_HEADER = re.compile(
    r"[ \t]*cat[ \t]+(>>?)[ \t]*(['\"]?)([^'\"\s<]+)\2[ \t]*<<(-?)[ \t]*(['\"]?)(\w+)\5[ \t]*"
)
_PLAIN_PATH = re.compile(r"[\w./@%+,:=-]+")  # an unquoted word the shell takes as it is
# What the shell expands in the text of an unquoted heredoc: parameters, commands, and
# backslash escapes (``\\``, ``\$``, ``\``` and a line continuation).
_EXPANDED = re.compile(r"[$`]|\\\\|\\$", re.MULTILINE)


def heredocs(command: str) -> list[tuple[str, str, str]]:
    """The writes in ``command``: (">" or ">>", path, text), line by line (one expression
    with a lazy body searched again from every header took the square of the command's
    length when the tags never came). Anything that is not such a write is refused."""
    lines = command.split("\n")
    ends: dict[str, list[int]] = {}  # each line that may close a heredoc, by tag
    tab_ends: dict[str, list[int]] = {}  # the same for <<-, whose closing line may be tabbed
    for number, line in enumerate(lines):
        bare = line.rstrip(" \t")
        ends.setdefault(bare, []).append(number)
        tab_ends.setdefault(bare.lstrip("\t"), []).append(number)
    writes = []
    number = 0
    while number < len(lines):
        line = lines[number]
        header = _HEADER.fullmatch(line)
        if header is None:
            if line.strip(" \t") and not line.lstrip(" \t").startswith("#"):
                raise fail(
                    INVALID_ARGS,
                    f"line {number + 1} is not a heredoc write: {line[:80]!r}; shell_write runs "
                    "nothing, it only writes cat > path <<'EOF' (newline) text (newline) EOF",
                )
            number += 1
            continue
        mode, quote, path, dash, tag_quote, tag = header.groups()
        if (not quote and not _PLAIN_PATH.fullmatch(path)) or (
            quote == '"' and any(c in path for c in "$`\\")
        ):
            raise fail(
                INVALID_ARGS,
                f"line {number + 1}: the shell would expand the path {path!r}; "
                "name the file literally, in single quotes if need be",
            )
        closing = (tab_ends if dash else ends).get(tag, [])
        after = bisect.bisect_right(closing, number)
        if after == len(closing):
            raise fail(
                INVALID_ARGS,
                f"the heredoc on line {number + 1} never ends: no later line is {tag} alone",
            )
        end = closing[after]
        body = lines[number + 1 : end]
        text = "".join((row.lstrip("\t") if dash else row) + "\n" for row in body)
        if not tag_quote and _EXPANDED.search(text):
            raise fail(
                INVALID_ARGS,
                f"the heredoc on line {number + 1} has an unquoted delimiter, so the shell "
                "would expand the $, ` or \\ in its text; quote it (<<'EOF') to write the "
                "text as it is",
            )
        writes.append((mode, path, text))
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
    if len(writes) > MAX_EDITS:  # each write costs time linear in its file (appends too)
        raise fail(
            INVALID_ARGS,
            f"{len(writes)} heredocs in one command; at most {MAX_EDITS}: split them over "
            "several calls",
        )
    done = []
    for mode, path, body in writes:
        if mode == ">>":
            where = ctx.workspace.resolve(path, write=True)
            staged = ctx.open(path) if where.abs.exists() else ctx.open_new(path)
            text = staged.text
            if text and not text.endswith("\n"):
                text += staged.conventions.newline
            staged.text = text + (staged.conventions.adapt(body) if staged.original else body)
            check_size(ctx, staged.rel, staged.text)
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
