"""Attacks on notebooks as workspaces, fourth pass: line numbers that agree across tools.

Each test names its attack and the bug it found (fixed in tools/cells.py). Real
files in ``tmp_path``, the real ``Runtime``.
"""

from __future__ import annotations

import json
from pathlib import Path

from grinta_jupyter import Runtime
from grinta_jupyter.runtime.errors import INVALID_ARGS
from tests.test_notebooks import NB


def _notebook_with_newline_ended_cell(root: Path) -> None:
    cell = {
        "cell_type": "code",
        "execution_count": None,
        "id": "aa",
        "metadata": {},
        "outputs": [],
        # As Jupyter saves a cell whose last line was ended with Enter.
        "source": ["x = 1\n", "y = 2\n"],
    }
    text = json.dumps(
        {"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}, indent=1
    )
    (root / NB).write_text(text + "\n")


def test_reading_a_cell_ending_in_a_newline_numbers_its_lines_as_search_does(
    tmp_path: Path,
) -> None:
    """Attack: a cell saved as ``["x = 1\\n", "y = 2\\n"]``; search it, then read it by
    its address.

    Bug: search said the cell has two lines (a final newline starts no line), and the
    notebook's read showed two, but a read of the cell alone said ``lines 1-3 of 3``
    with an empty third row, a line no search hit or edit could ever name."""
    _notebook_with_newline_ended_cell(tmp_path)
    rt = Runtime(tmp_path)
    found = rt.propose("search", {"query": "y = 2", "path": NB})
    assert found.error is None, found.error
    assert f"{NB}::cell:aa:2: y = 2" in (found.output or "")

    read = rt.propose("read", {"symbol": f"{NB}::cell:aa"})
    assert read.error is None, read.error
    output = read.output or ""
    assert "(lines 1-2 of 2)" in output, output
    assert output.endswith("     2\ty = 2"), output

    whole = rt.propose("read", {"path": NB})
    assert whole.error is None, whole.error
    assert (whole.output or "").endswith("     2\ty = 2")


def test_reading_a_cell_past_its_last_line_is_refused_not_an_empty_row(tmp_path: Path) -> None:
    """Attack: read the same cell from ``start_line=3``, the line the old count invented.

    Bug: the read answered ``lines 3-3 of 3`` and an empty row instead of saying the
    cell has two lines."""
    _notebook_with_newline_ended_cell(tmp_path)
    rt = Runtime(tmp_path)
    read = rt.propose("read", {"symbol": f"{NB}::cell:aa", "start_line": 3})
    assert read.error is not None
    assert read.error.code == INVALID_ARGS
    assert "(2 lines)" in read.error.message


def test_a_string_across_a_cell_header_is_refused_as_such_not_as_a_near_miss(
    tmp_path: Path,
) -> None:
    """Attack: ``replace_string`` whose ``old_string`` holds a cell header line, as the
    model copies it from a diff (``#%% cell bb (code)\\nt = 1``).

    Bug: the refusal offered the header itself as a near miss "where whitespace
    differs", located at line 3 of ``nb.ipynb`` (a line of the cell view, which in
    the file on disk is JSON), inviting a retry that can never match."""
    _notebook_with_newline_ended_cell(tmp_path)
    data = json.loads((tmp_path / NB).read_text())
    data["cells"].append({**data["cells"][0], "id": "bb", "source": "t = 1"})
    (tmp_path / NB).write_text(json.dumps(data, indent=1) + "\n")
    before = (tmp_path / NB).read_bytes()
    rt = Runtime(tmp_path)
    proposal = rt.propose(
        "replace_string",
        {"path": NB, "old_string": "#%% cell bb (code)\nt = 1", "new_string": "t = 2"},
    )
    assert proposal.error is not None
    assert "header" in proposal.error.message, proposal.error.message
    assert all("::cell:" in c.path for c in proposal.error.candidates), proposal.error
    assert (tmp_path / NB).read_bytes() == before
