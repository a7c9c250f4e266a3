"""Attacks on the symbol index's freshness: every answer matches the files as they are.

Each test names the attack and the bug it found. Real files, a real inotify watch.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from grinta_jupyter import Runtime
from grinta_jupyter.code.index import SymbolIndex
from grinta_jupyter.runtime.workspace import Workspace


@pytest.fixture(autouse=True)
def own_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """This user's cache folder (the store key lives there), fresh for each test."""
    cache = tmp_path_factory.mktemp("cache")
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    return cache


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    """A workspace whose ``build/`` is ignored, holding a file with its own definition."""
    root = tmp_path / "ws"
    (root / "build").mkdir(parents=True)
    (root / ".grinta").mkdir()  # as in any session after the first
    (root / ".gitignore").write_text("build/\n")
    (root / "a.py").write_text("def used():\n    pass\n")
    (root / "build" / "gen.py").write_text("def target():\n    return 1\n")
    return root


def _moved_down(root: Path) -> None:
    (root / "build" / "gen.py").write_text("X = 1\n\n\n\ndef target():\n    return 2\n")


def test_an_ignored_file_outlined_by_path_never_answers_for_the_workspace(ws: Path) -> None:
    # Bug: a path read put an ignored file in the name table, and nothing kept it fresh
    # (events and the stat walk cover listed files): after an outside edit moved the
    # definition, `target` resolved to its old lines.
    idx = SymbolIndex(ws, list_files=Workspace(ws).files)
    assert [s.name for s in idx.symbols()] == ["used"]
    assert [s.start_line for s in idx.outline("build/gen.py")] == [1]
    assert idx.resolve("target").matches == []
    assert idx.search("target") == []
    assert "build/gen.py" not in idx.paths()
    _moved_down(ws)
    assert idx.resolve("target").matches == []
    # Read by path it is still answered, and fresh.
    assert [s.start_line for s in idx.outline("build/gen.py") if s.name == "target"] == [5]
    assert [s.start_line for s in idx.resolve("build/gen.py::target").matches] == [5]
    assert [s.name for s in idx.symbols()] == ["used"]


def test_reading_a_symbol_never_shows_the_lines_an_ignored_file_had(ws: Path) -> None:
    # The same through the tools: an outline read of the ignored file, an outside edit,
    # then `read symbol=target` showed "X = 1" and a blank line as the definition.
    rt = Runtime(ws)
    assert rt.call("read", {"symbol": "used"}).ok
    assert "target" in rt.call("read", {"path": "build/gen.py", "outline": True}).output
    _moved_down(ws)
    found = rt.call("read", {"symbol": "target"})
    assert not found.ok and "X = 1" not in found.output
    read = rt.call("read", {"symbol": "build/gen.py::target"})
    assert read.ok and "def target():" in read.output and "return 2" in read.output


def test_an_ignored_file_read_during_a_cold_build_is_no_partial_answer(ws: Path) -> None:
    # The cold start's partial answers come from files parsed so far: a path read must
    # not add an ignored file to them either.
    idx = SymbolIndex(ws, list_files=Workspace(ws).files)
    assert [s.path for s in idx.resolve("used").matches] == ["a.py"]
    idx.outline("build/gen.py")
    assert idx.resolve("target").matches == []


@pytest.mark.parametrize("other", ["b.py", "sub/b.py", "../outside.py"])
def test_a_write_through_another_hard_link_is_seen(tmp_path: Path, other: str) -> None:
    # Bug: inotify names the file written through, not its other hard links: after an
    # edit through `b.py` (same folder, another folder, outside the workspace), `f`
    # still resolved to a.py's old lines (no event named a.py, so it was not looked at).
    root = tmp_path / "ws"
    (root / "sub").mkdir(parents=True)
    (root / "a.py").write_text("def f():\n    pass\n")
    (root / other).hardlink_to(root / "a.py")
    idx = SymbolIndex(root, list_files=Workspace(root).files)

    def lines_in_a() -> list[int]:
        return [s.start_line for s in idx.resolve("f").matches if s.path == "a.py"]

    assert lines_in_a() == [1]
    assert idx.watching
    with open(root / other, "r+") as handle:  # in place: the inode both names share
        handle.write("\n\n\ndef f():\n    pass\n")
    assert lines_in_a() == [4]
