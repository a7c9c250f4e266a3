"""Unified diffs of staged changes, fast on large files, and reading them back by role.

The common prefix and suffix are skipped before difflib sees the lines, so a
one-line edit in a 100k-line file costs little more than in a small one.

Lines are split at ``\n`` only (a ``\r``, form feed or U+2028 inside a line
stays in it; a CRLF is shown as a plain line end only when every line end of
both sides is one, so a line gaining or losing its ``\r`` shows it), and a
path holding a control character, quote or backslash is written C-quoted as
git does (``"b/a\nb.py"``), so nothing inside a file or a file name can make
a line of the diff that is not what it says it is.
``parse_unified`` reads hunks by their ``@@`` counts, never by the first
characters of a line: a removed ``-- comment`` is a removed line.
"""

from __future__ import annotations

import bisect
import difflib
import itertools
import operator
import re
from dataclasses import dataclass, field
from typing import Literal

CONTEXT = 3
_NO_NEWLINE = "\\ No newline at end of file"


@dataclass(frozen=True)
class HunkSpan:
    """One hunk: the line ranges it covers on each side and its text.

    Ranges are 0-based, end exclusive, over ``split_keepends`` of each side, and
    include the hunk's context lines. Between two hunks both sides hold the same
    lines, so any choice of hunks can be applied by taking, hunk by hunk, the
    new side's lines or the old side's (``runtime/hunks.py``).
    """

    old_start: int
    old_end: int
    new_start: int
    new_end: int
    header: str  # "@@ -a,b +c,d @@"
    lines: tuple[str, ...]  # the header's rows: " ", "-", "+" and "\ No newline" lines


@dataclass(frozen=True)
class LineDiff:
    """Which lines an edit touched: the unified text, its hunks and the added lines."""

    text: str
    added: list[tuple[int, str]]  # (1-based line in the new text, line) for every added line
    removed: int
    hunks: tuple[HunkSpan, ...] = ()


def unified_diff(path: str, old: str | None, new: str | None, context: int = CONTEXT) -> LineDiff:
    """A git-style unified diff of ``old`` -> ``new`` (None means the file is absent).

    In a notebook's cell view, a hunk that starts inside a cell names that cell after
    its ``@@`` (as git names the enclosing function), so every hunk shows its cell.
    A new empty file is one hunk without rows (``@@ -0,0 +0,0 @@``), so it is shown,
    and counted, like any other change.
    """
    section = _cell_section if path.lower().endswith(".ipynb") else None
    a = split_keepends(old or "")
    b = split_keepends(new or "")
    # Every line end CRLF on both sides, and the old side has one: shown as plain line ends.
    # Otherwise a "\r" before a "\n" is shown in its line, so LF -> CRLF (or back) is never an
    # invisible change, nor is a new file's CRLF (a shell script that then fails on "\r").
    crlf = "\n" in (old or "") and _crlf_only(old or "") and _crlf_only(new or "")
    prefix, suffix = common_affixes(a, b)
    start = max(0, prefix - context)
    a_mid = a[start : len(a) - max(0, suffix - context)]
    b_mid = b[start : len(b) - max(0, suffix - context)]

    header = [
        f"--- {quote_path('a/' + path) if old is not None else '/dev/null'}",
        f"+++ {quote_path('b/' + path) if new is not None else '/dev/null'}",
    ]
    hunks: list[HunkSpan] = []
    added: list[tuple[int, str]] = []
    removed = 0
    for group in group_opcodes(line_opcodes(a_mid, b_mid), context):
        i1, i2, j1, j2 = group[0][1], group[-1][2], group[0][3], group[-1][4]
        body: list[str] = []
        for tag, ai1, ai2, bj1, bj2 in group:
            if tag == "equal":
                body.extend(_lines(" ", a_mid[ai1:ai2], crlf))
                continue
            if tag in ("replace", "delete"):
                body.extend(_lines("-", a_mid[ai1:ai2], crlf))
                removed += ai2 - ai1
            if tag in ("replace", "insert"):
                body.extend(_lines("+", b_mid[bj1:bj2], crlf))
                numbers = range(start + bj1 + 1, start + bj2 + 1)
                added.extend(zip(numbers, _bare(b_mid[bj1:bj2]), strict=True))
        head = f"@@ -{_range(start + i1, i2 - i1)} +{_range(start + j1, j2 - j1)} @@"
        if section is not None:
            head += section(b if new is not None else a, start + (j1 if new is not None else i1))
        hunks.append(HunkSpan(start + i1, start + i2, start + j1, start + j2, head, tuple(body)))
    if not hunks and old is None and new is not None:  # a new empty file
        hunks.append(HunkSpan(0, 0, 0, 0, "@@ -0,0 +0,0 @@", ()))
    if not hunks:
        return LineDiff("", [], 0)
    rows = [row for hunk in hunks for row in (hunk.header, *hunk.lines)]
    return LineDiff("\n".join(header + rows) + "\n", added, removed, tuple(hunks))


