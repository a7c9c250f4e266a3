"""Shortcuts on the way of a large ``create`` (issue 13), each the same answer as the plain
per-line definition it replaced, on random texts full of the characters that matter.

- ``guards._comments_may_refuse`` looks only at the lines holding a backslash, found with
  ``str.find``, instead of at every line.
- ``guards._may_open`` keeps exactly the lines whose first non-blank character may open a
  placeholder (the regex it replaced also kept lines after a form feed or U+2028, which the
  per-line test then dropped).
- ``textfile.line_count`` counts what ``split_lines`` would make.
"""

from __future__ import annotations

import random

import pytest

from grinta_jupyter.runtime import guards
from grinta_jupyter.runtime.textfile import line_count, split_lines

ALPHABET = ["#", "\\", "n", "r", "t", '"', "\n", "\n", " ", "a", "\t", "\r", "\r\n", "\x0c",
            "\u2028", "\x1c", "/", "*", ".", "\u2026", "-", "[", "  "]  # fmt: skip


def _texts(seed: int, count: int = 20_000) -> list[str]:
    rng = random.Random(seed)
    return ["".join(rng.choice(ALPHABET) for _ in range(rng.randint(0, 40))) for _ in range(count)]


def _comments_may_refuse_by_line(text: str, newlines: int) -> bool:
    """The definition: every line's escapes from its first ``#`` on, counted line by line."""
    total = 0
    for line in text.split("\n"):
        hash_at = line.find("#")
        if hash_at < 0:
            continue
        found = guards._ESCAPE_PAIR.findall(line, hash_at)
        total += len(found)
        if total > newlines or (len(found) >= 2 and any(e[1] in "nr" for e in found)):
            return True
    return False


@pytest.mark.parametrize("seed", range(3))
def test_the_comment_escape_count_is_the_line_by_line_one(seed: int) -> None:
    rng = random.Random(seed)
    answers = set()
    for text in _texts(seed):
        newlines = rng.randint(0, 4)
        expected = _comments_may_refuse_by_line(text, newlines)
        assert guards._comments_may_refuse(text, newlines) == expected, repr(text)
        answers.add(expected)
    assert answers == {True, False}  # the texts reach both answers


@pytest.mark.parametrize("seed", range(3))
def test_the_placeholder_prefilter_keeps_exactly_the_lines_that_may_open_one(seed: int) -> None:
    lines = [line for text in _texts(seed, 2_000) for line in text.split("\n")]
    added = [(k + 1, line) for k, line in enumerate(lines)]
    expected = [pair for pair in added if pair[1].strip()[:1] in guards._MAY_OPEN]
    assert guards._may_open(added) == expected
    assert 0 < len(expected) < len(added)


def test_line_count_is_the_number_of_split_lines() -> None:
    for text in [*_texts(7, 5_000), "", "\n", "\n\n", "a", "a\n", "a\r\n", "\r\n\r\n"]:
        assert line_count(text) == len(split_lines(text)), repr(text)
