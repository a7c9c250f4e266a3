"""Exact string replacement, and helpful failures when the match is not exact.

Writes must target: ``old_string`` has to occur exactly once (or the caller
asks for every occurrence). When it occurs nowhere, the closest near misses
are reported with what differs (whitespace, indentation, line endings,
escapes); when it occurs several times, the first occurrences are candidates
and the rest are counted.

Every failure costs time linear in the file, whatever the model sends: the
occurrences are counted in one pass and only the first few are located (line
numbers counted incrementally, snippets cut from around each offset); the
near-miss search looks at the first ``NEAR_MISS_MAX_LINES`` lines for at most
``NEAR_MISS_SECONDS`` and says so when it stopped early.
"""

from __future__ import annotations

import difflib
import heapq
import re
import time
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass

from grinta_jupyter.runtime.errors import (
    AMBIGUOUS_MATCH,
    FILE_TOO_LARGE,
    INVALID_ARGS,
    NO_CHANGE,
    NOT_FOUND,
    Candidate,
    ToolError,
    ToolFailure,
    fail,
)
from grinta_jupyter.runtime.files import size_text
from grinta_jupyter.runtime.notebook import NotebookFile
from grinta_jupyter.runtime.secrets import before_cut
from grinta_jupyter.runtime.textfile import line_numbers
from grinta_jupyter.tools.base import StagedFile

MAX_NEAR_MISSES = 3
MAX_LISTED = 10  # occurrences of an ambiguous old_string named; the rest are counted
MAX_SNIPPETS = 5  # of which this many show their surrounding lines
SNIPPET_LINE_CHARS = 160  # a minified line in a snippet is cut here
NEAR_MISS_MAX_LINES = 200_000
NEAR_MISS_SECONDS = 2.0
_MAX_ANCHORS = 400  # windows scored for similarity
_MAX_COMPARED_CHARS = 4_000  # of a window and of old_string, per similarity score
_MAX_CLOSE_KEYS = 2_000  # distinct lines difflib compares one old line with
_ESCAPES = {"\\n": "\n", "\\t": "\t", '\\"': '"', "\\'": "'", "\\\\": "\\"}


@dataclass(frozen=True)
class Naming:
    """The words a refusal uses for the calling tool's arguments: the model reads them and
    must find them in the tool it called."""

    old: str = "old_string"
    new: str = "new_string"
    unique: str = "add surrounding lines to make it unique, or set replace_all"
    new_file: str = "create"


INTENT_NAMING = Naming()


def replace_in(
    staged: StagedFile,
    old: str,
    new: str,
    replace_all: bool = False,
    *,
    max_chars: int | None = None,
    naming: Naming = INTENT_NAMING,
) -> int:
    """Replace ``old`` with ``new`` in the staged text; return how many were replaced.

    ``max_chars`` bounds the text a ``replace_all`` may produce (FILE_TOO_LARGE past it).
    """
    if old == "":
        raise fail(
            INVALID_ARGS, f"{naming.old} is empty; to write a new file use {naming.new_file}"
        )
    if old == new:
        raise fail(NO_CHANGE, f"{naming.old} and {naming.new} are identical; nothing would change")
    if isinstance(staged.original, NotebookFile):  # within cell sources, never across cells
        from grinta_jupyter.tools.cells import replace_in_cells

        return replace_in_cells(staged, old, new, replace_all, max_chars, naming)
    text = staged.text
    if "\n" in old and _mixed_endings(text):
        return _replace_in_mixed(staged, old, new, replace_all, max_chars, naming)
    conventions = staged.conventions
    needle, replacement = conventions.adapt(old), conventions.adapt(new)
    count = text.count(needle)  # non-overlapping, as str.replace counts them
    _check_target(staged, text, old, needle, count, replace_all, naming)
    if replace_all and max_chars is not None:
        size = len(text) + count * (len(replacement) - len(needle))
        if size > max_chars:
            raise fail(
                FILE_TOO_LARGE,
                f"replacing all {count} occurrences would make {staged.rel} about "
                f"{size_text(size)}, over the {size_text(max_chars)} limit; nothing was changed",
            )
    staged.text = text.replace(needle, replacement, -1 if replace_all else 1)
    return count