# Above this many cells (lines of one side times lines of the other) difflib's matcher is not
# run on a region directly: on many repeated lines (a replace_all in a lock file) it is far
# worse than quadratic. Such regions are cut at lines unique to both sides (the anchors of a
# patience diff) first; what stays too large is paired line by line, or replaced whole.
MATCHER_CELLS = 250_000
_MAX_DEPTH = 8

Opcode = tuple[str, int, int, int, int]  # difflib's (tag, i1, i2, j1, j2)


def line_opcodes(a: list[str], b: list[str], cells: int = MATCHER_CELLS) -> list[Opcode]:
    """Edit operations turning ``a`` into ``b``, in time bounded by the sizes, not their product."""
    ops: list[Opcode] = []
    _diff_region(a, 0, len(a), b, 0, len(b), ops, 0, cells)
    merged: list[Opcode] = []
    for tag, i1, i2, j1, j2 in ops:
        if i1 == i2 and j1 == j2:
            continue
        if merged and merged[-1][0] == tag:
            last = merged.pop()
            merged.append((tag, last[1], i2, last[3], j2))
        else:
            merged.append((tag, i1, i2, j1, j2))
    return merged


def _diff_region(
    a: list[str],
    alo: int,
    ahi: int,
    b: list[str],
    blo: int,
    bhi: int,
    ops: list[Opcode],
    depth: int,
    cells: int,
) -> None:
    start_a, start_b = alo, blo
    while alo < ahi and blo < bhi and a[alo] == b[blo]:
        alo, blo = alo + 1, blo + 1
    ops.append(("equal", start_a, alo, start_b, blo))
    end_a, end_b = ahi, bhi
    while ahi > alo and bhi > blo and a[ahi - 1] == b[bhi - 1]:
        ahi, bhi = ahi - 1, bhi - 1
    n, m = ahi - alo, bhi - blo
    paired = _paired(a, alo, b, blo, n) if n == m and n > _PAIRED_MAX else None
    if n == 0 or m == 0:
        ops.append(("delete" if n else "insert", alo, ahi, blo, bhi))
    elif paired is not None:
        ops.extend(paired)
    elif n * m <= cells:
        matcher = difflib.SequenceMatcher(None, a[alo:ahi], b[blo:bhi], autojunk=False)
        ops.extend(
            (tag, alo + i1, alo + i2, blo + j1, blo + j2)
            for tag, i1, i2, j1, j2 in matcher.get_opcodes()
        )
    else:
        anchors = _unique_anchors(a, alo, ahi, b, blo, bhi) if depth < _MAX_DEPTH else []
        if anchors:
            i, j = alo, blo
            for ai, bj in anchors:
                if ai > i or bj > j:  # most anchors follow the last one (a run of equal lines)
                    _diff_region(a, i, ai, b, j, bj, ops, depth + 1, cells)
                ops.append(("equal", ai, ai + 1, bj, bj + 1))
                i, j = ai + 1, bj + 1
            _diff_region(a, i, ahi, b, j, bhi, ops, depth + 1, cells)
        elif n == m:  # same length: pair the lines (a replace_all that keeps lines does this)
            ops.extend(
                (
                    "equal" if a[alo + k] == b[blo + k] else "replace",
                    alo + k,
                    alo + k + 1,
                    blo + k,
                    blo + k + 1,
                )
                for k in range(n)
            )
        else:
            ops.append(("replace", alo, ahi, blo, bhi))
    ops.append(("equal", ahi, end_a, bhi, end_b))


# Same-length sides differing in at most this many lines, none of them looking moved (equal
# to a line at most this many lines further down the other side), are paired line by line
# (edits far apart that keep the line count: a multiedit's); the matcher or the anchors
# would take milliseconds to find the same.
_PAIRED_MAX = 32


