"""search under attack, fourth round (tools/search.py): a single catastrophic match ends at a
Stop and is reported as too slow, a plain-text query cannot hold the GIL past its deadline,
lines are the lines ``read`` numbers, a row cut at its limit keeps no piece of a secret, and
plain text folds case as a regex does."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from grinta_jupyter.runtime.errors import SEARCH_TIMEOUT
from grinta_jupyter.tools.base import Settings
from grinta_jupyter.tools.facade import Runtime
from tests.ticker import tick_gaps

# ``(a|aa)+$`` tries every split of the run of a's before the "!": one match takes minutes.
CATASTROPHIC = {"query": "(a|aa)+$", "regex": True}
SLOW_LINE = "a" * 40 + "!"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    folder = tmp_path / "ws"
    folder.mkdir()
    return folder


def test_stop_ends_a_single_catastrophic_match_at_once(root: Path) -> None:
    (root / "slow.txt").write_text(SLOW_LINE + "\n")
    cancel = threading.Event()
    runtime = Runtime(root, "intent", Settings(search_timeout=20))
    box: list[object] = []
    worker = threading.Thread(
        target=lambda: box.append(runtime.propose("search", CATASTROPHIC, cancel=cancel))
    )
    worker.start()
    time.sleep(0.5)
    assert worker.is_alive(), "the match ended on its own: the line is too short"
    stopped = time.monotonic()
    cancel.set()
    worker.join(20)
    # Before: the cancel was seen at the next line only, so Stop waited out the match's own
    # timeout (the whole 20 s).
    assert time.monotonic() - stopped < 2
    proposal = box[0]
    assert proposal.error is not None and proposal.error.code == SEARCH_TIMEOUT  # type: ignore[attr-defined]
    assert "cancelled" in proposal.error.message  # type: ignore[attr-defined]


def test_a_match_too_slow_on_its_own_is_reported_as_such_long_before_the_deadline(
    root: Path,
) -> None:
    (root / "a.txt").write_text("hello\n" + SLOW_LINE + "\n")
    runtime = Runtime(root, "intent", Settings(search_timeout=30))
    began = time.monotonic()
    proposal = runtime.propose("search", {"query": "(a|aa)+$|hello", "regex": True})
    assert time.monotonic() - began < 15  # two seconds for the line, plus a slow machine
    assert proposal.error is not None and proposal.error.code == SEARCH_TIMEOUT
    assert "the regex is too slow: matching a.txt line 2" in proposal.error.message
    assert [(c.path, c.line) for c in proposal.error.candidates] == [("a.txt", 1)]


def test_a_plain_text_query_ignoring_case_neither_freezes_nor_outlives_its_deadline(
    root: Path,
) -> None:
    # The stdlib engine took the product of both lengths for this: 25 s holding the GIL
    # (every other thread, the kernel's Stop button included, frozen), then "no matches".
    (root / "run.txt").write_text("a" * 1_900_000 + "\n")
    runtime = Runtime(root, "intent", Settings(search_timeout=2))
    began = time.monotonic()
    with tick_gaps() as gaps:
        proposal = runtime.propose("search", {"query": "a" * 1999 + "b"})
    assert time.monotonic() - began < 5
    assert max(gaps) < 1.5
    assert proposal.error is None and proposal.output.startswith("no matches for")  # type: ignore[union-attr]


def test_lines_are_the_lines_read_numbers(root: Path) -> None:
    (root / "win.py").write_bytes(b"x = 1;\r\ny = 2\r\n")
    (root / "a.txt").write_text("one\n\ntwo\n")
    runtime = Runtime(root, "intent", Settings())
    ends = runtime.propose("search", {"query": ";$", "regex": True})
    assert ends.error is None and "win.py:1: x = 1;" in ends.output  # type: ignore[union-attr]
    whole = runtime.propose("search", {"query": "^y = 2$", "regex": True})
    assert whole.error is None and "win.py:2: y = 2" in whole.output  # type: ignore[union-attr]
    # A final newline starts no line: the only empty line is a.txt's second.
    empty = runtime.propose("search", {"query": "^$", "regex": True})
    assert empty.error is None  # type: ignore[union-attr]
    assert empty.output.splitlines() == ["1 matching line in 1 file:", "a.txt:2: "]  # type: ignore[union-attr]


def test_a_row_cut_at_its_limit_keeps_no_piece_of_a_secret(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = "Zx9Qw8Er7Ty6Ui5Op4As3Df2Gh1Jk0"
    monkeypatch.setenv("GRINTA_TEST_API_KEY", secret)
    # The row is cut at 200 characters: 11 of the secret's fell before the cut.
    (root / "a.txt").write_text("needle " + "x" * 181 + " " + secret + "\n")
    proposal = Runtime(root, "intent", Settings()).propose("search", {"query": "needle"})
    assert proposal.error is None
    assert "a.txt:1: needle xxx" in proposal.output  # type: ignore[union-attr]
    assert secret[:4] not in proposal.output  # type: ignore[union-attr]


def test_plain_text_folds_case_as_a_regex_does(root: Path) -> None:
    (root / "tr.txt").write_text("kapı\n")  # a dotless ı
    runtime = Runtime(root, "intent", Settings())
    plain = runtime.propose("search", {"query": "kapi"})
    pattern = runtime.propose("search", {"query": "kapi", "regex": True})
    assert plain.error is None and pattern.error is None
    assert plain.output == pattern.output  # type: ignore[union-attr]


def test_plain_text_finds_the_lines_a_line_by_line_regex_finds(root: Path) -> None:
    # Plain text is looked for in the whole text, once per line it occurs on; the escaped
    # query as a regex is matched line by line. Both must name the same lines and rows.
    import random
    import re

    rng = random.Random(7)
    words = ["ab", "a", "b", "Ab", " ", "\t", "x", "\r", "é"]
    for number in range(40):
        lines = ["".join(rng.choice(words) for _ in range(rng.randrange(0, 8))) for _ in range(9)]
        ending = rng.choice(["\n", "\r\n"])
        text = ending.join(lines) + rng.choice(["", ending])
        (root / f"f{number}.txt").write_bytes(text.encode())
    runtime = Runtime(root, "intent", Settings(search_max_results=10_000))
    for query in ("ab", "a", "b a", "\tx", "Ab", "é"):
        plain = runtime.propose("search", {"query": query})
        pattern = runtime.propose("search", {"query": re.escape(query), "regex": True})
        assert plain.error is None and pattern.error is None, query
        assert plain.output == pattern.output, query  # type: ignore[union-attr]
        assert "matching line" in plain.output, query  # type: ignore[union-attr]