def _check_target(
    staged: StagedFile,
    text: str,
    old: str,
    needle: str,
    count: int,
    replace_all: bool,
    naming: Naming,
) -> None:
    """Refuse a ``needle`` that occurs nowhere, or (without ``replace_all``) more than once.

    Occurrences that overlap count apart: ``aa`` occurs twice in ``aaa``, and which one
    the model meant is a guess (``str.count`` counts one). ``replace_all`` replaces left
    to right without overlap, as ``str.replace`` does.
    """
    if not count:
        found, partial = near_misses(staged, old)
        note = (
            f" (near misses were looked for in part of the file only: {partial})" if partial else ""
        )
        raise fail(NOT_FOUND, f"{naming.old} was not found in {staged.rel}{note}", found)
    if replace_all:
        return
    if count > 1:
        raise _ambiguous(staged.rel, text, needle, count, naming)
    first = text.find(needle)
    second = text.find(needle, first + 1)
    if second != -1:  # starts inside the first: the two overlap
        raise _ambiguous(staged.rel, text, needle, 2, naming, (first, second))


def _mixed_endings(text: str) -> bool:
    """Whether ``text`` ends some lines with CRLF and others with a bare LF."""
    crlf = text.count("\r\n")
    return 0 < crlf < text.count("\n")


def _replace_in_mixed(
    staged: StagedFile,
    old: str,
    new: str,
    replace_all: bool,
    max_chars: int | None,
    naming: Naming,
) -> int:
    """``replace_in`` for a file whose lines end some with CRLF, some with LF.

    The model reads lines, not their endings, so ``old`` is matched against the text with
    every CRLF read as LF: a match may span lines of both kinds, and two places that read
    the same are two matches whatever their endings. Each match is replaced in the bytes
    on disk (every other line keeps its ending); the new lines take the ending of the
    first line the match spans.
    """
    text = staged.text
    view = text.replace("\r\n", "\n")
    needle, replacement = old.replace("\r\n", "\n"), new.replace("\r\n", "\n")
    count = view.count(needle)
    _check_target(staged, view, old, needle, count, replace_all, naming)
    wanted = count if replace_all else 1
    pieces: list[str] = []
    size = 0
    copied, at_view, at_text = 0, 0, 0  # text[:copied] is in pieces; at_view <-> at_text
    for start_view in first_offsets(view, needle, wanted):
        start = _text_offset(text, at_view, at_text, start_view)
        end = _text_offset(text, start_view, start, start_view + len(needle))
        line_end = text.find("\n", start, end)
        ending = "\r\n" if line_end > 0 and text[line_end - 1] == "\r" else "\n"
        adapted = replacement.replace("\n", ending) if ending != "\n" else replacement
        pieces += (text[copied:start], adapted)
        size += start - copied + len(adapted)
        if max_chars is not None and size > max_chars:
            raise fail(
                FILE_TOO_LARGE,
                f"replacing all {count} occurrences would make {staged.rel} over the "
                f"{size_text(max_chars)} limit; nothing was changed",
            )
        copied, at_view, at_text = end, start_view + len(needle), end
    pieces.append(text[copied:])
    staged.text = "".join(pieces)
    return count


def _text_offset(text: str, from_view: int, from_text: int, view_offset: int) -> int:
    """The offset in ``text`` of ``view_offset`` in its CRLF-as-LF view, counting on from a
    pair of offsets known to match (``from_view`` in the view is ``from_text`` in the text,
    not inside a CRLF). Linear in the distance, in a few passes of ``str.count``."""
    distance = view_offset - from_view
    at = from_text + distance
    while True:  # each CRLF met on the way is one character more in the text
        further = from_text + distance + text.count("\r\n", from_text, at)
        if further == at:
            break
        at = further
    if 0 < at < len(text) and text[at - 1] == "\r" and text[at] == "\n":
        at += 1  # the view's LF here stands for the whole CRLF, which lies before the offset
    return at


