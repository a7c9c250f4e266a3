"""Attacks on editing notebooks cell by cell, sixth pass.

Each test names its attack and the bug it found (fixed in tools/cells.py). Real files in
``tmp_path``, the real ``Runtime``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from grinta_jupyter import Runtime
from tests.conftest import snapshot
from tests.test_notebook_refusals import cell_edit

NB = "nb.ipynb"


def code_cell(cell_id: str, source: str | list[str], count: int | None = None) -> dict[str, Any]:
    return {
        "cell_type": "code",
        "execution_count": count,
        "id": cell_id,
        "metadata": {},
        "outputs": [],
        "source": source,
    }


def workspace(tmp_path: Path, *cells: dict[str, Any]) -> Path:
    value = {"cells": list(cells), "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    (tmp_path / NB).write_text(json.dumps(value, indent=1) + "\n", encoding="utf-8")
    return tmp_path


def sources(root: Path) -> list[str]:
    cells = json.loads((root / NB).read_text(encoding="utf-8"))["cells"]
    return ["".join(c["source"]) if isinstance(c["source"], list) else c["source"] for c in cells]


def test_replacing_a_crlf_cell_keeps_its_line_ends_and_shows_only_the_changed_line(
    tmp_path: Path,
) -> None:
    """Attack: ``edit_symbols`` replace of a cell saved with CRLF line ends (Windows), the
    new source sent as the model reads it, in LF, one line changed.

    Bug: the cell was written in LF, and the diff showed every line of the cell removed and
    added again, lines that look the same to the reviewer (their only change an invisible
    ``\\r``); a ``replace_string`` of the same line kept the CRLF and showed one line."""
    crlf = ["import os\r\n", "x = 1\r\n", "y = 2"]
    root = workspace(tmp_path, code_cell("a", crlf), code_cell("b", "z = 1"))
    rt = Runtime(root)
    proposal = cell_edit(rt, f"{NB}::cell:a", "replace", new_source="import os\nx = 1\ny = 3\n")
    assert proposal.ok, proposal.error
    changed = [r for r in proposal.diff.splitlines() if r[:1] in "+-" and r[:3] not in "+++---"]
    assert changed == ["-y = 2", "+y = 3"], proposal.diff
    assert rt.commit(proposal).ok
    assert sources(root) == ["import os\r\nx = 1\r\ny = 3", "z = 1"]


def test_a_replaced_lf_cell_stays_lf(tmp_path: Path) -> None:
    """Guard (passes before and after the fix): a cell in LF, replaced from a model's
    CRLF text, is written in LF, as before."""
    root = workspace(tmp_path, code_cell("a", ["x = 1\n", "y = 2"]))
    rt = Runtime(root)
    proposal = cell_edit(rt, f"{NB}::cell:a", "replace", new_source="x = 1\r\ny = 3\r\n")
    assert rt.commit(proposal).ok
    assert sources(root) == ["x = 1\ny = 3"]


def test_a_last_line_sent_with_its_line_break_is_refused_naming_the_cell_end(
    tmp_path: Path,
) -> None:
    """Attack: ``replace_string`` of a cell's last line sent with its line break
    (``old_string="x = 1\\n"``, as a line is copied from a read), in a cell saved without a
    final newline, as Jupyter saves every cell.

    Bug: the refusal said the text was found "only across a cell's end and the next
    header", which is not what happened (the model sent no header), with no cell named;
    the model, told to use ``edit_symbols``, replaced the whole cell. Now it says the cell
    has no final line break and names the cell and line; nothing is written."""
    root = workspace(tmp_path, code_cell("a", "import os\nx = 1"), code_cell("b", "y = 2"))
    before = snapshot(root)
    rt = Runtime(root)
    for old, cell, line in (
        ("x = 1\n", "a", 2),
        ("import os\nx = 1\n", "a", 1),
        ("y = 2\n", "b", 1),
    ):
        proposal = rt.propose(
            "replace_string",
            {"path": NB, "old_string": old, "new_string": "z = 9\n" + old},
        )
        assert proposal.error is not None
        assert proposal.error.code.value == "NOT_FOUND"
        assert "no final line break" in proposal.error.message, proposal.error.message
        assert "header" not in proposal.error.message
        (candidate,) = proposal.error.candidates
        assert (candidate.path, candidate.line) == (f"{NB}::cell:{cell}", line)
    assert snapshot(root) == before


def test_a_string_really_across_a_cell_header_is_still_refused_as_such(tmp_path: Path) -> None:
    """Guard (passes before and after the fix): a string copied across a header keeps the
    refusal that says so."""
    root = workspace(tmp_path, code_cell("a", "x = 1"), code_cell("b", "y = 2"))
    rt = Runtime(root)
    proposal = rt.propose(
        "replace_string",
        {"path": NB, "old_string": "x = 1\n#%% cell b (code)\ny = 2", "new_string": ""},
    )
    assert proposal.error is not None and "header" in proposal.error.message


def test_an_id_that_differs_only_in_case_is_refused_offering_that_cell(tmp_path: Path) -> None:
    """Attack: ``cell:TARGET`` (and the prefix ``cell:targ``) for the cell whose id is
    ``Target``, in a notebook of eight cells.

    Bug: ids are case-sensitive, so the write was refused (rightly), but the candidates
    were the closest ids by a similarity ratio, which on short ids never counted a letter
    of another case: the first five cells were offered, not ``Target``, and the model was
    left to read the whole notebook. Now the cell is offered and the refusal says ids are
    case-sensitive; nothing is written."""
    cells = [code_cell(f"c{n}", f"x{n} = {n}") for n in range(1, 8)]
    root = workspace(tmp_path, *cells, code_cell("Target", "t = 1"))
    before = snapshot(root)
    rt = Runtime(root)
    for address in ("cell:TARGET", "cell:targ"):
        proposal = cell_edit(rt, f"{NB}::{address}", "delete")
        assert proposal.error is not None
        assert proposal.error.code.value == "SYMBOL_NOT_FOUND"
        assert "case-sensitive" in proposal.error.message, proposal.error.message
        assert [c.path for c in proposal.error.candidates] == [f"{NB}::cell:Target"]
    assert snapshot(root) == before


def test_two_cells_inserted_in_a_notebook_without_ids_can_each_be_named(tmp_path: Path) -> None:
    """Attack: in an nbformat 4.4 notebook (no ids), insert two cells and then, in the same
    call, replace the second one inserted.

    Bug: every inserted cell was named ``cell:new`` until written, so the third edit was
    refused as ambiguous, its two candidates the same address ``cell:new``: no name could
    ever pick either. Now each has its own (``new``, ``new-2``), said in the summary."""
    value = {
        "cells": [{k: v for k, v in code_cell("x", "x = 1").items() if k != "id"}],
        "metadata": {},
        "nbformat": 4,
        "nbformat_minor": 4,
    }
    (tmp_path / NB).write_text(json.dumps(value, indent=1) + "\n", encoding="utf-8")
    rt = Runtime(tmp_path)
    edits = [
        {"symbol": f"{NB}::cell:", "action": "insert_before", "new_source": "a = 0"},
        {"symbol": f"{NB}::cell:", "action": "insert_after", "new_source": "b = 0"},
        {"symbol": f"{NB}::cell:new-2", "action": "replace", "new_source": "c = 0"},
    ]
    proposal = rt.propose("edit_symbols", {"edits": edits})
    assert proposal.ok, proposal.error
    assert "(cell:new-2 until written)" in proposal.summary, proposal.summary
    assert rt.commit(proposal).ok
    assert sources(tmp_path) == ["a = 0", "x = 1", "c = 0"]
