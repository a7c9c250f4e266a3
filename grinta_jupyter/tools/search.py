"""search: text or regex over the workspace, plus definitions whose name matches.

Respects .gitignore; results are bounded and say how many were left out.
Matching is smart-case: an all-lowercase query ignores case.
"""

from __future__ import annotations

import re

from pydantic import Field

from grinta_jupyter.runtime.errors import INVALID_ARGS, fail
from grinta_jupyter.tools.base import Args, ToolContext, ToolSpec

MAX_FILE_BYTES = 2_000_000
MAX_DEFINITIONS = 10
_IDENTIFIER = re.compile(r"^[A-Za-z_][\w.]*$")


class SearchArgs(Args):
    query: str = Field(description="Text, or a regex if regex is true.")
    regex: bool = False
    path: str | None = Field(default=None, description="Limit to this folder or file.")


def stage(args: SearchArgs, ctx: ToolContext) -> str:
    if not args.query:
        raise fail(INVALID_ARGS, "query is empty")
    flags = 0 if any(c.isupper() for c in args.query) else re.IGNORECASE
    try:
        pattern = re.compile(args.query if args.regex else re.escape(args.query), flags)
    except re.error as exc:
        raise fail(INVALID_ARGS, f"invalid regex: {exc}") from None
    under = ctx.workspace.resolve(args.path).rel if args.path else ""
    limit = ctx.settings.search_max_results
    sections = []
    definitions = _definitions(args, ctx, under)
    if definitions:
        sections.append("definitions:\n" + "\n".join(definitions))

    shown: list[str] = []
    total = 0
    files_with_hits = 0
    for rel in ctx.workspace.files(under):
        path = ctx.workspace.root / rel
        try:
            if path.stat().st_size > MAX_FILE_BYTES:
                continue
            data = path.read_bytes()
        except OSError:
            continue
        if b"\x00" in data[:8192]:
            continue
        text = data.decode("utf-8", errors="replace")
        hits = 0
        for number, line in enumerate(text.splitlines(), 1):
            if pattern.search(line):
                hits += 1
                total += 1
                if len(shown) < limit:
                    shown.append(f"{rel}:{number}: {line.strip()[:200]}")
        files_with_hits += bool(hits)
    if not shown and not definitions:
        return f"no matches for {args.query!r}" + (f" in {under}" if under else "")
    if shown:
        head = f"{total} matching line{'s' if total != 1 else ''} in {files_with_hits} file{'s' if files_with_hits != 1 else ''}"
        if total > len(shown):
            head += f" ({total - len(shown)} not shown; narrow the query or path)"
        sections.append(head + ":\n" + "\n".join(shown))
    return "\n\n".join(sections)


def _definitions(args: SearchArgs, ctx: ToolContext, under: str) -> list[str]:
    if args.regex or not _IDENTIFIER.match(args.query):
        return []
    try:
        symbols = ctx.symbols.search(args.query, limit=MAX_DEFINITIONS * 4)
    except RuntimeError:  # a runtime without a symbol index
        return []
    rows = [
        f"{s.path}:{s.def_line}: {s.kind} {s.qualname}"
        for s in symbols
        if not under or s.path == under or s.path.startswith(under.rstrip("/") + "/")
    ]
    return rows[:MAX_DEFINITIONS]


SPEC = ToolSpec(
    name="search",
    kind="read",
    description="Search file contents and definition names.",
    args=SearchArgs,
    stage=stage,
)
