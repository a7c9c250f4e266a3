"""Exact string replacement, and helpful failures when the match is not exact.

Writes must target: ``old_string`` has to occur exactly once (or the caller
asks for every occurrence). When it occurs nowhere, the closest near misses
are reported with what differs (whitespace, indentation, line endings,
escapes); when it occurs several times, every occurrence is a candidate.
"""

from __future__ import annotations

import difflib
import re

from grinta_jupyter.runtime.errors import (
    AMBIGUOUS_MATCH,
    INVALID_ARGS,
    NO_CHANGE,
    NOT_FOUND,
    Candidate,
    fail,
)
from grinta_jupyter.runtime.textfile import line_of, split_lines
from grinta_jupyter.tools.base import StagedFile

MAX_NEAR_MISSES = 3
_ESCAPES = {"\\n": "\n", "\\t": "\t", '\\"': '"', "\\'": "'", "\\\\": "\\"}


def replace_in(staged: StagedFile, old: str, new: str, replace_all: bool = False) -> int:
    """Replace ``old`` with ``new`` in the staged text; return how many were replaced."""
    if old == "":
        raise fail(INVALID_ARGS, "old_string is empty; to write a new file use create")
    if old == new:
        raise fail(NO_CHANGE, "old_string and new_string are identical; nothing would change")
    text = staged.text
    conventions = staged.conventions
    needle, replacement = conventions.adapt(old), conventions.adapt(new)
    offsets = find_all(text, needle)
    if not offsets and needle != old:  # a file with mixed line endings
        needle, replacement = old, new
        offsets = find_all(text, needle)
    if not offsets:
        raise fail(NOT_FOUND, f"old_string was not found in {staged.rel}", near_misses(staged, old))
    if len(offsets) > 1 and not replace_all:
        lines = [line_of(text, o) for o in offsets]
        raise fail(
            AMBIGUOUS_MATCH,
            f"old_string occurs {len(offsets)} times in {staged.rel} (lines "
            f"{', '.join(map(str, lines[:20]))}); add surrounding lines to make it unique, "
            "or set replace_all",
            [Candidate(staged.rel, line, snippet(text, line)) for line in lines],
        )
    staged.text = (
        text.replace(needle, replacement)
        if replace_all
        else (text[: offsets[0]] + replacement + text[offsets[0] + len(needle) :])
    )
    return len(offsets)


def find_all(text: str, needle: str) -> list[int]:
    """Start offsets of non-overlapping occurrences of ``needle``."""
    offsets = []
    start = text.find(needle)
    while start != -1:
        offsets.append(start)
        start = text.find(needle, start + len(needle))
    return offsets


def snippet(text: str, line: int, around: int = 2, lines: list[str] | None = None) -> str:
    """Lines ``line - around`` .. ``line + around``, numbered like ``read`` numbers them."""
    all_lines = lines if lines is not None else split_lines(text)
    first = max(1, line - around)
    last = min(len(all_lines), line + around)
    return "\n".join(f"{n:6}\t{all_lines[n - 1]}" for n in range(first, last + 1))


def near_misses(staged: StagedFile, old: str) -> list[Candidate]:
    """Up to three places that almost match ``old``, each saying what differs."""
    text = staged.text
    file_lines = split_lines(text)
    found: list[Candidate] = []

    unescaped = _unescape(old)
    if unescaped != old:
        for offset in find_all(text, staged.conventions.adapt(unescaped))[:MAX_NEAR_MISSES]:
            line = line_of(text, offset)
            found.append(
                Candidate(
                    staged.rel,
                    line,
                    snippet(text, line, lines=file_lines),
                    note='escapes: old_string has literal \\n or \\" sequences; '
                    "send real newlines and quotes",
                )
            )
    if found:
        return found

    old_lines = split_lines(old.replace("\r\n", "\n")) or [old]
    width = len(old_lines)
    seen: set[int] = set()
    for start in _normalized_matches(file_lines, old_lines):
        seen.add(start)
        note = _whitespace_note(file_lines[start : start + width], old_lines)
        found.append(
            Candidate(staged.rel, start + 1, snippet(text, start + 1, lines=file_lines), note=note)
        )
        if len(found) == MAX_NEAR_MISSES:
            return found

    scored = sorted(
        (
            (_similarity(file_lines[s : s + width], old_lines), s)
            for s in _anchors(file_lines, old_lines)
            if s not in seen
        ),
        reverse=True,
    )
    for score, start in scored:
        if score < 0.5 or len(found) == MAX_NEAR_MISSES:
            break
        note = _first_difference(file_lines[start : start + width], old_lines, score)
        found.append(
            Candidate(staged.rel, start + 1, snippet(text, start + 1, lines=file_lines), note=note)
        )
    return found


def _unescape(text: str) -> str:
    return re.sub(r"\\[nt\"'\\]", lambda m: _ESCAPES[m.group()], text)


def _squash(line: str) -> str:
    return " ".join(line.split())


def _normalized_matches(file_lines: list[str], old_lines: list[str]) -> list[int]:
    """Starts where the lines match once whitespace is ignored."""
    target = [_squash(line) for line in old_lines]
    first = target[0]
    starts = []
    for i, line in enumerate(file_lines):
        if (
            _squash(line) == first
            and [_squash(x) for x in file_lines[i : i + len(target)]] == target
        ):
            starts.append(i)
    return starts


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


def _anchors(file_lines: list[str], old_lines: list[str]) -> set[int]:
    """Window starts worth scoring: where some line of ``old`` (nearly) appears."""
    stripped = {}
    for i, line in enumerate(file_lines):
        stripped.setdefault(line.strip(), []).append(i)
    starts: set[int] = set()
    for k, line in enumerate(old_lines):
        key = line.strip()
        if len(key) < 3:
            continue
        for i in stripped.get(key, ())[:50]:
            starts.add(max(0, i - k))
    if not starts:  # no line survives intact: look for lines that are close
        keys = [k for k in stripped if k]
        for k, line in enumerate(old_lines[:5]):
            for close in difflib.get_close_matches(line.strip(), keys, n=5, cutoff=0.6):
                for i in stripped[close][:10]:
                    starts.add(max(0, i - k))
    return starts


def _similarity(found: list[str], wanted: list[str]) -> float:
    return difflib.SequenceMatcher(
        None, "\n".join(found), "\n".join(wanted), autojunk=False
    ).ratio()


def _first_difference(found: list[str], wanted: list[str], score: float) -> str:
    for k, (have, want) in enumerate(zip(found, wanted, strict=False)):
        if have != want:
            return (
                f"{score:.0%} similar; line {k + 1} of old_string differs: "
                f"file has {have.strip()[:80]!r}, old_string has {want.strip()[:80]!r}"
            )
    return f"{score:.0%} similar; old_string has {len(wanted)} lines, the file region {len(found)}"
