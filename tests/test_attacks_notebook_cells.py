"""Attacks on notebooks as workspaces: cells without ids, and the JSON's own separators.

Each test names its attack and the bug it found (fixed in runtime/notebook.py or
runtime/notebook_checks.py). Real files in ``tmp_path``, the real ``Runtime``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from grinta_jupyter import Runtime
from tests.conftest import snapshot
from tests.test_notebook_refusals import cell_edit

NB = "nb.ipynb"
BROKEN = "def broken(:\n    pass"  # work in progress, on disk before the session


def plain_cell(source: str, cell_id: str | None = None) -> dict[str, Any]:
    cell: dict[str, Any] = {"cell_type": "code", "execution_count": None}
    if cell_id is not None:
        cell["id"] = cell_id
    cell.update({"metadata": {}, "outputs": [], "source": source})
    return cell


def without_ids(tmp_path: Path, *sources: str) -> Path:
    """An nbformat 4.4 notebook (cells named by position) with these code cells."""
    value = {
        "cells": [plain_cell(s) for s in sources],
        "metadata": {},
        "nbformat": 4,
        "nbformat_minor": 4,
    }
    (tmp_path / NB).write_text(json.dumps(value, indent=1) + "\n", encoding="utf-8")
    return tmp_path


def sources(root: Path) -> list[str]:
    return [cell["source"] for cell in json.loads((root / NB).read_text())["cells"]]


# -- the syntax check in a notebook without ids ----------------------------------------------


def test_an_insert_before_an_already_broken_cell_of_a_notebook_without_ids_is_allowed(
    tmp_path: Path,
) -> None:
    """Attack: insert a valid cell at the start of an nbformat 4.4 notebook whose second
    cell is already broken (work in progress).

    Bug: the check named the written cells by their new positions and the cells before
    by their old ones, so the broken cell, moved from 2 to 3, read as a new cell made
    invalid: SYNTAX_ERROR "the edit makes cell 3 ... invalid Python", nothing written.
    Deleting a cell before it was refused the same way."""
    root = without_ids(tmp_path, "x = 1", BROKEN, "y = 2")
    rt = Runtime(root)
    inserted = cell_edit(rt, f"{NB}::cell:1", "insert_before", new_source="import os")
    assert inserted.error is None, inserted.error
    assert rt.commit(inserted).ok
    assert sources(root) == ["import os", "x = 1", BROKEN, "y = 2"]

    deleted = cell_edit(rt, f"{NB}::cell:1", "delete")
    assert deleted.error is None, deleted.error
    assert rt.commit(deleted).ok
    assert sources(root) == ["x = 1", BROKEN, "y = 2"]


def test_a_cell_made_invalid_in_a_notebook_without_ids_is_still_refused_and_named(
    tmp_path: Path,
) -> None:
    """The fix names cells as staged: an edit that breaks a cell is still refused, with
    that cell named, when an insert or a delete in the same call moved it."""
    root = without_ids(tmp_path, "x = 1", BROKEN, "y = 2")
    rt = Runtime(root)
    before = snapshot(root)
    proposal = rt.propose(
        "edit_symbols",
        {
            "edits": [
                {"symbol": f"{NB}::cell:1", "action": "delete"},
                {"symbol": f"{NB}::cell:3", "action": "replace", "new_source": "y = (2"},
            ]
        },
    )
    assert proposal.error is not None
    assert proposal.error.code == "SYNTAX_ERROR", proposal.error
    assert "cell 3 " in proposal.error.message
    inserted = cell_edit(rt, f"{NB}::cell:2", "insert_after", new_source="import (os")
    assert inserted.error is not None
    assert inserted.error.code == "SYNTAX_ERROR", inserted.error
    assert not rt.commit(inserted).ok
    assert snapshot(root) == before


# -- the separators of a notebook on one line ------------------------------------------------


def test_a_cell_inserted_next_to_the_only_cell_of_a_one_line_notebook_keeps_its_separators(
    tmp_path: Path,
) -> None:
    """Attack: a notebook written on one line by ``json.dumps`` (", " between values)
    with one cell; insert a second.

    Bug: with one cell there is no separator between cells to copy, and "," was used:
    the file read `..."x = 1"},{"cell_type"...` where its writer puts ", "."""
    value = {
        "cells": [plain_cell("x = 1", "a")],
        "metadata": {},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    (tmp_path / NB).write_text(json.dumps(value), encoding="utf-8")
    rt = Runtime(tmp_path)
    proposal = cell_edit(rt, f"{NB}::cell:a", "insert_after", new_source="y = 2")
    assert proposal.error is None, proposal.error
    assert rt.commit(proposal).ok
    after = (tmp_path / NB).read_text(encoding="utf-8")
    new_id = json.loads(after)["cells"][1]["id"]
    value["cells"].append(plain_cell("y = 2", new_id))
    assert after == json.dumps(value)


def test_a_compact_one_line_notebook_with_one_cell_stays_compact(tmp_path: Path) -> None:
    """The same insert in a compact file (no spaces) keeps it compact."""
    value = {
        "cells": [plain_cell("x = 1", "a")],
        "metadata": {},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    compact = {"separators": (",", ":")}
    (tmp_path / NB).write_text(json.dumps(value, **compact) + "\n", encoding="utf-8")
    rt = Runtime(tmp_path)
    proposal = cell_edit(rt, f"{NB}::cell:a", "insert_before", new_source="y = 2")
    assert proposal.error is None, proposal.error
    assert rt.commit(proposal).ok
    after = (tmp_path / NB).read_text(encoding="utf-8")
    new_id = json.loads(after)["cells"][0]["id"]
    value["cells"].insert(0, plain_cell("y = 2", new_id))
    assert after == json.dumps(value, **compact) + "\n"  # type: ignore[arg-type]


# -- a notebook invalid on disk already --------------------------------------------------------


def test_an_edit_of_a_notebook_invalid_on_disk_says_the_file_is_invalid_as_it_is(
    tmp_path: Path,
) -> None:
    """An nbformat 4.5 notebook whose cells have no ids (a tool wrote it so) is invalid as
    it is. Before stop 32 an edit of it was refused with "would not be a valid notebook",
    blaming the edit, which the model then reworded and proposed again."""
    value = {
        "cells": [plain_cell("x = 1"), plain_cell("y = 2")],
        "metadata": {},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    (tmp_path / NB).write_text(json.dumps(value, indent=1) + "\n", encoding="utf-8")
    before = snapshot(tmp_path)
    rt = Runtime(tmp_path)
    proposal = cell_edit(rt, f"{NB}::cell:1", "replace", new_source="x = 10")
    assert not proposal.ok and proposal.error is not None
    assert proposal.error.code == "NOTEBOOK_INVALID"
    message = proposal.error.message
    assert "as it is on disk already" in message and "would not be" not in message
    assert "cell 1 has no valid id" in message and "nothing was written" in message
    assert snapshot(tmp_path) == before


def test_an_edit_that_breaks_a_valid_notebook_still_blames_the_edit(tmp_path: Path) -> None:
    root = without_ids(tmp_path, "x = 1")
    rt = Runtime(root)
    proposal = cell_edit(rt, f"{NB}::cell:1", "replace", new_source="def f(:\n    pass")
    assert not proposal.ok and proposal.error is not None
    assert "as it is on disk already" not in proposal.error.message


def test_a_repeated_id_names_both_cells(tmp_path: Path) -> None:
    value = {
        "cells": [
            plain_cell("a = 1", "same"),
            plain_cell("b = 2", "other"),
            plain_cell("c", "same"),
        ],
        "metadata": {},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    (tmp_path / NB).write_text(json.dumps(value, indent=1) + "\n", encoding="utf-8")
    rt = Runtime(tmp_path)
    proposal = cell_edit(rt, f"{NB}::cell:other", "replace", new_source="b = 3")
    assert not proposal.ok and proposal.error is not None
    assert "(cells 1 and 3)" in proposal.error.message