def _paired(a: list[str], alo: int, b: list[str], blo: int, n: int) -> list[Opcode] | None:
    """``n`` lines of each side paired, when few differ and none looks moved (a line equal
    to a line of the other side a few lines further down); else None."""
    differ = list(
        itertools.islice(
            itertools.compress(range(n), map(operator.ne, a[alo : alo + n], b[blo : blo + n])),
            _PAIRED_MAX + 1,
        )
    )
    if len(differ) > _PAIRED_MAX:
        return None
    for k in differ:  # a block moved down or up by up to _PAIRED_MAX lines is not paired
        for d in range(1, min(_PAIRED_MAX, n - 1 - k) + 1):
            if a[alo + k + d] == b[blo + k] or a[alo + k] == b[blo + k + d]:
                return None
    ops: list[Opcode] = []
    done = 0
    for k in differ:
        if k > done:
            ops.append(("equal", alo + done, alo + k, blo + done, blo + k))
        ops.append(("replace", alo + k, alo + k + 1, blo + k, blo + k + 1))
        done = k + 1
    if done < n:
        ops.append(("equal", alo + done, alo + n, blo + done, blo + n))
    return ops


def _unique_anchors(
    a: list[str], alo: int, ahi: int, b: list[str], blo: int, bhi: int
) -> list[tuple[int, int]]:
    """Lines occurring once in each side, in the longest order both sides agree on."""
    counts: dict[str, list[int]] = {}
    for i in range(alo, ahi):
        entry = counts.setdefault(a[i], [0, 0, i, -1])
        entry[0] += 1
    for j in range(blo, bhi):
        seen = counts.get(b[j])
        if seen is not None:
            seen[1] += 1
            seen[3] = j
    pairs = sorted((e[2], e[3]) for e in counts.values() if e[0] == 1 and e[1] == 1)
    # Longest increasing subsequence of the b positions (patience sorting).
    tails: list[int] = []
    tail_index: list[int] = []
    previous = [-1] * len(pairs)
    for k, (_, j) in enumerate(pairs):
        at = bisect.bisect_left(tails, j)
        if at == len(tails):
            tails.append(j)
            tail_index.append(k)
        else:
            tails[at] = j
            tail_index[at] = k
        previous[k] = tail_index[at - 1] if at else -1
    chain = []
    k = tail_index[-1] if tail_index else -1
    while k != -1:
        chain.append(pairs[k])
        k = previous[k]
    return chain[::-1]


def group_opcodes(ops: list[Opcode], context: int = CONTEXT) -> list[list[Opcode]]:
    """Opcodes cut into hunks with ``context`` equal lines around each change."""
    if not ops or all(op[0] == "equal" for op in ops):
        return []
    ops = list(ops)
    tag, i1, i2, j1, j2 = ops[0]
    if tag == "equal":
        ops[0] = (tag, max(i1, i2 - context), i2, max(j1, j2 - context), j2)
    tag, i1, i2, j1, j2 = ops[-1]
    if tag == "equal":
        ops[-1] = (tag, i1, min(i2, i1 + context), j1, min(j2, j1 + context))
    groups: list[list[Opcode]] = []
    group: list[Opcode] = []
    for tag, i1, i2, j1, j2 in ops:
        if tag == "equal" and i2 - i1 > 2 * context:
            group.append((tag, i1, i1 + context, j1, j1 + context))
            groups.append(group)
            group = []
            i1, j1 = i2 - context, j2 - context
        group.append((tag, i1, i2, j1, j2))
    if group and not (len(group) == 1 and group[0][0] == "equal"):
        groups.append(group)
    return groups


# What str.splitlines breaks at besides "\n" and "\r\n": when none is there (a lone "\r"
# aside), splitlines is the same split and runs in C.
_OTHER_BREAKS = "\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"


def split_keepends(text: str) -> list[str]:
    """Lines with their ``\n`` (CRLF stays whole); only ``\n`` ends a line."""
    if text.count("\r") == text.count("\r\n") and not any(c in text for c in _OTHER_BREAKS):
        return text.splitlines(keepends=True)
    lines = text.split("\n")
    last = lines.pop()
    out = [line + "\n" for line in lines]
    if last:
        out.append(last)
    return out


_NEEDS_QUOTING = re.compile(
    r'[\x00-\x1f\x7f"\\]|[\x80-\x9f\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069]'
)
_C_ESCAPES = {"\n": "\\n", "\t": "\\t", "\r": "\\r", '"': '\\"', "\\": "\\\\"}