def _ambiguous(
    rel: str,
    text: str,
    needle: str,
    count: int,
    naming: Naming,
    overlapping: tuple[int, int] | None = None,
) -> ToolFailure:
    """AMBIGUOUS_MATCH naming the first occurrences (with context) and counting the rest;
    ``overlapping``: the two offsets of a needle that occurs twice, the second inside the first."""
    offsets = list(overlapping or first_offsets(text, needle, MAX_LISTED))
    lines = line_numbers(text, offsets)
    candidates = [
        Candidate(rel, line, _snippet_at(text, offset, line) if i < MAX_SNIPPETS else "")
        for i, (offset, line) in enumerate(zip(offsets, lines, strict=True))
    ]
    listed = ", ".join(map(str, lines)) + (", ..." if count > len(lines) else "")
    how = ", overlapping" if overlapping else ""
    return ToolFailure(
        ToolError(
            AMBIGUOUS_MATCH,
            f"{naming.old} occurs {count} times in {rel} (lines {listed}{how}); {naming.unique}",
            tuple(candidates),
            more=count - len(candidates),
        )
    )


def first_offsets(text: str, needle: str, limit: int) -> Iterator[int]:
    """Start offsets of the first ``limit`` non-overlapping occurrences of ``needle``."""
    found = 0
    start = text.find(needle)
    while start != -1 and found < limit:
        yield start
        found += 1
        start = text.find(needle, start + len(needle))


def snippet(text: str, line: int, around: int = 2, lines: list[str] | None = None) -> str:
    """Lines ``line - around`` .. ``line + around``, numbered like ``read`` numbers them."""
    first = max(1, line - around)
    if lines is not None:
        last = min(len(lines), line + around)
        return "\n".join(_row(n, lines[n - 1]) for n in range(first, last + 1))
    start = 0
    for _ in range(first - 1):  # to the start of line ``first``, without splitting the file
        start = text.find("\n", start) + 1
        if start == 0:
            return ""
    return _rows(text, start, first, line + around - first + 1)


def _snippet_at(text: str, offset: int, line: int, around: int = 2) -> str:
    """The lines around character ``offset`` (on ``line``), cut from the text in place."""
    start = text.rfind("\n", 0, offset) + 1
    first = line
    while first > 1 and first > line - around:
        start = text.rfind("\n", 0, start - 1) + 1
        first -= 1
    return _rows(text, start, first, line + around - first + 1)


def _rows(text: str, start: int, first: int, count: int) -> str:
    """``count`` numbered lines of ``text`` from offset ``start`` (line ``first``)."""
    rows = []
    for n in range(first, first + count):
        if start >= len(text):
            break  # past the end (a final newline adds no line)
        end = text.find("\n", start)
        rows.append(_row(n, text[start : len(text) if end == -1 else end].removesuffix("\r")))
        if end == -1:
            break
        start = end + 1
    return "\n".join(rows)


def _row(number: int, line: str) -> str:
    if len(line) > SNIPPET_LINE_CHARS:
        line = before_cut(line)  # a cut through a secret keeps no piece of it
    if len(line) > SNIPPET_LINE_CHARS:
        line = line[:SNIPPET_LINE_CHARS] + f" [... {len(line) - SNIPPET_LINE_CHARS} more chars]"
    return f"{number:6}\t{line}"


