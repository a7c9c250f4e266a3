"""Notebook writes over time: hunk selection, undo, a stale commit, an open document.

Accepting some hunks of a notebook change commits only those cells; undo
restores the file byte for byte; a notebook saved by someone else since the
proposal was staged refuses the commit (STALE_FILE), as does one open with
unsaved changes (DOCUMENT_UNSAVED). Helpers: tests/test_notebooks.py.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from grinta_jupyter import Runtime
from tests.test_notebooks import (
    NB,
    analysis_workspace,
    assert_edited_only,
    cells_of,
    committed,
    nb_code,
    nb_markdown,
    nb_notebook,
    nb_read,
    nb_write,
    new_ids,
    source_of,
    strictly_valid,
    without,
)

# -- hunks, undo, stale ---------------------------------------------------------------------


@pytest.fixture
def nb_ws(tmp_path: Path) -> Path:
    return analysis_workspace(tmp_path)


@pytest.fixture
def nb_rt(nb_ws: Path) -> Runtime:
    return Runtime(nb_ws)


def long_cells_notebook(root: Path) -> None:
    """Two long code cells, so an edit at the end of each is its own hunk."""
    body = "".join(f"v{i} = {i}\n" for i in range(10))
    nb = nb_notebook(
        cells=[
            nb_code(body + "first = 1\n", id="one", execution_count=1),
            nb_markdown("between", id="mid"),
            nb_code(body + "second = 2\n", id="two", execution_count=2),
        ]
    )
    nb_write(nb, root / NB)


@pytest.mark.parametrize(("accepted", "edited"), [([0], "one"), ([1], "two")])
def test_accepting_some_hunks_of_a_notebook_change(
    tmp_path: Path, accepted: list[int], edited: str
) -> None:
    long_cells_notebook(tmp_path)
    before = (tmp_path / NB).read_text()
    rt = Runtime(tmp_path)
    proposal = rt.propose(
        "multiedit",
        {
            "edits": [
                {"path": NB, "old_string": "first = 1", "new_string": "first = 10"},
                {"path": NB, "old_string": "second = 2", "new_string": "second = 20"},
            ]
        },
    )
    assert proposal.ok, proposal.error
    assert proposal.diff.count("\n@@ ") + proposal.diff.startswith("@@") == 2
    chosen = rt.select_hunks(proposal, accepted)
    committed(rt, chosen)
    after = (tmp_path / NB).read_text()
    assert_edited_only(before, after, [edited])
    sources = {c["id"]: source_of(c) for c in cells_of(tmp_path / NB)}
    assert ("first = 10" in sources["one"]) == (edited == "one")
    assert ("second = 20" in sources["two"]) == (edited == "two")
    assert strictly_valid(tmp_path / NB)


def test_accepting_the_hunk_of_an_inserted_cell_only(tmp_path: Path) -> None:
    long_cells_notebook(tmp_path)
    before = (tmp_path / NB).read_text()
    rt = Runtime(tmp_path)
    proposal = rt.propose(
        "edit_symbols",
        {
            "edits": [
                {"symbol": f"{NB}::cell:one", "action": "insert_before", "new_source": "a = 1"},
                {"symbol": f"{NB}::cell:two", "action": "insert_after", "new_source": "b = 2"},
            ]
        },
    )
    committed(rt, rt.select_hunks(proposal, [1]))
    after = (tmp_path / NB).read_text()
    (fresh,) = new_ids(before, after)
    assert without(after, [fresh]) == before
    assert source_of(cells_of(tmp_path / NB)[-1]) == "b = 2"


def test_undo_restores_the_notebook_byte_for_byte(nb_ws: Path, nb_rt: Runtime) -> None:
    original = (nb_ws / NB).read_bytes()
    steps: list[tuple[str, dict[str, Any]]] = [
        ("replace_string", {"path": NB, "old_string": "frame.head()", "new_string": "frame"}),
        ("edit_symbols", {"edits": [{"symbol": f"{NB}::cell:intro", "action": "delete"}]}),
        (
            "edit_symbols",
            {
                "edits": [
                    {
                        "symbol": f"{NB}::cell:load",
                        "action": "insert_after",
                        "new_source": "%time x = 1",
                        "cell_type": "code",
                    }
                ]
            },
        ),
    ]
    versions = [original]
    for tool, args in steps:
        committed(nb_rt, nb_rt.propose(tool, args))
        versions.append((nb_ws / NB).read_bytes())
    for version in reversed(versions[:-1]):
        assert nb_rt.undo().ok
        assert (nb_ws / NB).read_bytes() == version


def test_commit_is_stale_when_the_notebook_changed_on_disk(nb_ws: Path, nb_rt: Runtime) -> None:
    proposal = nb_rt.propose(
        "replace_string", {"path": NB, "old_string": "frame.head()", "new_string": "frame"}
    )
    assert proposal.ok
    # The user saves the notebook in JupyterLab meanwhile (nbformat writes it again).
    saved = nb_read(nb_ws / NB)
    saved.cells[0].source = "# Sales (edited by hand)"
    nb_write(saved, nb_ws / NB)
    theirs = (nb_ws / NB).read_bytes()
    observation = nb_rt.commit(proposal)
    assert observation.error is not None and observation.error.code == "STALE_FILE"
    assert (nb_ws / NB).read_bytes() == theirs


class OpenInLab:
    """Open documents as a front end reports them (runtime/documents.py's protocol)."""

    def __init__(self, unsaved: Sequence[str]) -> None:
        self.dirty = list(unsaved)
        self.reloaded: list[str] = []

    def unsaved(self, paths: Sequence[str]) -> list[str]:
        return [p for p in paths if p in self.dirty]

    def changed(self, paths: Sequence[str]) -> None:
        self.reloaded.extend(paths)


def test_an_open_notebook_with_unsaved_changes_refuses_the_commit(nb_ws: Path) -> None:
    lab = OpenInLab([NB])
    rt = Runtime(nb_ws, documents=lab)
    before = (nb_ws / NB).read_bytes()
    proposal = rt.propose(
        "replace_string", {"path": NB, "old_string": "frame.head()", "new_string": "frame"}
    )
    observation = rt.commit(proposal)
    assert observation.error is not None and observation.error.code == "DOCUMENT_UNSAVED"
    assert (nb_ws / NB).read_bytes() == before
    lab.dirty.clear()  # saved: the same proposal now commits, and the editor is told
    assert rt.commit(proposal).ok
    assert lab.reloaded == [NB]


def test_accepting_some_hunks_never_touches_a_cell_the_proposal_left_alone(
    tmp_path: Path,
) -> None:
    body = "".join(f"v{i} = {i}\n" for i in range(10))
    nb_write(
        nb_notebook(cells=[nb_code(body, id="one"), nb_code("m = 1", id="two")]), tmp_path / NB
    )
    rt = Runtime(tmp_path)
    proposal = rt.propose(
        "edit_symbols",
        {
            "edits": [
                {"symbol": f"{NB}::cell:one", "action": "delete"},
                {"symbol": f"{NB}::cell:two", "action": "insert_after", "new_source": body},
            ]
        },
    )
    assert proposal.ok, proposal.error
    for accepted in ([0], [1]):
        chosen = rt.select_hunks(proposal, accepted)
        if chosen.ok:
            committed(rt, chosen)
            cells = {c["id"]: source_of(c) for c in cells_of(tmp_path / NB)}
            assert cells.get("two") == "m = 1", accepted  # never deleted by the proposal
            assert rt.undo().ok
