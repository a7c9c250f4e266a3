"""Unified diffs of staged changes, fast on large files.

The common prefix and suffix are skipped before difflib sees the lines, so a
one-line edit in a 100k-line file costs little more than in a small one.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass

CONTEXT = 3
_NO_NEWLINE = "\\ No newline at end of file"


@dataclass(frozen=True)
class LineDiff:
    """Which lines an edit touched: the unified text and the added lines."""

    text: str
    added: list[tuple[int, str]]  # (1-based line in the new text, line) for every added line
    removed: int


def unified_diff(path: str, old: str | None, new: str | None, context: int = CONTEXT) -> LineDiff:
    """A git-style unified diff of ``old`` -> ``new`` (None means the file is absent)."""
    a = (old or "").splitlines(keepends=True)
    b = (new or "").splitlines(keepends=True)
    prefix, suffix = common_affixes(a, b)
    start = max(0, prefix - context)
    a_mid = a[start : len(a) - max(0, suffix - context)]
    b_mid = b[start : len(b) - max(0, suffix - context)]

    header = [
        f"--- {'a/' + path if old is not None else '/dev/null'}",
        f"+++ {'b/' + path if new is not None else '/dev/null'}",
    ]
    body: list[str] = []
    added: list[tuple[int, str]] = []
    removed = 0
    matcher = difflib.SequenceMatcher(None, a_mid, b_mid, autojunk=False)
    for group in matcher.get_grouped_opcodes(context):
        i1, i2, j1, j2 = group[0][1], group[-1][2], group[0][3], group[-1][4]
        body.append(f"@@ -{_range(start + i1, i2 - i1)} +{_range(start + j1, j2 - j1)} @@")
        for tag, ai1, ai2, bj1, bj2 in group:
            if tag == "equal":
                body.extend(_lines(" ", a_mid[ai1:ai2]))
                continue
            if tag in ("replace", "delete"):
                body.extend(_lines("-", a_mid[ai1:ai2]))
                removed += ai2 - ai1
            if tag in ("replace", "insert"):
                body.extend(_lines("+", b_mid[bj1:bj2]))
                added.extend(
                    (start + bj1 + k + 1, line.rstrip("\r\n"))
                    for k, line in enumerate(b_mid[bj1:bj2])
                )
    if not body:
        return LineDiff("", [], 0)
    return LineDiff("\n".join(header + body) + "\n", added, removed)


def common_affixes(a: list[str], b: list[str]) -> tuple[int, int]:
    """How many lines ``a`` and ``b`` share at the start, and then at the end."""
    prefix = 0
    limit = min(len(a), len(b))
    while prefix < limit and a[prefix] == b[prefix]:
        prefix += 1
    suffix = 0
    while suffix < limit - prefix and a[-1 - suffix] == b[-1 - suffix]:
        suffix += 1
    return prefix, suffix


def _range(start: int, length: int) -> str:
    # Unified diff ranges are 1-based; an empty range names the line before it.
    first = start + 1 if length else start
    return f"{first}" if length == 1 else f"{first},{length}"


def _lines(mark: str, lines: list[str]) -> list[str]:
    out = []
    for line in lines:
        stripped = line.rstrip("\r\n")
        out.append(mark + stripped)
        if stripped == line:
            out.append(_NO_NEWLINE)
    return out