def near_misses(staged: StagedFile, old: str) -> tuple[list[Candidate], str]:
    """Up to three places that almost match ``old``, each saying what differs.

    The second value says where the search stopped early ("" when it looked at
    everything): past ``NEAR_MISS_MAX_LINES`` lines, or ``NEAR_MISS_SECONDS``.
    """
    text = staged.text
    deadline = time.monotonic() + NEAR_MISS_SECONDS
    found: list[Candidate] = []

    unescaped = _unescape(old)
    if unescaped != old:
        needle = staged.conventions.adapt(unescaped)
        offsets = list(first_offsets(text, needle, MAX_NEAR_MISSES))
        for offset, line in zip(offsets, line_numbers(text, offsets), strict=True):
            found.append(
                Candidate(
                    staged.rel,
                    line,
                    _snippet_at(text, offset, line),
                    note='escapes: old_string has literal \\n or \\" sequences; '
                    "send real newlines and quotes",
                )
            )
    if found:
        return found, ""

    parts = text.split("\n", NEAR_MISS_MAX_LINES)
    partial = ""
    if len(parts) > NEAR_MISS_MAX_LINES:
        parts.pop()  # the unsplit rest of the file
        partial = f"its first {NEAR_MISS_MAX_LINES:,} lines"
    elif parts and parts[-1] == "":
        parts.pop()  # a final newline adds no line
    file_lines = [line.removesuffix("\r") for line in parts]
    del parts
    old_lines = [line.removesuffix("\r") for line in old.replace("\r\n", "\n").split("\n")]
    if len(old_lines) > 1 and old_lines[-1] == "":
        old_lines.pop()
    width = len(old_lines)
    seen: set[int] = set()
    try:
        for start in _normalized_matches(file_lines, old_lines, deadline):
            seen.add(start)
            note = _whitespace_note(file_lines[start : start + width], old_lines)
            found.append(
                Candidate(
                    staged.rel, start + 1, snippet(text, start + 1, lines=file_lines), note=note
                )
            )
            if len(found) == MAX_NEAR_MISSES:
                return found, ""
        scored = []
        for start in sorted(_anchors(file_lines, old_lines, deadline) - seen):
            _check(deadline)
            score = _similarity(file_lines[start : start + width], old_lines)
            if score >= 0.5:
                scored.append((score, -start))
    except _OutOfTime:
        return found, f"what {NEAR_MISS_SECONDS:g} s allowed"
    for score, neg_start in sorted(scored, reverse=True):
        if len(found) == MAX_NEAR_MISSES:
            break
        start = -neg_start
        note = _first_difference(file_lines[start : start + width], old_lines, score)
        found.append(
            Candidate(staged.rel, start + 1, snippet(text, start + 1, lines=file_lines), note=note)
        )
    return found, partial


class _OutOfTime(Exception):
    """The near-miss search ran past its time budget."""


def _check(deadline: float) -> None:
    if time.monotonic() > deadline:
        raise _OutOfTime


def _unescape(text: str) -> str:
    return re.sub(r"\\[nt\"'\\]", lambda m: _ESCAPES[m.group()], text)


def _squash(line: str) -> str:
    return " ".join(line.split())


def _normalized_matches(
    file_lines: list[str], old_lines: list[str], deadline: float
) -> Iterator[int]:
    """Starts where the lines match once whitespace is ignored."""
    target = [_squash(line) for line in old_lines]
    first = target[0]
    # A cheap test first: the line must contain the first word of old_string's first line.
    word = first.split(" ", 1)[0]
    for i, line in enumerate(file_lines):
        if i % 1024 == 0:
            _check(deadline)
        if word not in line or _squash(line) != first:
            continue
        _check(deadline)
        window = file_lines[i : i + len(target)]
        if len(window) == len(target) and all(
            _squash(have) == want for have, want in zip(window, target, strict=True)
        ):
            yield i


def _whitespace_note(found: list[str], wanted: list[str]) -> str:
    for have, want in zip(found, wanted, strict=False):
        if have == want:
            continue
        if have.strip() == want.strip():
            ind_have = have[: len(have) - len(have.lstrip())]
            ind_want = want[: len(want) - len(want.lstrip())]
            if ("\t" in ind_have) != ("\t" in ind_want):
                return "indentation differs: tabs versus spaces"
            return (
                f"indentation differs: the file indents this line by {len(ind_have)}, "
                f"old_string by {len(ind_want)}"
            )
        if have.rstrip() == want.rstrip():
            return "trailing whitespace differs"
        return "whitespace inside a line differs"
    return "whitespace differs"


