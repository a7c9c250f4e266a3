"""A cold start's scan for the files holding a name (code/index.py ``_files_holding``).

The scan asks ``grep`` (one process, instead of thousands of system calls that each give
up the interpreter's lock); it must find exactly the files a read here finds, never hang
on what is not a regular file, and hand back to the read here whenever it cannot tell.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from grinta_jupyter.code.index import SymbolIndex, _files_holding

NAME = b"wanted_name"


def _reference(root: Path, paths: list[str], needle: bytes) -> set[str]:
    """What reading each regular file here finds."""
    found = set()
    for path in paths:
        full = root / path
        if full.is_file() and needle in full.read_bytes():
            found.add(path)
    return found


@pytest.fixture
def tree(tmp_path: Path) -> tuple[Path, list[str]]:
    root = tmp_path / "ws"
    root.mkdir()
    files = {
        "plain.py": b"def wanted_name():\n    pass\n",
        "other.py": b"def other():\n    pass\n",
        "with space.py": b"x = wanted_name\n",
        "line\nbreak.py": b"wanted_name = 1\n",
        "-dash.py": b"# wanted_name\n",
        "ünïcode.py": "# wanted_name «»\n".encode(),
        "latin1.py": b"# \xe9\xff wanted_name\n",
        "prefix.py": b"wanted_nam\n",
        "empty.py": b"",
        "deep/a/b/c.py": b"class wanted_name: ...\n",
    }
    for name, data in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(data)
    (root / "link.py").symlink_to(root / "plain.py")
    os.mkfifo(root / "fifo.py")  # never written: a read of it would wait for ever
    (root / "a_dir.py").mkdir()
    names = [*files, "link.py", "fifo.py", "a_dir.py"]
    return root, names


def test_grep_finds_what_a_read_here_finds_and_skips_what_is_no_file(tree):
    root, names = tree
    found = _files_holding(str(root), names, NAME)
    assert found == _reference(root, names, NAME)
    assert found == {
        "plain.py",
        "with space.py",
        "line\nbreak.py",
        "-dash.py",
        "ünïcode.py",
        "latin1.py",
        "deep/a/b/c.py",
        "link.py",
    }


def test_many_files_go_in_batches(tmp_path):
    names = [f"f{i:04}.py" for i in range(1_203)]
    for i, name in enumerate(names):
        (tmp_path / name).write_bytes(b"wanted_name\n" if i % 100 == 7 else b"nothing\n")
    assert _files_holding(str(tmp_path), names, NAME) == {
        n for n in names if int(n[1:5]) % 100 == 7
    }


def test_a_file_gone_since_it_was_listed_hands_the_scan_back(tree):
    root, names = tree
    assert _files_holding(str(root), [*names, "gone.py"], NAME) is None


def test_without_grep_the_scan_is_read_here(tree, monkeypatch):
    root, names = tree
    monkeypatch.setenv("PATH", str(root / "deep"))  # a folder with no grep in it
    assert _files_holding(str(root), names, NAME) is None


@pytest.mark.parametrize("with_grep", [True, False])
def test_a_cold_start_answers_the_same_with_or_without_grep(tmp_path, monkeypatch, with_grep):
    root = tmp_path / "ws"
    (root / "pkg").mkdir(parents=True)
    for i in range(60):
        (root / "pkg" / f"m{i}.py").write_text(f"def f{i}():\n    return {i}\n")
    (root / "pkg" / "target.py").write_text("x = 1\n\n\ndef wanted_name(): ...\n")
    (root / "pkg" / "twice.py").write_text("def wanted_name():\n    pass\n")
    (root / "pkg" / "mentions.py").write_text("# calls wanted_name\n")
    if not with_grep:
        monkeypatch.setenv("PATH", str(root))
    index = SymbolIndex(root)
    try:
        resolution = index.resolve("wanted_name")
        found = sorted(f"{s.path}::{s.qualname}" for s in resolution.matches)
        # Both definitions: a write to the name is refused as ambiguous, never guessed.
        assert found == ["pkg/target.py::wanted_name", "pkg/twice.py::wanted_name"]
        assert index.refresh() == 0  # the background build finished the rest
        assert len(index.paths()) == 63
    finally:
        index.close()
