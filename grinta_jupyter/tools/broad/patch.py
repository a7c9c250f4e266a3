"""apply_patch: a unified diff (``--- a/x`` / ``+++ b/x`` / ``@@`` hunks), applied exactly.

Lines are split at ``\\n`` only, in the patch and in the file, as ``read`` numbers them:
a form feed, U+2028 or lone ``\\r`` inside a line stays in it. Context and removed lines
must match the file (but for their line ending); a hunk that does not match, or matches
in more than one place and not where its header says, is refused, naming the hunk (no
fuzz). Hunks apply in order and never overlap. Context lines stay as the file has them;
added lines take the file's line ending, and a line that ends the file keeps the file
without a final newline only when the patch says so (``\\ No newline at end of file``).

Every line of a hunk is a context (`` ``), removed (``-``) or added (``+``) line, that
marker, or blank: an empty context line, as models and mail clients leave them (blank
lines past the header's counts at a hunk's end are not part of it). Any other line
followed by more of the patch refuses it, so a patch never applies in part; lines after
the last hunk that are not part of a diff (a closing code fence, a sentence) are ignored.
Renames and deletions are refused, as is a file named in two sections.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass

from pydantic import Field

from grinta_jupyter.runtime.diffs import split_keepends
from grinta_jupyter.runtime.errors import AMBIGUOUS_MATCH, INVALID_ARGS, NOT_FOUND, fail
from grinta_jupyter.tools.base import Args, StagedFile, ToolContext, ToolSpec, WriteResult

_HUNK = re.compile(r"@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
_BLANK = "b"  # a blank line in a hunk: an empty context line


class ApplyPatchArgs(Args):
    patch: str = Field(description="A unified diff with ---/+++ file headers and @@ hunks.")


@dataclass
class _Row:
    kind: str  # " ", "-", "+" or _BLANK
    text: str  # the line without its prefix, its line ending kept
    final: bool = False  # followed by "\ No newline at end of file"


@dataclass
class _Hunk:
    start: int  # the old side's first line, 1-based (for a pure insertion: the line before)
    old_count: int  # the old side's line count, as its header says
    rows: list[_Row]

    def old(self) -> list[str]:
        return [r.text for r in self.rows if r.kind in (" ", "-", _BLANK)]


def stage(args: ApplyPatchArgs, ctx: ToolContext) -> WriteResult:
    files = _parse(args.patch)
    if not files:
        raise fail(
            INVALID_ARGS, "no file in the patch: it needs '--- a/path' and '+++ b/path' lines"
        )
    seen: set[str] = set()
    for old_path, new_path, hunks in files:
        staged = ctx.open_new(new_path) if old_path is None else ctx.open(old_path)
        if staged.rel in seen:
            raise fail(
                INVALID_ARGS,
                f"the patch names {staged.rel} twice; put all its hunks in one section",
            )
        seen.add(staged.rel)
        if old_path is None:
            _create(staged, hunks)
        else:
            _apply(staged, hunks)
    return WriteResult(f"applied a patch to {', '.join(sorted(ctx.staged))}")


def _create(staged: StagedFile, hunks: list[_Hunk]) -> None:
    if staged.path.abs.exists():
        raise fail(INVALID_ARGS, f"the patch creates {staged.rel}, which exists")
    rows = [row for hunk in hunks for row in hunk.rows]
    if any(row.kind != "+" for row in rows):
        raise fail(
            INVALID_ARGS,
            f"the patch creates {staged.rel} (from /dev/null): every line must be '+'",
        )
    newline = staged.conventions.newline
    bodies = [row.text.rstrip("\r\n") for row in rows]
    open_end = bool(rows) and rows[-1].final
    staged.text = "".join(_joined(bodies, [newline] * len(rows), open_end, newline))


def _apply(staged: StagedFile, hunks: list[_Hunk]) -> None:
    lines = split_keepends(staged.text)
    newline = staged.conventions.newline
    shift = 0  # lines the hunks before added, less those they removed
    done = 0  # where the last hunk's lines end: the next one starts at or after it
    for number, hunk in enumerate(hunks, 1):
        old = hunk.old()
        at = _place(lines, old, hunk, shift, done, number, staged.rel)
        kept = iter(lines[at : at + len(old)])
        bodies: list[str] = []
        ends: list[str] = []
        for row in hunk.rows:
            if row.kind == "-":
                next(kept)
            elif row.kind == "+":
                bodies.append(row.text.rstrip("\r\n"))
                ends.append(newline)
            else:  # a context line stays as the file has it, line ending included
                line = next(kept)
                bodies.append(line.rstrip("\r\n"))
                ends.append(line[len(bodies[-1]) :])
        open_end = False
        if at + len(old) == len(lines) and bodies:  # the hunk ends the file
            if any(row.final for row in hunk.rows):  # the patch says how the file ends
                open_end = hunk.rows[-1].final and hunk.rows[-1].kind != "-"
            else:  # it does not: the file ends as it did
                open_end = bool(lines) and not lines[-1].endswith("\n")
        if at == len(lines) and bodies and lines and not lines[-1].endswith("\n"):
            lines[-1] += newline  # lines added after a last line that had no line ending
        new = _joined(bodies, ends, open_end, newline)
        lines[at : at + len(old)] = new
        shift += len(new) - len(old)
        done = at + len(new)
    staged.text = "".join(lines)


def _joined(bodies: list[str], ends: list[str], open_end: bool, newline: str) -> list[str]:
    """Lines from their bodies and endings: every line has one (a file's own last line
    that had none gets ``newline`` when lines follow it) but the last when ``open_end``."""
    out = [body + (end or newline) for body, end in zip(bodies, ends, strict=True)]
    if out and open_end:
        out[-1] = bodies[-1]
    return out


def _place(
    lines: list[str], old: list[str], hunk: _Hunk, shift: int, done: int, number: int, rel: str
) -> int:
    """Where hunk ``number``'s old lines are: where its header says, else their one place
    at or after ``done``."""
    start = hunk.start
    if not old:  # a pure insertion goes where the header says: "-N,0" is after line N
        if hunk.old_count != 0:
            raise fail(
                INVALID_ARGS,
                f"hunk {number} of {rel} has no context or removed line; give it context "
                f"lines, or the header -{start},0 to insert after line {start}",
            )
        if done <= start + shift <= len(lines):
            return start + shift
        raise fail(NOT_FOUND, f"hunk {number} of {rel} inserts after line {start}, past its end")
    hint = start - 1 + shift
    want = [line.rstrip("\r\n") for line in old]
    there = lines[hint : hint + len(old)] if done <= hint <= len(lines) - len(old) else []
    if there and [line.rstrip("\r\n") for line in there] == want:
        return hint
    hits = _occurrences([line.rstrip("\r\n") for line in lines], want, done)
    if len(hits) == 1:
        return hits[0]
    if hits:
        raise fail(
            AMBIGUOUS_MATCH,
            f"hunk {number} of {rel} matches at lines {hits[0] + 1} and {hits[1] + 1}, not at "
            f"line {start}; fix its header's line numbers or add context lines",
        )
    raise fail(
        NOT_FOUND,
        f"hunk {number} of {rel} does not match the file at line {start}; read the file and "
        "make the context and removed lines exact",
    )


def _occurrences(bare: list[str], want: list[str], lowest: int) -> list[int]:
    """The first two line indexes at or after ``lowest`` where ``want`` starts in ``bare``
    (one search over the joined text, not a comparison per line)."""
    if any("\n" in line for line in want):
        return []
    text = "\n" + "\n".join(bare) + "\n"
    needle = "\n" + "\n".join(want) + "\n"
    starts = [0]  # where each line starts in ``text``, after its leading "\n"
    for line in bare:
        starts.append(starts[-1] + len(line) + 1)
    hits: list[int] = []
    at = text.find(needle, starts[lowest] if lowest < len(starts) else len(text))
    while at >= 0 and len(hits) < 2:
        hits.append(bisect.bisect_left(starts, at))
        at = text.find(needle, at + 1)
    return hits


def _parse(text: str) -> list[tuple[str | None, str, list[_Hunk]]]:
    files: list[tuple[str | None, str, list[_Hunk]]] = []
    lines = split_keepends(text)
    i = 0
    while i < len(lines):
        if not _header(lines, i):
            i += 1
            continue
        old, new = _path(lines[i][4:]), _path(lines[i + 1][4:])
        if new is None:
            raise fail(INVALID_ARGS, "deleting files is not supported")
        if old is not None and old != new:
            raise fail(
                INVALID_ARGS,
                f"renaming is not supported (--- {old}, +++ {new}): name the same file twice",
            )
        hunks: list[_Hunk] = []
        i += 2
        while i < len(lines) and lines[i].startswith("@@"):
            hunk, i = _hunk(lines, i)
            hunks.append(hunk)
        _ends_cleanly(lines, i)
        files.append((old, new, hunks))
    return files


def _hunk(lines: list[str], i: int) -> tuple[_Hunk, int]:
    """The hunk whose header is ``lines[i]``, and the index after its last line."""
    match = _HUNK.match(lines[i])
    if not match:
        raise fail(INVALID_ARGS, f"bad hunk header: {lines[i].strip()}")
    old_count = 1 if match.group(2) is None else int(match.group(2))
    new_count = 1 if match.group(4) is None else int(match.group(4))
    rows: list[_Row] = []
    i += 1
    while i < len(lines) and not lines[i].startswith("@@"):
        if _header(lines, i) and not _short(rows, old_count, new_count):
            break  # the next file (a hunk short of its counts reads "--- x" as a removed line)
        line = lines[i]
        if line[:1] in (" ", "-", "+"):
            rows.append(_Row(line[0], line[1:]))
        elif line.startswith("\\"):
            if rows:  # "\ No newline at end of file": the line before has no line ending
                rows[-1].text = rows[-1].text.rstrip("\r\n")
                rows[-1].final = True
        elif not line.strip("\r\n"):
            rows.append(_Row(_BLANK, line))
        else:
            break
        i += 1
    while rows and rows[-1].kind == _BLANK and _past(rows, old_count, new_count):
        rows.pop()
    return _Hunk(int(match.group(1)), old_count, rows), i


def _past(rows: list[_Row], old_count: int, new_count: int) -> bool:
    """Whether ``rows`` hold more lines than the hunk's header counts, on either side."""
    old, new = _counts(rows)
    return old > old_count or new > new_count