def _anchors(file_lines: list[str], old_lines: list[str], deadline: float) -> set[int]:
    """Window starts worth scoring: where some line of ``old`` (nearly) appears."""
    wanted: dict[str, list[int]] = {}  # a line of old, stripped -> where it is in old
    for k, line in enumerate(old_lines):
        key = line.strip()
        if len(key) >= 3:
            wanted.setdefault(key, []).append(k)
    starts: set[int] = set()
    seen: dict[str, int] = {}
    for i, line in enumerate(file_lines):
        if i % 4096 == 0:
            _check(deadline)
        key = line.strip()
        if key in wanted and seen.get(key, 0) < 50:
            seen[key] = seen.get(key, 0) + 1
            starts.update(max(0, i - k) for k in wanted[key])
            if len(starts) >= _MAX_ANCHORS:
                return starts
    if starts:
        return starts
    # No line survives intact: look for lines that are close.
    _check(deadline)
    distinct = list(dict.fromkeys(line.strip() for line in file_lines))
    close: dict[str, int] = {}  # a close file line -> the line of old it resembles
    for k, line in enumerate(old_lines[:5]):
        _check(deadline)
        key = line.strip()
        for match in difflib.get_close_matches(key, _close_keys(distinct, key), n=5, cutoff=0.6):
            close.setdefault(match, k)
    found: dict[str, int] = {}
    for i, line in enumerate(file_lines):
        key = line.strip()
        if key in close and found.get(key, 0) < 10:
            found[key] = found.get(key, 0) + 1
            starts.add(max(0, i - close[key]))
    return starts


def _close_keys(distinct: list[str], key: str) -> list[str]:
    """Distinct lines difflib could find close to ``key``: similar length, a bounded number."""
    low, high = len(key) * 0.6, len(key) / 0.6 + 1
    keys = [k for k in distinct if k and low <= len(k) <= high][: _MAX_CLOSE_KEYS * 10]
    if len(keys) <= _MAX_CLOSE_KEYS:
        return keys
    letters = set(key)
    return heapq.nlargest(_MAX_CLOSE_KEYS, keys, key=lambda k: len(letters.intersection(k)))


def _similarity(found: list[str], wanted: list[str]) -> float:
    a = "\n".join(found)[:_MAX_COMPARED_CHARS]
    b = "\n".join(wanted)[:_MAX_COMPARED_CHARS]
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    if matcher.real_quick_ratio() < 0.5 or matcher.quick_ratio() < 0.5:
        return 0.0  # an upper bound below the threshold: not worth the full comparison
    return matcher.ratio()


def _first_difference(found: list[str], wanted: list[str], score: float) -> str:
    for k, (have, want) in enumerate(zip(found, wanted, strict=False)):
        if have != want:
            why = _unseen_difference(have, want)
            show = ascii if why else repr  # escaped, what differs can be seen
            return (
                f"{score:.0%} similar; line {k + 1} of old_string differs: "
                f"file has {show(have.strip()[:80])}, old_string has {show(want.strip()[:80])}"
                f"{why}"
            )
    return f"{score:.0%} similar; old_string has {len(wanted)} lines, the file region {len(found)}"


def _unseen_difference(have: str, want: str) -> str:
    """Why two lines that print alike differ: another Unicode form of the same letters, or
    invisible characters (zero-width, BOM, direction marks); "" when the difference shows."""
    if unicodedata.normalize("NFC", have) == unicodedata.normalize("NFC", want):
        return (
            " (the same letters in another Unicode form, NFC versus NFD: matching is exact, "
            "copy the text from the file)"
        )
    if _visible(have) == _visible(want):
        extra = sorted({f"U+{ord(c):04X}" for c in have + want if unicodedata.category(c) == "Cf"})
        return f" (invisible characters differ: {', '.join(extra[:5])}; matching is exact)"
    return ""


def _visible(line: str) -> str:
    return "".join(c for c in line if unicodedata.category(c) != "Cf")
