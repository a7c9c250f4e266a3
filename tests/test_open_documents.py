"""The runtime asks its open documents before a write and tells them after (runtime/documents.py).

The front-end side (a comm to the labextension) is tested in a real browser
(tests/browser/test_documents.py); here a small in-process implementation of the
protocol stands in for an editor, as a real one would answer.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import nbformat

from grinta_jupyter import Runtime


class Editor:
    """Documents open in an editor: some with unsaved changes; records what it was told."""

    def __init__(self, dirty: Sequence[str] = ()) -> None:
        self.dirty = set(dirty)
        self.asked: list[list[str]] = []
        self.reloaded: list[list[str]] = []

    def unsaved(self, paths: Sequence[str]) -> list[str]:
        self.asked.append(list(paths))
        return [p for p in paths if p in self.dirty]

    def changed(self, paths: Sequence[str]) -> None:
        self.reloaded.append(list(paths))


class BrokenEditor(Editor):
    def unsaved(self, paths: Sequence[str]) -> list[str]:
        raise ConnectionError("the front end went away")

    def changed(self, paths: Sequence[str]) -> None:
        raise ConnectionError("the front end went away")


def _notebook(path: Path) -> bytes:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("total = 1 + 1", execution_count=1)]
    nbformat.write(nb, path)
    return path.read_bytes()


def test_a_dirty_document_refuses_the_whole_commit_and_writes_nothing(tmp_path: Path) -> None:
    before = _notebook(tmp_path / "nb.ipynb")
    (tmp_path / "a.py").write_text("x = 1\n")
    editor = Editor(dirty=["nb.ipynb"])
    rt = Runtime(tmp_path, documents=editor)
    p = rt.propose(
        "multiedit",
        {
            "edits": [
                {"path": "a.py", "old_string": "x = 1", "new_string": "x = 2"},
                {"path": "nb.ipynb", "old_string": "1 + 1", "new_string": "2 + 2"},
            ]
        },
    )
    assert p.ok, p.error
    obs = rt.commit(p)
    assert not obs.ok and obs.error is not None and obs.error.code == "DOCUMENT_UNSAVED"
    assert "nb.ipynb" in obs.error.message and "save or revert" in obs.error.message
    assert (tmp_path / "nb.ipynb").read_bytes() == before
    assert (tmp_path / "a.py").read_text() == "x = 1\n"
    assert editor.reloaded == []

    editor.dirty.clear()  # the user saved: the same proposal now commits
    obs = rt.commit(p)
    assert obs.ok, obs.error
    assert editor.reloaded == [["a.py", "nb.ipynb"]]
    assert "2 + 2" in nbformat.read(tmp_path / "nb.ipynb", 4).cells[0].source


def test_undo_tells_the_documents_too(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("x = 1\n")
    editor = Editor()
    rt = Runtime(tmp_path, documents=editor)
    assert rt.call("replace_string", {"path": "a.py", "old_string": "1", "new_string": "2"}).ok
    assert rt.undo().ok
    assert editor.reloaded == [["a.py"], ["a.py"]]


def test_reads_and_commands_do_not_ask(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("x = 1\n")
    editor = Editor(dirty=["a.py"])
    rt = Runtime(tmp_path, documents=editor)
    assert rt.call("read", {"path": "a.py"}).ok
    assert rt.call("run", {"command": "true"}).ok
    assert editor.asked == [] and editor.reloaded == []


def test_when_asking_fails_the_write_is_refused(tmp_path: Path) -> None:
    """Nobody knows whether the file is open with unsaved changes: the write could lose them."""
    (tmp_path / "a.py").write_text("x = 1\n")
    rt = Runtime(tmp_path, documents=BrokenEditor())
    obs = rt.call("replace_string", {"path": "a.py", "old_string": "1", "new_string": "2"})
    assert not obs.ok and obs.error is not None and obs.error.code == "DOCUMENT_UNSAVED"
    assert "could not learn" in obs.error.message and "nothing was written" in obs.error.message
    assert (tmp_path / "a.py").read_text() == "x = 1\n"


def test_a_failed_reload_never_fails_a_commit(tmp_path: Path) -> None:
    class ReloadFails(Editor):
        def changed(self, paths: Sequence[str]) -> None:
            raise ConnectionError("the front end went away")

    (tmp_path / "a.py").write_text("x = 1\n")
    rt = Runtime(tmp_path, documents=ReloadFails())
    obs = rt.call("replace_string", {"path": "a.py", "old_string": "1", "new_string": "2"})
    assert obs.ok, obs.error
    assert (tmp_path / "a.py").read_text() == "x = 2\n"


def test_undo_over_unsaved_changes_is_refused_too(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("x = 1\n")
    editor = Editor()
    rt = Runtime(tmp_path, documents=editor)
    assert rt.call("replace_string", {"path": "a.py", "old_string": "1", "new_string": "2"}).ok
    editor.dirty.add("a.py")
    obs = rt.undo()
    assert not obs.ok and obs.error is not None and obs.error.code == "DOCUMENT_UNSAVED"
    assert (tmp_path / "a.py").read_text() == "x = 2\n"
    editor.dirty.clear()
    assert rt.undo().ok and (tmp_path / "a.py").read_text() == "x = 1\n"
