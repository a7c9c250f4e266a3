"""search under attack, fifth round (tools/search.py): a result stays within the read budget
whatever the paths' length, every path it names is quoted (definitions and skipped files
too), plain text that spans lines is found, and git's and grinta's own state is never
searched."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from grinta_jupyter.runtime.errors import PATH_FORBIDDEN
from grinta_jupyter.tools.base import Settings
from grinta_jupyter.tools.facade import Runtime


@pytest.fixture
def root(tmp_path: Path) -> Path:
    folder = tmp_path / "ws"
    folder.mkdir()
    return folder


def _output(runtime: Runtime, args: dict[str, object]) -> str:
    proposal = runtime.propose("search", args)
    assert proposal.error is None, proposal.error
    return proposal.output


def test_rows_with_very_long_paths_stay_within_the_read_budget(root: Path) -> None:
    deep = root / "/".join(("d" * 200 + str(level)) for level in range(3))
    deep.mkdir(parents=True)
    for number in range(20):
        (deep / (f"{number:02d}" + "f" * 200 + ".txt")).write_text("needle here\n")
    runtime = Runtime(root, "intent", Settings(read_max_chars=5_000))
    output = _output(runtime, {"query": "needle"})
    # Before: all 20 rows of about 830 characters each, 16,800 characters in all.
    assert len(output) <= 5_000
    head, *rows = output.splitlines()
    assert head.startswith("20 matching lines in 20 files (")
    assert f"{20 - len(rows)} not shown: the rows would pass the 5,000-character limit" in head
    assert 1 <= len(rows) < 20
    for row in rows:  # every row shown is whole: its path names the file
        path, line, text = row.split(":", 2)
        assert (root / path).is_file() and line == "1" and text == " needle here"


def test_a_skip_note_of_long_names_stays_within_the_read_budget(root: Path) -> None:
    for number in range(5):
        (root / (f"{number}" + "\u202e" * 84)).write_bytes(b"\x00binary")
    (root / "a.txt").write_text("needle\n")
    runtime = Runtime(root, "intent", Settings(read_max_chars=2_000))
    output = _output(runtime, {"query": "needle"})
    # Before: the names were shown as they are, so their bidi controls reordered what the
    # reader saw; quoted, each is 506 characters, and the five would pass the budget.
    assert "\u202e" not in output
    assert len(output) <= 2_000
    assert output.startswith("1 matching line in 1 file:\na.txt:1: needle\n\nskipped 5 files")


def test_every_path_a_result_names_is_quoted(root: Path) -> None:
    (root / "a\nb.py").write_text("def needle_fn():\n    pass\n")
    (root / "x\ny.bin").write_bytes(b"needle_fn\x00")
    runtime = Runtime(root, "intent", Settings())
    output = _output(runtime, {"query": "needle_fn"})
    # Before: the definition and the skipped file were named as they are, so a name holding
    # a newline started a row of its own ("b.py:1: function needle_fn").
    assert output.splitlines() == [
        "definitions:",
        '"a\\nb.py":1: function needle_fn',
        "",
        "1 matching line in 1 file:",
        '"a\\nb.py":1: def needle_fn():',
        "",
        'skipped 1 file: "x\\ny.bin" (binary)',
    ]


def test_plain_text_that_spans_lines_is_found_in_any_line_ending(root: Path) -> None:
    (root / "unix.py").write_text("x = 1\ndef f():\n    return 1\n")
    (root / "win.py").write_bytes(b"def f():\r\n    return 1\r\ndef f():\r\n    return 2\r\n")
    runtime = Runtime(root, "intent", Settings())
    # Before: every query holding a line break was "no matches" (matched line by line).
    output = _output(runtime, {"query": "def f():\n    return"})
    assert output.splitlines() == [
        "3 matching lines in 2 files:",
        "unix.py:2: def f():",
        "win.py:1: def f():",
        "win.py:3: def f():",
    ]
    windows = _output(runtime, {"query": "return 1\r\ndef"})
    assert windows.splitlines() == ["1 matching line in 1 file:", "win.py:2: return 1"]


def test_a_regex_with_a_line_break_says_why_it_found_nothing(root: Path) -> None:
    (root / "a.py").write_text("one\ntwo\n")
    runtime = Runtime(root, "intent", Settings())
    output = _output(runtime, {"query": r"one\ntwo", "regex": True})
    assert output.startswith("no matches for ")
    assert "a regex is matched one line at a time" in output


@pytest.mark.parametrize("path", [".grinta", ".GRINTA/undo", "sub/.git", "state", "state/undo"])
def test_search_never_looks_in_git_or_grinta_state(root: Path, path: str) -> None:
    runtime = Runtime(root, "intent", Settings())
    runtime.call("create", {"path": "made.py", "content": "value = 1\n"})  # an undo record
    (root / "sub" / ".git").mkdir(parents=True)
    (root / "sub" / ".git" / "config").write_text("url = https://made.py@example.com\n")
    os.symlink(".grinta", root / "state")
    proposal = runtime.propose("search", {"query": "made.py", "path": path})
    # Before: the undo record's manifest ("label": "create made.py") and git's config were
    # searched and shown.
    assert proposal.error is not None and proposal.error.code == PATH_FORBIDDEN
    assert "made.py" not in proposal.error.message
    # The whole workspace's search finds the project's file and nothing of the state.
    assert _output(runtime, {"query": "made.py"}) == "no matches for 'made.py'"


@pytest.mark.parametrize("path", [".grinta", ".grinta/undo", "sub/.git/config", "state", ".GRINTA"])
def test_read_never_looks_in_git_or_grinta_state(root: Path, path: str) -> None:
    """As search: ``read {"path": ".grinta"}`` listed the undo records, and a record's
    manifest or ``sub/.git/config`` (a remote's credentials) read whole, also through a link."""
    runtime = Runtime(root, "intent", Settings())
    runtime.call("create", {"path": "made.py", "content": "value = 1\n"})  # an undo record
    (root / "sub" / ".git").mkdir(parents=True)
    (root / "sub" / ".git" / "config").write_text("url = https://made.py@example.com\n")
    os.symlink(".grinta", root / "state")
    proposal = runtime.propose("read", {"path": path})
    assert proposal.error is not None and proposal.error.code == PATH_FORBIDDEN
    assert "run git" in proposal.error.message
    assert runtime.propose("read", {"path": "made.py"}).error is None


def test_a_notebook_made_large_by_its_outputs_is_still_searched(root: Path) -> None:
    """A notebook with a few images passed search's 2 MB limit on its whole file and was
    skipped ("b2.ipynb (5.0 MB, over the 2.0 MB limit for search)"), though search reads only
    its cells' sources; it is held to the limit of a file to read or edit instead."""
    import nbformat

    notebook = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("plot(needle_series)\n")
    cell.outputs = [
        nbformat.v4.new_output("display_data", data={"image/png": "iVBORw0KGgo" + "A" * 5_000_000})
    ]
    notebook.cells = [cell]
    nbformat.write(notebook, str(root / "b2.ipynb"))
    (root / "big.txt").write_text("needle_series\n" + "x" * 3_000_000)
    output = _output(Runtime(root, "intent", Settings()), {"query": "needle_series"})
    assert output.splitlines()[1].startswith("b2.ipynb::cell:"), output
    assert "big.txt (" in output  # a plain file that large is still skipped, and named


@pytest.mark.parametrize("path", ["*", "**/*.py", "src/*.py", "a[12].py"])
def test_a_pattern_for_a_path_says_paths_are_not_expanded(root: Path, path: str) -> None:
    """search/read took a glob for a file name and answered "'*' does not exist", which sent
    the model guessing; a file whose name holds such a character is still read."""
    runtime = Runtime(root, "intent", Settings())
    for tool, args in (("search", {"query": "x", "path": path}), ("read", {"path": path})):
        proposal = runtime.propose(tool, args)
        assert proposal.error is not None and proposal.error.code == "INVALID_ARGS", tool
        assert "not expanded" in proposal.error.message
    (root / "a[1].py").write_text("x = 1\n")
    assert runtime.propose("read", {"path": "a[1].py"}).error is None