def _short(rows: list[_Row], old_count: int, new_count: int) -> bool:
    """Whether ``rows`` hold fewer lines than the hunk's header counts, on either side."""
    old, new = _counts(rows)
    return old < old_count or new < new_count


def _counts(rows: list[_Row]) -> tuple[int, int]:
    return sum(row.kind != "+" for row in rows), sum(row.kind != "-" for row in rows)


def _ends_cleanly(lines: list[str], i: int) -> None:
    """A file's hunks end at ``lines[i]``: refuse the patch if that line is not a diff's
    and more of a diff follows before the next file (it would not be applied)."""
    if i >= len(lines) or _header(lines, i):
        return
    for j in range(i + 1, len(lines)):
        if _header(lines, j):
            return
        if lines[j][:1] in (" ", "-", "+", "@"):
            raise fail(
                INVALID_ARGS,
                f"line {i + 1} of the patch is not a diff line ({lines[i].rstrip()[:80]!r}) "
                "but more of the diff follows it; start context lines with a space, removed "
                "ones with '-', added ones with '+'",
            )


def _header(lines: list[str], i: int) -> bool:
    """A file header at ``lines[i]``: ``--- old`` then ``+++ new``, then a hunk, the next
    file's header, a line that is no hunk's or the end; so a removed ``-- x`` line followed
    by an added ``++ y`` and more of a hunk is read as lines (and, at a hunk's end, when
    the hunk's counts want them)."""
    if not _pair(lines, i):
        return False
    after = lines[i + 2] if i + 2 < len(lines) else "@@"
    return after.startswith("@@") or after[:1] not in (" ", "-", "+") or _pair(lines, i + 2)


def _pair(lines: list[str], i: int) -> bool:
    return lines[i].startswith("--- ") and i + 1 < len(lines) and lines[i + 1].startswith("+++ ")


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