_PAST_ASCII = re.compile(r'[\x00-\x1f\x7f"\\]|[^\x00-\x7f]')


def quote_path(path: str, *, ascii_only: bool = False) -> str:
    """``path`` as a diff header shows it: C-quoted when it holds anything unsafe.

    ``ascii_only``: every character past ASCII is unsafe too, as git shows names by
    default (``core.quotePath``). For the headers a person reads: ``cоnfig.py`` with a
    Cyrillic ``о`` is another file than ``config.py``, and reads ``"b/c\\u043enfig.py"``.
    """
    unsafe = _PAST_ASCII if ascii_only else _NEEDS_QUOTING
    if not unsafe.search(path):
        return path
    return f'"{unsafe.sub(_c_escape, path)}"'


def _c_escape(match: re.Match[str]) -> str:
    char = match.group()
    named = _C_ESCAPES.get(char)
    if named is not None:
        return named
    return f"\\u{ord(char):04x}" if ord(char) < 0x10000 else f"\\U{ord(char):08x}"


def unquote_path(text: str) -> str:
    """The inverse of ``quote_path`` (a header path, quoted or not)."""
    if len(text) < 2 or not (text.startswith('"') and text.endswith('"')):
        return text
    table = {"n": "\n", "t": "\t", "r": "\r", '"': '"', "\\": "\\"}
    return re.sub(
        r"\\(u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}|.)",
        lambda m: (
            chr(int(m.group(1)[1:], 16))
            if len(m.group(1)) > 1
            else table.get(m.group(1), m.group(1))
        ),
        text[1:-1],
    )


RowRole = Literal["context", "add", "del", "note"]


@dataclass(frozen=True)
class DiffRow:
    """One line of a hunk, by its role; ``text`` is the line without its marker."""

    role: RowRole
    old_line: int | None
    new_line: int | None
    text: str


@dataclass
class DiffHunk:
    header: str
    rows: list[DiffRow] = field(default_factory=list)


@dataclass
class DiffFile:
    """One file of a unified diff: paths (None for /dev/null) and hunks."""

    old_path: str | None = None
    new_path: str | None = None
    hunks: list[DiffHunk] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # lines that are neither header nor row

    @property
    def path(self) -> str:
        return self.new_path or self.old_path or ""

    @property
    def added(self) -> int:
        return sum(r.role == "add" for h in self.hunks for r in h.rows)

    @property
    def removed(self) -> int:
        return sum(r.role == "del" for h in self.hunks for r in h.rows)


_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


def parse_unified(text: str) -> list[DiffFile]:
    """Files, hunks and rows of a unified diff, each row by the role its hunk counts give it."""
    files: list[DiffFile] = []
    current: DiffFile | None = None
    hunk: DiffHunk | None = None
    old_left = new_left = old_no = new_no = 0
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    i = 0
    while i < len(lines):
        line = lines[i]
        i += 1
        if hunk is not None and (old_left > 0 or new_left > 0):
            mark, body = line[:1], line[1:]
            if (mark == " " or line == "") and old_left > 0 and new_left > 0:
                hunk.rows.append(DiffRow("context", old_no, new_no, body))
                old_no, new_no, old_left, new_left = (
                    old_no + 1,
                    new_no + 1,
                    old_left - 1,
                    new_left - 1,
                )
                continue
            if mark == "-" and old_left > 0:
                hunk.rows.append(DiffRow("del", old_no, None, body))
                old_no, old_left = old_no + 1, old_left - 1
                continue
            if mark == "+" and new_left > 0:
                hunk.rows.append(DiffRow("add", None, new_no, body))
                new_no, new_left = new_no + 1, new_left - 1
                continue
        if hunk is not None and line.startswith("\\"):
            hunk.rows.append(DiffRow("note", None, None, line[1:].strip()))
            continue
        match = _HUNK.match(line)
        if match:
            if current is None:
                current = DiffFile()
                files.append(current)
            old_no, new_no = int(match.group(1)), int(match.group(3))
            old_left = 1 if match.group(2) is None else int(match.group(2))
            new_left = 1 if match.group(4) is None else int(match.group(4))
            # An empty range names the line before it.
            old_no, new_no = (
                max(old_no, 1) if old_left else old_no + 1,
                max(new_no, 1) if new_left else new_no + 1,
            )
            hunk = DiffHunk(line)
            current.hunks.append(hunk)
            continue
        if line.startswith("--- ") and i < len(lines) and lines[i].startswith("+++ "):
            current = DiffFile(_header_path(line[4:], "a/"), _header_path(lines[i][4:], "b/"))
            files.append(current)
            hunk = None
            i += 1
            continue
        if current is None:
            current = DiffFile()
            files.append(current)
        current.notes.append(line)
        hunk = None
    return files


def _header_path(raw: str, prefix: str) -> str | None:
    path = unquote_path(raw.split("\t")[0] if not raw.startswith('"') else raw)
    if path == "/dev/null":
        return None
    return path[len(prefix) :] if path.startswith(prefix) else path


def common_affixes(a: list[str], b: list[str]) -> tuple[int, int]:
    """How many lines ``a`` and ``b`` share at the start, and then at the end.

    Lines are compared a slice at a time (in C), in steps that double while they
    match and halve, down to one line, once they do not.
    """
    limit = min(len(a), len(b))
    prefix, step = 0, 16
    while step:
        end = prefix + step
        if end <= limit and a[prefix:end] == b[prefix:end]:
            prefix, step = end, min(step * 2, 4096)
        else:
            step //= 2
    room = limit - prefix  # the suffix may not overlap the prefix
    n, m = len(a), len(b)
    suffix, step = 0, 16
    while step:
        end = suffix + step
        if end <= room and a[n - end : n - suffix] == b[m - end : m - suffix]:
            suffix, step = end, min(step * 2, 4096)
        else:
            step //= 2
    return prefix, suffix


def _range(start: int, length: int) -> str:
    # Unified diff ranges are 1-based; an empty range names the line before it.
    first = start + 1 if length else start
    return f"{first}" if length == 1 else f"{first},{length}"


def _bare(lines: list[str]) -> list[str]:
    """``lines`` (from ``split_keepends``) without their ``\n`` and then one ``\r``."""
    joined = "".join(lines)
    if not joined or "\r" in joined:
        return [line.removesuffix("\n").removesuffix("\r") for line in lines]
    # Only the last line may lack its "\n": splitting the whole at "\n" gives the same.
    bare = joined.split("\n")
    if joined.endswith("\n"):
        bare.pop()
    return bare


def _crlf_only(text: str) -> bool:
    """Every ``\n`` of ``text`` ends a CRLF (true of a text with no line end)."""
    return text.count("\n") == text.count("\r\n")


def _lines(mark: str, lines: list[str], crlf: bool = False) -> list[str]:
    """The rows of ``lines`` (from ``split_keepends``) marked ``mark``; with ``crlf`` (every
    line end of the diff is CRLF) a CRLF ending is shown as a line end, else its ``\r`` is
    kept in the row."""
    if lines and lines[-1].endswith("\n"):
        joined = "".join(lines)
        if not crlf or "\r" not in joined:  # no CRLF to show as a line end: mark lines in C
            rows = (mark + joined.replace("\n", "\n" + mark)).split("\n")
            rows.pop()  # the mark after the last newline
            return rows
    out = []
    for line in lines:
        if line.endswith("\n"):  # with crlf, a CRLF ending is a line end, not a "\r"
            out.append(mark + line[:-2] if crlf and line.endswith("\r\n") else mark + line[:-1])
        else:
            out.append(mark + line)
            out.append(_NO_NEWLINE)
    return out


_CELL_HEADER = re.compile(r"^(#%%+) cell \S+ \((?:code|markdown|raw)\)$")


def _cell_section(lines: list[str], first: int) -> str:
    """`` <header>`` of the cell holding line ``first`` (0-based) of a cell view, unless that
    line is the header itself ("" then, and for a text that is no cell view).

    A view starts with a header, and every header uses that one's marker (``#%%``, made
    longer until no source line starts with it: ``runtime/notebook.py``), so a source line
    that looks like a header with a shorter marker is not taken for one.
    """
    found = _CELL_HEADER.match(lines[0].removesuffix("\n")) if lines else None
    if found is None:
        return ""
    marker = found.group(1) + " "

    def header(index: int) -> str | None:
        line = lines[index].removesuffix("\n")
        return line if line.startswith(marker) and _CELL_HEADER.match(line) else None

    if first < len(lines) and header(first) is not None:
        return ""
    for index in range(min(first, len(lines)) - 1, -1, -1):
        line = header(index)
        if line is not None:
            return " " + line
    return ""
